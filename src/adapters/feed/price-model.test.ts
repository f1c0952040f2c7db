/**
 * Tests for price-model.ts: determinism for a seed (and different paths for another seed), stream
 * independence between underlyings, plausibility over 100 000 one-second ticks (positive, within a
 * day's worth of volatility of the start, emitted prices on the 2-decimal grid), the outlier rate,
 * outages making sources stale, and the index (pricing/index-price.ts with the recommended defaults)
 * tracking the true price within a few bp despite outliers and outages.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { toFloat, unitOf } from '../../core/money.ts';
import { indexPrice } from '../../pricing/index-price.ts';
import type { SourceQuote } from '../../pricing/index-price.ts';
import { DEFAULT_UNDERLYINGS, createPriceModel, mulberry32 } from './price-model.ts';
import type { PriceModelOptions, UnderlyingObservations } from './price-model.ts';

const T0 = 1_767_225_600_000;
const BASE: PriceModelOptions = { seed: 42, underlyings: DEFAULT_UNDERLYINGS, tickMs: 1_000 };

function run(o: PriceModelOptions, ticks: number): UnderlyingObservations[][] {
  const m = createPriceModel(o);
  const out: UnderlyingObservations[][] = [];
  for (let k = 0; k < ticks; k++) out.push(m.step(T0 + k * o.tickMs));
  return out;
}

describe('price model', () => {
  test('mulberry32 is uniform in [0, 1) and repeatable', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    let sum = 0;
    for (let k = 0; k < 10_000; k++) {
      const x = a();
      assert.equal(x, b());
      assert.ok(x >= 0 && x < 1);
      sum += x;
    }
    assert.ok(Math.abs(sum / 10_000 - 0.5) < 0.02);
  });

  test('deterministic for a seed; another seed gives another path', () => {
    assert.deepEqual(run(BASE, 500), run(BASE, 500));
    assert.notDeepEqual(run({ ...BASE, seed: 43 }, 50), run(BASE, 50));
  });

  test('an underlying path does not depend on the others', () => {
    const both = createPriceModel(BASE);
    const btcOnly = createPriceModel({ ...BASE, underlyings: { BTC: DEFAULT_UNDERLYINGS.BTC! } });
    for (let k = 0; k < 200; k++) {
      both.step(T0 + k * 1_000);
      btcOnly.step(T0 + k * 1_000);
    }
    assert.equal(both.truePrice('BTC'), btcOnly.truePrice('BTC'));
  });

  test('100 000 ticks: plausible prices, outlier rate, outages, index within a few bp', () => {
    const o: PriceModelOptions = { ...BASE, seed: 2026 };
    const m = createPriceModel(o);
    const latest = new Map<string, Map<string, SourceQuote>>();
    const stats = { reports: 0, outliers: 0, nulls: 0, errBpsSum: 0, errSamples: 0, maxErrBps: 0, sparse: 0 };
    const idxOpts = { maxAgeMs: 10_000, minSources: 2, clampBps: 50, decimals: 2 };
    const unit = unitOf(2);
    for (let k = 0; k < 100_000; k++) {
      const now = T0 + k * 1_000;
      for (const { underlying, observations } of m.step(now)) {
        const book = latest.get(underlying) ?? new Map<string, SourceQuote>();
        latest.set(underlying, book);
        const truth = m.truePrice(underlying);
        if (observations.length < 3) stats.sparse++;
        for (const ob of observations) {
          assert.ok(ob.price > 0n && ob.price % unit === 0n && ob.ts === now);
          stats.reports++;
          if (Math.abs(toFloat(ob.price) / truth - 1) > 0.015) stats.outliers++;
          book.set(ob.source, ob);
        }
      }
      for (const [underlying, book] of latest) {
        const truth = m.truePrice(underlying);
        const start = DEFAULT_UNDERLYINGS[underlying]!.start;
        // a day of 55–70 % vol is ~3–4 % one sd; 25 % is far outside any plausible path
        assert.ok(truth > start * 0.75 && truth < start * 1.25, `${underlying} ${truth}`);
        const r = indexPrice([...book.values()], now, idxOpts);
        if (r === null) {
          stats.nulls++;
          continue;
        }
        const errBps = (Math.abs(toFloat(r.price) - truth) / truth) * 10_000;
        stats.errBpsSum += errBps;
        stats.errSamples++;
        stats.maxErrBps = Math.max(stats.maxErrBps, errBps);
      }
    }
    // 1 in 2 000 reports; ~7.6e5 reports ⇒ ~380 expected, Poisson sd ~20
    const expected = stats.reports / 2_000;
    assert.ok(Math.abs(stats.outliers - expected) < expected * 0.25, `${stats.outliers} vs ${expected}`);
    assert.ok(stats.sparse > 0, 'outages and missed ticks do happen');
    assert.ok(stats.nulls < 200, `index missing ${stats.nulls} times`);
    const meanErr = stats.errBpsSum / stats.errSamples;
    assert.ok(meanErr < 2, `mean error ${meanErr} bp`);
    // one source clamped at +50 bp moves the index by at most 50/n bp (n >= 3 fresh sources; a split
    // pair gives null), plus source noise and the lag of quotes up to 10 s old
    assert.ok(stats.maxErrBps < 25, `max error ${stats.maxErrBps} bp`);
  });

  test('the clamp absorbs a 3 % outlier that would otherwise move the index by ~75 bp', () => {
    const m = createPriceModel({ ...BASE, outlierProb: 0, skipProb: 0, outageProb: 0 });
    const [btc] = m.step(T0);
    const truth = m.truePrice('BTC');
    const quotes = btc!.observations.map((ob) => ({ ...ob }));
    assert.equal(quotes.length, 4);
    quotes[0] = { ...quotes[0]!, price: (quotes[0]!.price * 103n) / 100n };
    const err = (clampBps: number): number => {
      const r = indexPrice(quotes, T0, { maxAgeMs: 10_000, minSources: 2, clampBps, decimals: 2 });
      return (Math.abs(toFloat(r!.price) - truth) / truth) * 10_000;
    };
    assert.ok(err(10_000) > 60, `unclamped ${err(10_000)} bp`);
    assert.ok(err(50) < 16, `clamped ${err(50)} bp`);
  });

  test('rejects bad options', () => {
    assert.throws(() => createPriceModel({ ...BASE, tickMs: 0 }), RangeError);
    assert.throws(() => createPriceModel({ ...BASE, sources: ['a', 'a'] }), RangeError);
    assert.throws(() => createPriceModel({ ...BASE, skipProb: 2 }), RangeError);
    const zeroStart = { X: { start: 0, annualVol: 1 } };
    assert.throws(() => createPriceModel({ ...BASE, underlyings: zeroStart }), RangeError);
  });
});
