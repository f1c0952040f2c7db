/**
 * Tiered margin against its definition: margin(n) = ceil(n x rate_k / 1e18) - deduction_k in the
 * tier k that holds n, for the configured schedules and for odd leverages whose rates do not
 * divide 1e18 evenly; and continuity at every tier boundary.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { fx, ONE } from '../money.ts';
import { MarginSchedule } from './margin-tiers.ts';
import type { MarginTier } from '../markets.ts';

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/** The schedule's formula written out directly from its tiers. */
function reference(tiers: readonly MarginTier[], notional: bigint, kind: 'im' | 'mm'): bigint {
  if (notional <= 0n) return 0n;
  let deduction = 0n;
  let prevRate: bigint | null = null;
  let prevBound: bigint | null = null;
  for (const t of tiers) {
    const rate = ceilDiv(ONE, BigInt(kind === 'im' ? t.maxLeverage : 2 * t.maxLeverage));
    if (prevRate !== null) deduction += (prevBound! * (rate - prevRate)) / ONE;
    if (t.upToNotional === null || notional <= t.upToNotional) return ceilDiv(notional * rate, ONE) - deduction;
    prevRate = rate;
    prevBound = t.upToNotional;
  }
  throw new Error('unreachable: the last tier is unbounded');
}

const schedules: MarginTier[][] = [
  [
    { upToNotional: fx('2000000'), maxLeverage: 50 },
    { upToNotional: fx('10000000'), maxLeverage: 20 },
    { upToNotional: fx('50000000'), maxLeverage: 10 },
    { upToNotional: null, maxLeverage: 5 },
  ],
  [
    { upToNotional: fx('1000.5'), maxLeverage: 7 },
    { upToNotional: fx('99999.999999'), maxLeverage: 3 },
    { upToNotional: null, maxLeverage: 1 },
  ],
];

test('initial and maintenance margin equal the tier formula for any notional', () => {
  for (const tiers of schedules) {
    const schedule = new MarginSchedule(tiers);
    fc.assert(
      fc.property(fc.bigInt({ min: -10n, max: 10n ** 27n }), (notional) => {
        assert.equal(schedule.initial(notional), reference(tiers, notional, 'im'));
        assert.equal(schedule.maintenance(notional), reference(tiers, notional, 'mm'));
      }),
      { numRuns: 3000 },
    );
  }
});

test('margin is continuous at each tier bound (within one unit of rounding)', () => {
  for (const tiers of schedules) {
    const schedule = new MarginSchedule(tiers);
    for (const t of tiers) {
      if (t.upToNotional === null) continue;
      const below = schedule.initial(t.upToNotional);
      const above = schedule.initial(t.upToNotional + 1n);
      assert.ok(above >= below && above - below <= 2n, `jump at ${t.upToNotional}: ${below} -> ${above}`);
    }
  }
});
