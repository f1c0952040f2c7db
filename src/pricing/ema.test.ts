/**
 * Tests for ema.ts: initialisation, an exact step response computed by hand, a large gap resetting
 * to the sample, ignored non-advancing timestamps, convergence under a constant input, and a
 * fast-check property that the value stays within the range of the samples (no overshoot).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fx, fromInt } from '../core/money.ts';
import { emaUpdate, emptyEma } from './ema.ts';
import type { EmaState } from './ema.ts';

describe('emaUpdate', () => {
  test('the first sample initialises', () => {
    assert.deepEqual(emaUpdate(emptyEma(), fx('5'), 1_000, 30_000), { value: fx('5'), ts: 1_000 });
  });

  test('step response: alpha = Δt/τ, exact', () => {
    let s: EmaState = emaUpdate(emptyEma(), fx('0'), 0, 4_000);
    const seen: bigint[] = [];
    for (let k = 1; k <= 4; k++) {
      s = emaUpdate(s, fx('100'), k * 1_000, 4_000);
      seen.push(s.value!);
    }
    // gap shrinks by 3/4 each step: 25, 43.75, 57.8125, 68.359375
    assert.deepEqual(seen, [fx('25'), fx('43.75'), fx('57.8125'), fx('68.359375')]);
    assert.equal(s.ts, 4_000);
  });

  test('rounds half up at 18 digits', () => {
    const s = emaUpdate({ value: 0n, ts: 0 }, 1n, 1, 2); // 0.5 unit → 1 unit
    assert.equal(s.value, 1n);
    const n = emaUpdate({ value: 0n, ts: 0 }, -1n, 1, 2); // ties away from zero
    assert.equal(n.value, -1n);
    const third = emaUpdate({ value: 0n, ts: 0 }, fx('1'), 1, 3);
    assert.equal(third.value, fx('0.333333333333333333'));
  });

  test('a gap of τ or more resets to the sample', () => {
    const s = emaUpdate({ value: fx('10'), ts: 0 }, fx('20'), 30_000, 30_000);
    assert.deepEqual(s, { value: fx('20'), ts: 30_000 });
  });

  test('timestamps that do not advance change nothing', () => {
    const s = { value: fx('10'), ts: 5_000 };
    assert.deepEqual(emaUpdate(s, fx('99'), 5_000, 1_000), s);
    assert.deepEqual(emaUpdate(s, fx('99'), 4_000, 1_000), s);
    assert.notEqual(emaUpdate(s, fx('99'), 4_000, 1_000), s); // a new object
  });

  test('converges to a constant input (150 s τ, 1 s samples)', () => {
    let s: EmaState = { value: fromInt(60_000), ts: 0 };
    for (let t = 1; t <= 3_600; t++) s = emaUpdate(s, fromInt(61_000), t * 1_000, 150_000);
    // continuous gap would be 1000·e^(−24) ≈ 4e-8; discrete (149/150)^3600 is smaller still
    const gap = fromInt(61_000) - s.value!;
    assert.ok(gap >= 0n && gap < fx('0.0000001'), `gap ${gap}`);
  });

  test('rejects a non-positive τ', () => {
    assert.throws(() => emaUpdate(emptyEma(), 1n, 1, 0), RangeError);
  });

  test('property: the value stays within the range of the samples', () => {
    const value = fc.bigInt({ min: -(10n ** 24n), max: 10n ** 24n });
    const sample = fc.tuple(value, fc.integer({ min: 0, max: 5_000 }));
    const samples = fc.array(sample, { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(samples, fc.integer({ min: 1, max: 10_000 }), (xs, tau) => {
        let s = emptyEma();
        let t = 0;
        let lo = xs[0]![0];
        let hi = lo;
        for (const [x, dt] of xs) {
          t += dt;
          const before = s.ts;
          s = emaUpdate(s, x, t, tau);
          if (s.ts !== before || lo === x) {
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
          }
          assert.ok(s.value! >= lo && s.value! <= hi);
        }
      }),
    );
  });
});
