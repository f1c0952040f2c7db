/**
 * Tests for forward.ts: the synthetic forward recovers F from black76-priced quotes, picks the
 * tightest strike, averages ties, applies the discount factor, drops crossed/empty quotes and
 * needs two usable strikes; carry forward is S·e^(fT).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { black76 } from './black76.ts';
import { carryForward, medianForward, pairForwards, syntheticForward } from './forward.ts';
import type { StrikeQuotes } from './forward.ts';

/** Quotes around black76 values with a half-spread per strike. */
function quotesAt(
  F: number,
  T: number,
  strikes: number[],
  half: (K: number) => number,
  r = 0,
): StrikeQuotes[] {
  return strikes.map((K) => {
    const c = black76({ F, K, T, sigma: 0.6, r, type: 'call' }).price;
    const p = black76({ F, K, T, sigma: 0.6, r, type: 'put' }).price;
    const h = half(K);
    return { strike: K, callBid: c - h, callAsk: c + h, putBid: p - h, putAsk: p + h };
  });
}

describe('syntheticForward', () => {
  const F = 61_234.5;
  const T = 14 / 365;
  const strikes = [55_000, 58_000, 60_000, 62_000, 65_000];

  test('recovers the forward at the tightest strike', () => {
    const q = quotesAt(F, T, strikes, (K) => 5 + Math.abs(K - 62_000) / 100);
    const res = syntheticForward(q);
    assert.ok(res);
    assert.equal(res.strike, 62_000);
    assert.ok(Math.abs(res.forward - F) < 1e-8);
    assert.ok(Math.abs(res.spread - 20) < 1e-9);
  });

  test('skewed mids: F = K + (C_mid − P_mid)/D at the chosen strike', () => {
    const q: StrikeQuotes[] = [
      { strike: 60_000, callBid: 2_000, callAsk: 2_100, putBid: 900, putAsk: 1_000 },
      { strike: 62_000, callBid: 1_000, callAsk: 1_010, putBid: 1_500, putAsk: 1_530 },
    ];
    const res = syntheticForward(q, 0.99);
    assert.ok(res);
    assert.equal(res.strike, 62_000);
    assert.ok(Math.abs(res.forward - (62_000 + (1_005 - 1_515) / 0.99)) < 1e-9);
    assert.equal(res.spread, 40);
  });

  test('discounting: quotes priced with r give back F', () => {
    const r = 0.05;
    const q = quotesAt(F, T, strikes, () => 3, r);
    const res = syntheticForward(q, Math.exp(-r * T));
    assert.ok(res);
    assert.ok(Math.abs(res.forward - F) < 1e-8);
  });

  test('averages strikes tied on spread', () => {
    const q: StrikeQuotes[] = [
      { strike: 60_000, callBid: 1_990, callAsk: 2_010, putBid: 990, putAsk: 1_010 }, // F 61 000
      { strike: 62_000, callBid: 990, callAsk: 1_010, putBid: 1_990, putAsk: 2_010 }, // F 61 000
      { strike: 64_000, callBid: 500, callAsk: 520, putBid: 3_490, putAsk: 3_510 }, // F 61 010, tied
    ];
    const res = syntheticForward(q);
    assert.ok(res);
    assert.ok(Math.abs(res.forward - (61_000 + 61_000 + 61_010) / 3) < 1e-9);
    assert.equal(res.strike, 62_000);
  });

  test('drops crossed and empty quotes and needs two usable strikes', () => {
    const good = quotesAt(F, T, [60_000, 62_000], () => 5);
    const crossed: StrikeQuotes = { ...good[0]!, strike: 61_000, callBid: 3_000, callAsk: 2_900 };
    const noPutBid: StrikeQuotes = { ...good[0]!, strike: 63_000, putBid: 0 };
    const nanAsk: StrikeQuotes = { ...good[0]!, strike: 64_000, callAsk: Number.NaN };
    // The crossed/empty strikes would be tightest if they were counted.
    const tightBad = [crossed, noPutBid, nanAsk].map((q) => ({ ...q, putAsk: q.putBid + 0.01 }));
    assert.equal(syntheticForward([good[0]!, ...tightBad]), null);
    const res = syntheticForward([...good, ...tightBad]);
    assert.ok(res && Math.abs(res.forward - F) < 1e-8);
    assert.equal(syntheticForward([]), null);
    assert.equal(syntheticForward(good, 0), null);
  });
});

describe('carryForward', () => {
  test('S·e^(fT), no carry after expiry', () => {
    assert.equal(carryForward(60_000, 0.5, 0), 60_000);
    assert.ok(Math.abs(carryForward(60_000, 0.5, 0.1) - 60_000 * Math.exp(0.05)) < 1e-9);
    assert.equal(carryForward(60_000, -1, 0.1), 60_000);
  });
});

describe('pairForwards and medianForward', () => {
  const q = (strike: number, c: number, p: number, half = 1) => ({
    strike, callBid: c - half, callAsk: c + half, putBid: p - half, putAsk: p + half,
  });

  test('each two-sided strike gives K + C − P and half the spread of C − P', () => {
    const pairs = pairForwards([q(100, 17, 7, 5), q(110, 6, 5), { strike: 120, callBid: 0, callAsk: 3, putBid: 9, putAsk: 11 }]);
    assert.deepEqual(pairs, [
      { strike: 100, forward: 110, tolerance: 10 },
      { strike: 110, forward: 111, tolerance: 2 },
    ]);
  });

  test('the median follows the majority of strikes, whichever strike is tightest', () => {
    // Two strikes still on the old forward 110 (one of them the tightest), three on the new 120.
    const pairs = pairForwards([q(100, 12, 2, 0.5), q(105, 8, 3), q(110, 12, 2), q(115, 8, 3), q(120, 5, 5)]);
    assert.equal(medianForward(pairs), 120);
    assert.equal(syntheticForward([q(100, 12, 2, 0.5), q(105, 8, 3)])!.forward, 110);
    assert.equal(medianForward(pairs.slice(0, 1)), null);
    assert.equal(medianForward(pairs.slice(0, 2)), 110);
  });
});
