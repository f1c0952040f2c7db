/**
 * Tests of the fee schedule and the rolling 30-day volume: tier selection, fee rounding toward the
 * venue, and the O(1) cached window against a naive re-summation on random trading histories.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fx } from '../money.ts';
import { FeeSchedule, VolumeTracker } from './fees.ts';

const DAY = 86_400_000;

describe('VolumeTracker', () => {
  test('counts the current day and the 29 before it, nothing older', () => {
    const v = new VolumeTracker();
    const t0 = 100 * DAY;
    v.record(1, fx('10'), t0);
    v.record(1, fx('5'), t0 + 29 * DAY);
    assert.equal(v.volume30d(1, t0 + 29 * DAY), fx('15'));
    assert.equal(v.volume30d(1, t0 + 30 * DAY), fx('5'), 'the first day left the window');
    assert.equal(v.volume30d(2, t0), 0n, 'an account that never traded has no volume');
  });

  test('a fill recorded after a read on the same day is seen at once', () => {
    const v = new VolumeTracker();
    v.record(1, fx('1'), 5 * DAY);
    assert.equal(v.volume30d(1, 6 * DAY), fx('1'));
    v.record(1, fx('2'), 6 * DAY + 1);
    assert.equal(v.volume30d(1, 6 * DAY + 2), fx('3'));
  });

  test('equals a naive sum over the window on random histories (time moves forward)', () => {
    const step = fc.record({
      account: fc.integer({ min: 1, max: 3 }),
      advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: DAY }), fc.integer({ min: 0, max: 40 * DAY })),
      notional: fc.bigInt({ min: 0n, max: 10n ** 24n }),
      read: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const v = new VolumeTracker();
        const history: { account: number; day: number; notional: bigint }[] = [];
        let now = 0;
        for (const s of steps) {
          now += s.advanceMs;
          if (s.read) {
            const today = Math.floor(now / DAY);
            const naive = history
              .filter((h) => h.account === s.account && h.day > today - 30)
              .reduce((a, h) => a + h.notional, 0n);
            assert.equal(v.volume30d(s.account, now), naive);
          } else {
            v.record(s.account, s.notional, now);
            history.push({ account: s.account, day: Math.floor(now / DAY), notional: s.notional });
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('FeeSchedule', () => {
  const schedule = new FeeSchedule(
    [
      { min30dVolumeUsd: 0n, makerBps: fx('2'), takerBps: fx('5') },
      { min30dVolumeUsd: fx('1000000'), makerBps: fx('-0.5'), takerBps: fx('4') },
    ],
    6,
  );

  test('picks the highest tier the volume reaches', () => {
    assert.equal(schedule.rateFor(fx('999999.999999'), 'taker'), fx('5'));
    assert.equal(schedule.rateFor(fx('1000000'), 'taker'), fx('4'));
    assert.equal(schedule.rateFor(fx('1000000'), 'maker'), fx('-0.5'));
  });

  test('a fee rounds up to the settlement unit, a rebate rounds toward zero', () => {
    // 0.1 USDC notional at 5 bps = 0.00005 USDC: charged as 0.000050; at 3 bps 0.00003 exactly
    assert.equal(schedule.fee(fx('0.1'), fx('5')), fx('0.00005'));
    // 0.0001 USDC at 5 bps = 0.00000005: rounds up to one unit
    assert.equal(schedule.fee(fx('0.0001'), fx('5')), fx('0.000001'));
    // rebate of 0.5 bps on 0.0001: -0.000000005 rounds toward zero (the venue keeps the fraction)
    assert.equal(schedule.fee(fx('0.0001'), fx('-0.5')), 0n);
    assert.equal(schedule.fee(fx('100'), fx('-0.5')), fx('-0.005'));
  });

  test('equals ceil(notional x bps / 1e4) at the settlement unit for any notional and rate, tier or not', () => {
    const unit = 10n ** 12n;
    const reference = (notional: bigint, bps: bigint) => {
      const exact = notional * bps; // in 1e36 x bps units
      const d = 10_000n * 10n ** 18n * unit;
      const q = exact / d;
      return (exact % d !== 0n && exact > 0n ? q + 1n : q) * unit;
    };
    const rates = [fx('2'), fx('5'), fx('-0.5'), fx('4')];
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
        fc.oneof(fc.constantFrom(...rates), fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n })),
        (notional, bps) => {
          assert.equal(schedule.fee(notional, bps), reference(notional, bps));
        },
      ),
      { numRuns: 5000 },
    );
  });
});
