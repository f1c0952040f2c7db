/**
 * Snapshots of the linear engine's live objects as immutable records (core/records.ts shapes).
 */
import { BUY } from '../book/order-book.ts';
import { divRound, SCALE, type Fixed } from '../money.ts';
import type { FillRecord, FillSide, MarginMode, OrderRecord, PositionRecord } from '../records.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder } from './order.ts';
import type { Position } from './position.ts';

export function orderRecord(o: LinearOrder): OrderRecord {
  const units = o.market.units;
  const r = o.request;
  const filled = o.filledLots === 0 ? 0n : units.size(o.filledLots);
  const live = o.status === 'open' || o.status === 'untriggered';
  const quantity = o.quantity();
  return {
    id: String(o.id),
    engine: 'linear',
    accountId: o.owner,
    clientOrderId: r.clientOrderId,
    marketId: r.marketId,
    side: o.side === BUY ? 'buy' : 'sell',
    type: r.type,
    price: r.price,
    quantity,
    filledQuantity: filled,
    remainingQuantity: !live ? 0n : o.remainingLots === o.originalLots ? quantity : units.size(o.remainingLots),
    avgFillPrice: o.filledLots === 0 ? null : divRound(o.filledNotional * SCALE, filled, 'halfUp'),
    status: o.status,
    timeInForce: r.timeInForce,
    postOnly: r.postOnly,
    reduceOnly: r.reduceOnly,
    marginMode: r.marginMode,
    stopPrice: r.stopPrice,
    takeProfitPrice: r.takeProfitPrice,
    stopLossPrice: r.stopLossPrice,
    quoteId: r.quoteId,
    rejectReason: o.rejectReason,
    createdAt: o.createdAt,
    updatedAt: o.updatedAt,
    leverage: r.leverage ?? null,
  };
}

/** A fill of a book order: the two sides come from the engine complete (side, role, fee, PnL). */
export function fillRecord(
  tradeId: number,
  market: LinearMarket,
  priceTicks: number,
  lots: number,
  taker: LinearOrder,
  maker: FillSide,
  takerSide: FillSide,
  at: number,
): FillRecord {
  return {
    tradeId: String(tradeId),
    engine: 'linear',
    marketId: market.spec.id,
    price: market.units.price(priceTicks),
    quantity: market.units.size(lots),
    takerSide: taker.side === BUY ? 'buy' : 'sell',
    maker,
    taker: takerSide,
    at,
  };
}

/**
 * The position's snapshot. Records are immutable, so the last one is reused while every field it
 * was built from is unchanged (a placement reports its position without re-deriving the entry
 * price from the cost basis on every order).
 */
export function positionRecord(p: Position): PositionRecord {
  const last = p.lastRecord;
  const status = p.size === 0 ? (p.status === 'liquidated' ? 'liquidated' : 'closed') : p.status;
  if (
    last !== null && p.lastRecordSize === p.size && p.lastRecordCost === p.cost && last.realizedPnl === p.realizedPnl &&
    last.isolatedMargin === p.isolatedMargin && last.funding === p.funding && last.status === status && last.updatedAt === p.updatedAt
  ) {
    return last;
  }
  const record: PositionRecord = {
    id: p.id,
    accountId: p.accountId,
    marketId: p.market.spec.id,
    marginMode: p.marginMode,
    side: p.side,
    size: p.market.units.size(Math.abs(p.size)),
    entryPrice: p.entryPrice(),
    realizedPnl: p.realizedPnl,
    isolatedMargin: p.isolatedMargin,
    funding: p.funding,
    status,
    openedAt: p.openedAt,
    updatedAt: p.updatedAt,
  };
  p.lastRecord = record;
  p.lastRecordSize = p.size;
  p.lastRecordCost = p.cost;
  return record;
}

/** A trade the venue made outside the book (backstop takeover, deleveraging): no order, no fee. */
export function directFillRecord(
  tradeId: number,
  market: LinearMarket,
  priceTicks: number,
  lots: number,
  taker: { accountId: number; side: 0 | 1; mode: MarginMode; realized: Fixed },
  maker: { accountId: number; mode: MarginMode; realized: Fixed },
  at: number,
  _kind: string,
): FillRecord {
  const takerSide = taker.side === BUY ? 'buy' : 'sell';
  const makerSide = taker.side === BUY ? 'sell' : 'buy';
  const side = (accountId: number, s: 'buy' | 'sell', liquidity: 'maker' | 'taker', mode: MarginMode, realized: Fixed): FillSide => ({
    accountId, orderId: '0', side: s, liquidity, fee: 0n, feeBps: 0n, realizedPnl: realized, marginMode: mode,
  });
  return {
    tradeId: String(tradeId),
    engine: 'linear',
    marketId: market.spec.id,
    price: market.units.price(priceTicks),
    quantity: market.units.size(lots),
    takerSide,
    maker: side(maker.accountId, makerSide, 'maker', maker.mode, maker.realized),
    taker: side(taker.accountId, takerSide, 'taker', taker.mode, taker.realized),
    at,
  };
}
