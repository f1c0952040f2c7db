/**
 * Tests for twap.ts against hand computations: a step function over a window, samples before the
 * window, a first sample inside the window, the last sample holding to the end, floor rounding,
 * same-timestamp replacement, ordering errors, pruning, the hard sample cap, and gaps (a stale
 * index holds no price across an outage).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { fx } from '../core/money.ts';
import { TwapAccumulator } from './twap.ts';

function filled(samples: [number, string][], max?: number): TwapAccumulator {
  const t = new TwapAccumulator(max);
  for (const [ts, p] of samples) t.add(ts, fx(p));
  return t;
}

describe('TwapAccumulator', () => {
  const t = filled([
    [0, '100'],
    [10, '110'],
    [30, '90'],
  ]);

  test('step function over a window, by hand', () => {
    // [0,40]: 100·10 + 110·20 + 90·10 = 4100 over 40 → 102.5
    assert.equal(t.average(0, 40), fx('102.5'));
    // [5,35]: 100·5 + 110·20 + 90·5 = 3150 over 30 → 105
    assert.equal(t.average(5, 35), fx('105'));
    // [30,100]: the last sample holds → 90
    assert.equal(t.average(30, 100), fx('90'));
  });

  test('samples before `from` count from `from`; a late first sample covers only its part', () => {
    assert.equal(t.average(12, 20), fx('110'));
    // [-10, 20]: covered part [0, 20]: 100·10 + 110·10 over 20 → 105
    assert.equal(t.average(-10, 20), fx('105'));
    assert.equal(t.average(-10, -1), null);
    assert.equal(new TwapAccumulator().average(0, 10), null);
  });

  test('zero-length windows give the price in force', () => {
    assert.equal(t.average(10, 10), fx('110'));
    assert.equal(t.average(-5, 0), fx('100'));
    assert.throws(() => t.average(2, 1), RangeError);
  });

  test('floor rounding at 18 digits', () => {
    const u = filled([
      [0, '1'],
      [1, '2'],
      [2, '2'],
    ]);
    // (1 + 2 + 2)/3 = 1.666… → floor
    assert.equal(u.average(0, 3), fx('1.666666666666666666'));
  });

  test('same timestamp replaces; going back in time throws', () => {
    const u = filled([
      [0, '100'],
      [10, '200'],
      [10, '300'],
    ]);
    assert.equal(u.size, 2);
    assert.equal(u.average(0, 20), fx('200'));
    assert.throws(() => u.add(9, fx('1')), RangeError);
    assert.equal(u.lastTs, 10);
  });

  test('prune keeps the sample in force at the cut', () => {
    const u = filled([
      [0, '100'],
      [10, '110'],
      [30, '90'],
    ]);
    u.prune(20);
    assert.equal(u.size, 2);
    assert.equal(u.average(20, 40), fx('100')); // 110·10 + 90·10 over 20
    u.prune(30);
    assert.equal(u.size, 1);
    assert.equal(u.average(30, 40), fx('90'));
    u.prune(1_000);
    assert.equal(u.size, 1);
  });

  test('a 30-minute settlement window of 1 s samples, long history pruned', () => {
    const u = new TwapAccumulator();
    // price = 60000 + (s mod 10) for s seconds; mean over any whole number of 10 s cycles is 60004.5
    for (let s = 0; s < 10_000; s++) {
      u.add(s * 1_000, fx(String(60_000 + (s % 10))));
      if (s % 100 === 0) u.prune(s * 1_000 - 1_800_000);
    }
    assert.ok(u.size <= 1_800 + 101);
    assert.equal(u.average(8_000_000, 9_800_000), fx('60004.5'));
  });

  test('the hard cap drops the oldest samples', () => {
    const u = new TwapAccumulator(3);
    for (let k = 0; k < 5_000; k++) u.add(k, BigInt(k));
    assert.equal(u.size, 3);
    // kept samples 4997, 4998, 4999: over [4997, 5000] → (4997 + 4998 + 4999)/3 units
    assert.equal(u.average(0, 5_000), 4998n);
  });

  test('a gap holds no price: the outage counts for nothing', () => {
    const u = new TwapAccumulator();
    u.add(0, fx('100'));
    u.add(10, null); // the index went stale
    u.add(20, null); // still stale: nothing added
    u.add(30, fx('130'));
    assert.equal(u.size, 3);
    // [0, 40]: 100·10 + 130·10 over the 20 ms covered → 115 (not 100 carried to 30)
    assert.equal(u.average(0, 40), fx('115'));
    // a window inside the outage has no price, and no priced sample
    assert.equal(u.average(12, 28), null);
    assert.equal(u.hasSampleIn(12, 28), false);
    // a window whose only fresh print is its last instant: that print, not the pre-outage price
    assert.equal(u.average(5, 30), fx('100'), '[5, 10] is 100; the outage is skipped; 130 starts at 30');
    assert.equal(u.average(15, 30), fx('130'), 'only the print at 30 is in force');
    assert.equal(u.hasSampleIn(10, 30), true);
    assert.equal(u.hasSampleIn(10, 29), false, 'the gap marker is not a sample of the index');
  });

  test('a gap before any price adds nothing; a gap replaces a price at the same instant', () => {
    const u = new TwapAccumulator();
    u.add(0, null);
    assert.equal(u.size, 0);
    u.add(5, fx('10'));
    u.add(5, null);
    assert.equal(u.average(0, 20), null);
  });
});
