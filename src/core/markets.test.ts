/** Tick and lot arithmetic of a market: notional is exact on both sides of the safe-integer bound. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { MarketUnits } from './markets.ts';

test('notional(ticks, lots) = ticks x lots x notionalUnit exactly, small or past 2^53', () => {
  const units = new MarketUnits({ priceDecimals: 1, sizeDecimals: 4 });
  const exact = (t: number, l: number) => BigInt(t) * BigInt(l) * units.notionalUnit;
  const big = 2 ** 53;
  for (const [t, l] of [[1, 1], [94_906_265, 94_906_265], [94_906_266, 94_906_266], [big - 1, 1], [big - 1, 3], [3, Math.floor((big - 1) / 3)], [3, Math.floor((big - 1) / 3) + 1]]) {
    assert.equal(units.notional(t!, l!), exact(t!, l!), `${t} x ${l}`);
  }
  fc.assert(
    fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (t, l) => {
      assert.equal(units.notional(t, l), exact(t, l));
    }),
    { numRuns: 5000 },
  );
});

test('the price ceiling is the largest price at which the maximum size is a safe integer of ticks x lots', () => {
  const cases = [
    { priceDecimals: 1, sizeDecimals: 4, maxSize: 1000n * 10n ** 18n }, // BTC-PERP
    { priceDecimals: 2, sizeDecimals: 5, maxSize: 100n * 10n ** 18n }, // BTC-USDC
    { priceDecimals: 2, sizeDecimals: 0, maxSize: 1n * 10n ** 18n },
  ];
  for (const spec of cases) {
    const units = new MarketUnits(spec);
    const maxLots = Number(spec.maxSize / units.step);
    assert.ok(Number.isSafeInteger(units.maxPriceTicks * maxLots));
    assert.ok(BigInt(units.maxPriceTicks + 1) * BigInt(maxLots) > BigInt(Number.MAX_SAFE_INTEGER));
    assert.equal(units.maxPrice, units.price(units.maxPriceTicks));
  }
  assert.equal(new MarketUnits({ priceDecimals: 1, sizeDecimals: 4 }).maxPriceTicks, Number.MAX_SAFE_INTEGER);
});
