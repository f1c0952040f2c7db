/**
 * The price band edges are kept until the mark moves: on any sequence of marks (repeats, moves
 * back and forth, marks off the tick, marks so low the sell edge floors at one tick) they equal the
 * edges computed from scratch: buy ≤ floor((mark + band) / tick), sell ≥ max(1, ceil((mark − band) / tick)).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { coreConfig } from '../../config/core.ts';
import { BUY, SELL } from '../book/order-book.ts';
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
