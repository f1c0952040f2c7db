/**
 * Tests for mark-price.ts: median and band clamp (inward rounding), the perpetual mark's choice of
 * inputs (one, two or three available), the clamp to the index band and tick rounding; the futures
 * mark before and inside the settlement window (hand-computed blends), at expiry, and without a TWAP.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fx } from '../core/money.ts';
import { clampToBand, futureMark, localMedian, median, perpMark } from './mark-price.ts';
import type { PerpMarkInputs } from './mark-price.ts';

describe('median and clampToBand', () => {
  test('median: odd, even (floor of the mean), unsorted input untouched', () => {
    const xs = [fx('3'), fx('1'), fx('2')];
    assert.equal(median(xs), fx('2'));
    assert.deepEqual(xs, [fx('3'), fx('1'), fx('2')]);
    assert.equal(median([fx('1'), fx('2')]), fx('1.5'));
    assert.equal(median([1n, 2n]), 1n); // floor at 18 digits
    assert.equal(median([-1n, -2n]), -2n);
    assert.throws(() => median([]), RangeError);
  });

  test('clampToBand: edges exact or rounded inward', () => {
    assert.equal(clampToBand(fx('200'), fx('100'), 500), fx('105'));
    assert.equal(clampToBand(fx('1'), fx('100'), 500), fx('95'));
    assert.equal(clampToBand(fx('101'), fx('100'), 500), fx('101'));
    // centre 3 units, 1 bp: band [2.9997, 3.0003] units → [3, 3]
    assert.equal(clampToBand(10n, 3n, 1), 3n);
    assert.equal(clampToBand(0n, 3n, 1), 3n);
  });

  test('property: a clamped value is inside the band', () => {
    const big = fc.bigInt({ min: 1n, max: 10n ** 26n });
    const anyX = fc.bigInt({ min: -(10n ** 26n), max: 10n ** 26n });
    fc.assert(
      fc.property(anyX, big, fc.integer({ min: 0, max: 10_000 }), (x, c, bps) => {
        const y = clampToBand(x, c, bps);
        assert.ok(y * 10_000n >= c * BigInt(10_000 - bps) && y * 10_000n <= c * BigInt(10_000 + bps));
      }),
    );
  });
});

describe('perpMark', () => {
  const O = { clampBps: 500, tick: fx('0.5') };
  const base: PerpMarkInputs = {
    index: fx('60000'),
    basisEma: null,
    bestBid: null,
    bestAsk: null,
    last: null,
    localMedianEma: null,
  };

  test('index alone when nothing else is known; index + basis EMA', () => {
    assert.equal(perpMark(base, O), fx('60000'));
    assert.equal(perpMark({ ...base, basisEma: fx('12.3') }, O), fx('60012.5')); // 60012.3 → tick 0.5
  });

  test('local median uses last when inside the book, else the touch; mid without last', () => {
    assert.equal(localMedian(fx('100'), fx('102'), fx('101.5')), fx('101.5'));
    assert.equal(localMedian(fx('100'), fx('102'), fx('150')), fx('102'));
    assert.equal(localMedian(fx('100'), fx('102'), null), fx('101'));
    assert.equal(localMedian(fx('100'), null, fx('101')), null);
  });

  test('two inputs: mean of index+basis and the local median', () => {
    const i = { ...base, basisEma: fx('10'), bestBid: fx('60020'), bestAsk: fx('60040'), last: fx('60025') };
    // median(60010, 60025) = 60017.5
    assert.equal(perpMark(i, O), fx('60017.5'));
  });

  test('three inputs: the median of them', () => {
    const i = { ...base, basisEma: fx('10'), bestBid: fx('60020'), bestAsk: fx('60040'), last: null };
    assert.equal(perpMark({ ...i, localMedianEma: fx('60100') }, O), fx('60030'));
    assert.equal(perpMark({ ...i, localMedianEma: fx('60001.2') }, O), fx('60010'));
  });

  test('clamped to the band around the index, then on the tick', () => {
    const crazy = { ...base, bestBid: fx('90000'), bestAsk: fx('90010'), localMedianEma: fx('90000') };
    assert.equal(perpMark(crazy, O), fx('63000'));
    // 60000.3·1.05 = 63000.315 → tick 1 half up → 63000; 60000.7·1.05 = 63000.735 → 63001
    assert.equal(perpMark({ ...crazy, index: fx('60000.3') }, { clampBps: 500, tick: fx('1') }), fx('63000'));
    assert.equal(perpMark({ ...crazy, index: fx('60000.7') }, { clampBps: 500, tick: fx('1') }), fx('63001'));
  });

  test('rejects a non-positive tick', () => {
    assert.throws(() => perpMark(base, { clampBps: 500, tick: 0n }), RangeError);
  });
});

describe('futureMark', () => {
  const MIN = 60_000;
  const expiryMs = 1_000 * MIN;
  const O = { clampBps: 500, tick: fx('0.01') };
  const at = (nowMs: number, twap: string | null, rate: string | null = '0.001') =>
    futureMark(
      {
        index: fx('60000'),
        basisRateEma: rate === null ? null : fx(rate),
        nowMs,
        expiryMs,
        settlementTwap: twap === null ? null : fx(twap),
        windowMs: 30 * MIN,
      },
      O,
    );

  test('before the window: index·(1 + basis rate), clamped', () => {
    assert.equal(at(expiryMs - 31 * MIN, '59000'), fx('60060'));
    assert.equal(at(expiryMs - 31 * MIN, null, null), fx('60000'));
    assert.equal(at(expiryMs - 31 * MIN, null, '0.2'), fx('63000'));
    assert.equal(at(expiryMs - 31 * MIN, null, '-0.0000001'), fx('59999.99'));
  });

  test('inside the window: linear blend towards the TWAP', () => {
    assert.equal(at(expiryMs - 30 * MIN, '59000'), fx('60060')); // elapsed 0
    // elapsed 10 of 30: (59000 + 2·60060)/3 = 59706.666… → 59706.67
    assert.equal(at(expiryMs - 20 * MIN, '59000'), fx('59706.67'));
    assert.equal(at(expiryMs - 15 * MIN, '59000'), fx('59530'));
  });

  test('at or after expiry the mark is the TWAP; no TWAP yet means F_live', () => {
    assert.equal(at(expiryMs, '59123.456'), fx('59123.46'));
    assert.equal(at(expiryMs + 5 * MIN, '59123.454'), fx('59123.45'));
    assert.equal(at(expiryMs - 10 * MIN, null), fx('60060'));
  });

  test('rejects a non-positive window', () => {
    const i = { index: 1n, basisRateEma: null, nowMs: 0, expiryMs: 0, settlementTwap: null, windowMs: 0 };
    assert.throws(() => futureMark(i, O), RangeError);
  });
});
