/**
 * Spot pairs as entries of the linear market list (`GET /perps/markets`, `/markets/linear`;
 * contract "Market" with marketType `spot`): marked at the underlying's index, null while the
 * index is stale (a spot pair has no mark of its own). Kept apart from the route modules so the
 * perp market routes can include it without an import cycle.
 */
import { formatDecimal, unitOf } from '../../core/money.ts';
import type { ClobMarketView } from '../../core/queries.ts';
import type { GatewayContext } from '../context.ts';
import { dec, decOrNull } from '../format.ts';

/** Spot pairs in the shape of the linear market list (contract "Market", marketType spot). */
export function spotMarketViews(ctx: GatewayContext, now: number) {
  const spot = [...ctx.core.clobMarkets().values()].filter((m) => !m.isOption);
  return spot.map((m) => spotMarketView(ctx, m, now));
}

function spotMarketView(ctx: GatewayContext, m: ClobMarketView, now: number) {
  const s = m.spec;
  const index = ctx.core.indexPrice(s.underlying, now);
  return {
    id: s.id,
    symbol: s.symbol,
    marketType: 'spot' as const,
    baseSymbol: s.baseSymbol,
    quoteSymbol: s.quoteSymbol,
    markPrice: decOrNull(index),
    priceDecimals: s.priceDecimals,
    sizeDecimals: s.sizeDecimals,
    indexMarketId: s.indexMarketId,
    indexPrice: decOrNull(index),
    underlying: s.underlying,
    tickSize: dec(unitOf(s.priceDecimals)),
    stepSize: dec(unitOf(s.sizeDecimals)),
    minSize: dec(s.minSize),
    maxSize: dec(s.maxSize),
    priceBandPct: formatDecimal(BigInt(s.priceBandBps) * 10n ** 16n),
    maxLeverage: 1,
    status: 'open' as const, // spot pairs are always open
  };
}
