/**
 * A market's marks and price band. An old book-derived average is no mark input. The price band
 * edges are kept until the mark moves: on any sequence of marks (repeats, moves
 * back and forth, marks off the tick, marks so low the sell edge floors at one tick) they equal the
 * edges computed from scratch: buy ≤ floor((mark + band) / tick), sell ≥ max(1, ceil((mark − band) / tick)).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { coreConfig } from '../../config/core.ts';
import { BookOrder, BUY, SELL } from '../book/order-book.ts';
import type { Fixed } from '../money.ts';
import { LinearMarket } from './market.ts';

const spec = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 60_000 }).linear.perps.find((m) => m.id === 'BTC-PERP')!;

function edgesFromScratch(mark: Fixed): { buy: number; sell: number } {
  const tick = 10n ** BigInt(18 - spec.priceDecimals);
  const band = (mark * BigInt(spec.priceBandBps)) / 10_000n;
  const low = mark - band;
  const lowTicks = low <= 0n ? 0n : low / tick + (low % tick === 0n ? 0n : 1n); // ceiling
  return { buy: Number((mark + band) / tick), sell: Number(lowTicks < 1n ? 1n : lowTicks) };
}

test('band edges equal a computation from scratch on any sequence of marks', () => {
  const mark = fc.oneof(
    fc.bigInt({ min: 1n, max: 10n ** 25n }),
    fc.bigInt({ min: 1n, max: 10n ** 18n }), // below one USDC: the sell edge floors at one tick
    fc.constantFrom(10n ** 23n, 10n ** 23n + 1n, 99_999_900_000_000_000_000_000n),
  );
  fc.assert(
    fc.property(fc.array(mark, { minLength: 1, maxLength: 30 }), (marks) => {
      const market = new LinearMarket(spec);
      for (const m of marks) {
        const expected = edgesFromScratch(m);
        assert.equal(market.bandLimitTicks(BUY, m), expected.buy);
        assert.equal(market.bandLimitTicks(SELL, m), expected.sell);
        assert.equal(market.priceInBand(BUY, expected.buy, m), true);
        assert.equal(market.priceInBand(BUY, expected.buy + 1, m), false);
      }
    }),
    { numRuns: 300 },
  );
});

test('an old book average is no mark input: a book gone one-sided leaves the mark at a fresh index', () => {
  const market = new LinearMarket(spec);
  const ticks = (price: number) => price * 10; // BTC-PERP tick 0.1
  const usd = (price: number): Fixed => BigInt(price) * 10n ** 18n;
  const bid = new BookOrder(1, 1, BUY, ticks(101_900), 10);
  market.book.rest(bid);
  market.book.rest(new BookOrder(2, 2, SELL, ticks(102_100), 10));
  // An hour of a two-sided book 2 % above the index: the book-derived averages sit at 102,000.
  for (let t = 0; t <= 3_600_000; t += 1000) market.updateMark(usd(100_000), t, null);
  assert.equal(market.mark, usd(102_000), 'median of index + basis and the two book inputs');
  // The asks are pulled; the index moves to 103,599 and is sampled every second for ten minutes.
  market.book.cancel(2);
  let t = 3_600_000;
  market.updateMark(usd(103_599), (t += 1000), null);
  assert.notEqual(market.mark, usd(103_599), 'right after, the averages still count');
  for (let i = 0; i < 600; i++) market.updateMark(usd(103_599), (t += 1000), null);
  assert.equal(market.mark, usd(103_599), 'once both averages are older than their time constants, the index alone');
});

test('band edges around an absurd mark stay safe integers, held one tick past the price ceiling', () => {
  const market = new LinearMarket(spec);
  const absurd = 99_999_999_999_999_999_999n * 10n ** 18n;
  for (const side of [BUY, SELL] as const) {
    const edge = market.bandLimitTicks(side, absurd);
    assert.ok(Number.isSafeInteger(edge));
    assert.equal(edge, market.units.maxPriceTicks + 1);
  }
});

test('a dated future\'s basis is the mid of its impact prices: one tiny order does not move its mark', () => {
  const config = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 60_000 });
  const expiry = Date.UTC(2026, 11, 25, 8);
  const future = new LinearMarket(config.linear.futureSpec('BTC', expiry));
  const ticks = (price: number) => price * 10; // tick 0.1, step 0.0001
  const usd = (price: number): Fixed => BigInt(price) * 10n ** 18n;
  const index = usd(100_000);
  const start = expiry - 7 * 86_400_000;
  // one lot each side, far from the index: no side absorbs the impact notional (20,000 USDC)
  future.book.rest(new BookOrder(1, 1, BUY, ticks(80_000), 1));
  future.book.rest(new BookOrder(2, 2, SELL, ticks(100_010), 1));
  for (let t = start; t <= start + 60_000; t += 1000) future.updateMark(index, t, null);
  assert.equal(future.mark, index, 'no basis sample without impact depth');
  // depth for the impact notional both sides, 1 % above the index: the basis comes in smoothly
  future.book.cancel(2);
  future.book.rest(new BookOrder(3, 3, BUY, ticks(100_900), 10_000));
  future.book.rest(new BookOrder(4, 4, SELL, ticks(101_100), 10_000));
  future.updateMark(index, start + 61_000, null);
  assert.equal(future.mark, index, 'a first sample does not set the basis whole');
  for (let t = start + 62_000; t <= start + 2_500_000; t += 1000) future.updateMark(index, t, null);
  const mark = future.mark!;
  assert.ok(mark > usd(100_900) && mark <= usd(101_000), `a few time constants on, the mark follows the impact mid (${mark})`);
});
