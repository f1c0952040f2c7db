/**
 * Tests for quote-width.ts: half-spread scales with vega and never drops below one tick.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { black76 } from './black76.ts';
import { optionHalfSpread } from './quote-width.ts';

test('half-spread is h·vega + min, floored at the tick', () => {
  const { vega } = black76({ F: 60_000, K: 65_000, T: 30 / 365, sigma: 0.5, type: 'call' });
  const h = optionHalfSpread({ vegaPerVolPt: vega, hVolPts: 1, minHalfSpread: 2, tick: 5 });
  assert.ok(Math.abs(h - (vega + 2)) < 1e-12);
  assert.equal(optionHalfSpread({ vegaPerVolPt: 0.01, hVolPts: 1, minHalfSpread: 0, tick: 5 }), 5);
  assert.equal(optionHalfSpread({ vegaPerVolPt: -10, hVolPts: 1, minHalfSpread: 0, tick: 5 }), 5);
});

test('wider for more vega (longer-dated, at the money)', () => {
  const at = (K: number, T: number) =>
    optionHalfSpread({
      vegaPerVolPt: black76({ F: 60_000, K, T, sigma: 0.6, type: 'call' }).vega,
      hVolPts: 0.5,
      minHalfSpread: 0,
      tick: 5,
    });
  assert.ok(at(60_000, 0.5) > at(60_000, 7 / 365));
  assert.ok(at(60_000, 30 / 365) > at(90_000, 30 / 365));
  assert.equal(at(200_000, 2 / 365), 5);
});
