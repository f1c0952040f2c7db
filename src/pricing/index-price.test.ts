/**
 * Tests for index-price.ts: hand-computed exact values (odd and even source counts, clamping, weights,
 * rounding), staleness and future timestamps, too few sources, duplicate sources, and a fast-check
 * property that one arbitrary bad source among honest ones cannot move the index outside the band
 * around the honest prices.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fx, fromInt } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';
import { indexPrice } from './index-price.ts';
import type { IndexOptions, SourceQuote } from './index-price.ts';

const NOW = 1_767_225_600_000;
const O: IndexOptions = { maxAgeMs: 10_000, minSources: 2, clampBps: 50, decimals: 2 };
const q = (source: string, price: string, ts = NOW, weight?: string): SourceQuote => {
  const base = { source, price: fx(price), ts };
  return weight === undefined ? base : { ...base, weight: fx(weight) };
};

describe('indexPrice', () => {
  test('plain mean when everything is inside the band', () => {
    const r = indexPrice([q('a', '100'), q('b', '100.2'), q('c', '99.9')], NOW, O);
    // median 100, band [99.5, 100.5]; mean (100 + 100.2 + 99.9)/3 = 100.0333… → 100.03
    assert.deepEqual(r, { price: fx('100.03'), sourceTs: NOW, oldestTs: NOW, used: 3 });
  });

  test('an outlier is clamped to median·(1 + 0.5 %)', () => {
    const r = indexPrice([q('a', '100'), q('b', '100'), q('c', '100'), q('d', '130')], NOW, O);
    // median 100, d clamped to 100.5: (300 + 100.5)/4 = 100.125 → half up 100.13
    assert.equal(r?.price, fx('100.13'));
  });

  test('even count: band around the exact mean of the middle two', () => {
    const quotes = [q('a', '99'), q('b', '100'), q('c', '101'), q('d', '90')];
    const r = indexPrice(quotes, NOW, { ...O, decimals: 6 });
    // sorted 90, 99, 100, 101 → median 99.5, band [99.0025, 99.9975]
    // clamped 99.0025, 99.0025, 99.9975, 99.9975 → mean 99.5
    assert.equal(r?.price, fx('99.5'));
  });

  test('exact to 18 digits, no float', () => {
    const quotes = [q('a', '0.1'), q('b', '0.2'), q('c', '0.2')];
    const r = indexPrice(quotes, NOW, { ...O, clampBps: 10_000, decimals: 18 });
    // (0.1 + 0.2 + 0.2)/3 = 0.1666…67 (half up at 18 digits)
    assert.equal(r?.price, fx('0.166666666666666667'));
    const big = indexPrice([q('a', '97123.45'), q('b', '97123.46')], NOW, { ...O, decimals: 18 });
    assert.equal(big?.price, fx('97123.455'));
  });

  test('half-up rounding at the result precision', () => {
    const pair = [q('a', '100.00'), q('b', '100.01')];
    assert.equal(indexPrice(pair, NOW, O)?.price, fx('100.01'));
    assert.equal(indexPrice(pair, NOW, { ...O, decimals: 3 })?.price, fx('100.005'));
    assert.equal(indexPrice([q('a', '100'), q('b', '101')], NOW, { ...O, decimals: 0 })?.price, fx('101'));
  });

  test('weights (default 1) apply to the clamped values', () => {
    const r = indexPrice([q('a', '100', NOW, '3'), q('b', '100.4', NOW, '1'), q('c', '100.2')], NOW, O);
    // (3·100 + 100.4 + 100.2)/5 = 100.12
    assert.equal(r?.price, fx('100.12'));
    const clamped = indexPrice([q('a', '100', NOW, '2'), q('b', '100'), q('c', '200', NOW, '0.5')], NOW, O);
    // median 100, c → 100.5: (200 + 100 + 50.25)/3.5 = 100.0714… → 100.07
    assert.equal(clamped?.price, fx('100.07'));
  });

  test('stale and future quotes are dropped; too few fresh sources gives null', () => {
    const quotes = [q('a', '100', NOW - 10_000), q('b', '102', NOW - 10_001), q('c', '101', NOW + 1_000)];
    const r = indexPrice(quotes, NOW, O);
    assert.deepEqual(r, { price: fx('100.5'), sourceTs: NOW + 1_000, oldestTs: NOW - 10_000, used: 2 });
    assert.equal(indexPrice([q('a', '100'), q('c', '101', NOW + 1_001)], NOW, O), null);
    assert.equal(indexPrice([q('a', '100')], NOW, O), null);
    assert.equal(indexPrice([], NOW, { ...O, minSources: 0 }), null);
    assert.equal(indexPrice([q('a', '100')], NOW, { ...O, minSources: 1 })?.price, fx('100'));
  });

  test('a source counts once (its newest quote); non-positive prices and weights are ignored', () => {
    const quotes = [q('a', '100', NOW - 5), q('a', '104', NOW - 1), q('b', '104')];
    const r = indexPrice(quotes, NOW, { ...O, clampBps: 1000 });
    assert.equal(r?.used, 2);
    assert.equal(r?.price, fx('104'));
    const bad = [q('a', '100'), q('b', '0'), q('c', '100', NOW, '0'), q('d', '-5')];
    assert.equal(indexPrice(bad, NOW, O), null);
  });

  test('two sources that disagree beyond the band lock the index (null)', () => {
    assert.equal(indexPrice([q('a', '100'), q('b', '102')], NOW, O), null);
    assert.equal(indexPrice([q('b', '102'), q('a', '100')], NOW, O), null);
    // 100 and 101: median 100.5, band [99.9975, 101.0025] holds both
    assert.equal(indexPrice([q('a', '100'), q('b', '101')], NOW, O)?.price, fx('100.5'));
    // edge: 199 and 201, median 200, band [199, 201]: on the edge is not a split; a cent more is
    assert.equal(indexPrice([q('a', '199'), q('b', '201')], NOW, O)?.price, fx('200'));
    assert.equal(indexPrice([q('a', '199'), q('b', '201.01')], NOW, O), null);
    // a third source restores a robust median
    assert.equal(indexPrice([q('a', '100'), q('b', '102'), q('c', '100')], NOW, O)?.price, fx('100.17'));
  });

  test('rejects nonsense options', () => {
    assert.throws(() => indexPrice([], NOW, { ...O, clampBps: 0.5 }), RangeError);
    assert.throws(() => indexPrice([], NOW, { ...O, decimals: 19 }), RangeError);
  });

  test('property: one bad source cannot push the index outside the band of the honest prices', () => {
    const honestArb = fc.array(fc.bigInt({ min: 90_000n, max: 110_000n }), { minLength: 2, maxLength: 6 });
    const badArb = fc.bigInt({ min: 1n, max: 10_000_000_000n });
    fc.assert(
      fc.property(honestArb, badArb, fc.integer({ min: 0, max: 500 }), (honest, bad, bps) => {
        const prices: Fixed[] = [...honest.map((h) => fromInt(h)), fromInt(bad)];
        const quotes = prices.map((p, k) => ({ source: `s${k}`, price: p, ts: NOW }));
        const r = indexPrice(quotes, NOW, { ...O, clampBps: bps, decimals: 18 });
        assert.ok(r);
        const lo = fromInt(honest.reduce((a, b) => (a < b ? a : b)));
        const hi = fromInt(honest.reduce((a, b) => (a > b ? a : b)));
        // The median lies within [lo, hi], so every clamped value is within the band around it.
        const slack = (hi * BigInt(bps)) / 10_000n + 1n;
        assert.ok(r.price >= lo - slack && r.price <= hi + slack, `${r.price} outside [${lo}, ${hi}]`);
      }),
    );
  });
});
