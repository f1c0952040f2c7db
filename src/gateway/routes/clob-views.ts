/**
 * Helpers that turn the CLOB engine's results and live state into wire views for the options and
 * spot routes: an order action's result (order, this request's fills, the option position after
 * it) and the caller's option position in one instrument.
 */
import type { PlaceResult } from '../../core/linear/engine.ts';
import type { GatewayContext } from '../context.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { optionPositionView } from '../schemas/clob.ts';
import { fillView, orderView } from '../schemas/orders.ts';

/** The caller's open option position in `marketId`, valued now, or null. */
export function optionPositionOf(ctx: GatewayContext, address: string, marketId: string) {
  const accountId = ctx.core.accountId(address);
  if (accountId === undefined) return null;
  const views = ctx.core.optionPositions(accountId, ctx.now());
  const p = views.find((v) => v.marketId === marketId);
  return p === undefined ? null : optionPositionView(p);
}

export function clobPlaceView(ctx: GatewayContext, r: PlaceResult, address: string) {
  const accountId = ctx.core.accountId(address) ?? -1;
  const open = optionPositionOf(ctx, address, r.order.marketId);
  const closed = r.position === null || open !== null ? null : closedPositionView(ctx, r.position);
  return {
    ...orderView(r.order),
    fills: r.fills.map((f) => fillView(f, accountId)),
    position: open ?? closed,
  };
}

/** A position this request closed: its final record with no valuation. */
function closedPositionView(ctx: GatewayContext, p: NonNullable<PlaceResult['position']>) {
  const o = ctx.core.clobMarkets().get(p.marketId)?.option;
  if (o === undefined || o === null) return null;
  return {
    id: p.id,
    marketId: p.marketId,
    side: p.side,
    size: dec(p.size),
    entryPrice: decOrNull(p.entryPrice),
    markPrice: null,
    unrealizedPnl: null,
    realizedPnl: dec(p.realizedPnl),
    funding: '0',
    liquidationPrice: null,
    leverage: null,
    marginMode: p.marginMode,
    margin: null,
    status: p.status,
    updatedAt: iso(p.updatedAt),
    underlying: o.underlying,
    expiry: iso(o.expiry),
    strike: dec(o.strike),
    optionType: o.type,
    riskPrice: null,
    delta: null,
    vega: null,
    initialMargin: '0',
    maintenanceMargin: '0',
  };
}
