/**
 * Order reads answer the whole Order object decisions.md decides: the order's own fields, `fills`
 * (every fill of the order so far, oldest first, from the history) and `position` (the caller's
 * position in the order's market and margin mode now: null when flat, and for spot, whose holdings
 * are balances). Order actions answer the same shape with the request's own fills.
 *
 * A page of orders costs one indexed lookup of fills and one position view per market it names.
 */
import type { EngineName, OrderRecord } from '../../core/records.ts';
import { histories, type GatewayContext } from '../context.ts';
import type { TradeRow } from '../history-port.ts';
import { dec, iso } from '../format.ts';
import { orderView } from '../schemas/orders.ts';
import { optionPositionOf } from './clob-views.ts';
import { positionViewOf } from './perps-views.ts';

/** Perp and dated-future orders of `address` as reads return them. */
export async function perpOrderReads(ctx: GatewayContext, address: string, orders: readonly OrderRecord[]) {
  const fills = await fillsOf(ctx, address, 'linear', orders);
  const positions = new Map<string, ReturnType<typeof positionViewOf>>();
  return orders.map((o) => {
    const key = `${o.marketId}|${o.marginMode}`;
    if (!positions.has(key)) positions.set(key, positionViewOf(ctx, address, o.marketId, o.marginMode));
    return { ...orderView(o), fills: fills.get(o.id) ?? [], position: positions.get(key)! };
  });
}

/** Option and spot orders of `address` as reads return them. */
export async function clobOrderReads(ctx: GatewayContext, address: string, orders: readonly OrderRecord[]) {
  const fills = await fillsOf(ctx, address, 'clob', orders);
  const positions = new Map<string, ReturnType<typeof optionPositionOf>>();
  return orders.map((o) => {
    if (!positions.has(o.marketId)) positions.set(o.marketId, optionPositionOf(ctx, address, o.marketId));
    return { ...orderView(o), fills: fills.get(o.id) ?? [], position: positions.get(o.marketId)! };
  });
}

async function fillsOf(ctx: GatewayContext, address: string, engine: EngineName, orders: readonly OrderRecord[]) {
  const accountId = ctx.core.accountId(address);
  const views = new Map<string, ReturnType<typeof fillOfTrade>[]>();
  if (accountId === undefined || orders.length === 0) return views;
  const rows = await (await histories(ctx)).trading.fillsOf(accountId, engine, orders.map((o) => Number(o.id)));
  for (const [orderId, trades] of rows) views.set(orderId, trades.map(fillOfTrade));
  return views;
}

/** One of the caller's trades as an order's `fills` entry. */
function fillOfTrade(t: TradeRow) {
  return {
    tradeId: t.tradeId,
    price: dec(t.price),
    quantity: dec(t.quantity),
    liquidity: t.liquidity,
    fee: dec(t.fee),
    feeBps: dec(t.feeBps),
    createdAt: iso(t.createdAt),
  };
}
