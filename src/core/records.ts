/**
 * Immutable records the engines emit in events and return in results: orders, fills and
 * positions, in domain units (exact Fixed values, ms times). The gateway formats them for the
 * wire; the store projects them into history tables; streams diff them. Both engines (linear and
 * CLOB) use these shapes so that clients see one order model.
 */
import type { Fixed } from './money.ts';

export type SideName = 'buy' | 'sell';
export type OrderType = 'limit' | 'market';
export type TimeInForce = 'gtc' | 'ioc' | 'fok';
export type MarginMode = 'cross' | 'isolated';
export type OrderStatus = 'untriggered' | 'open' | 'filled' | 'cancelled' | 'rejected' | 'expired';
export type Liquidity = 'maker' | 'taker';
export type PositionStatus = 'open' | 'closed' | 'liquidated';
export type PositionSide = 'long' | 'short';
export type EngineName = 'linear' | 'clob';

export const ORDER_STATUSES: readonly OrderStatus[] = ['untriggered', 'open', 'filled', 'cancelled', 'rejected', 'expired'];
export const TERMINAL_ORDER_STATUSES: ReadonlySet<OrderStatus> = new Set(['filled', 'cancelled', 'rejected', 'expired']);

export interface OrderRecord {
  readonly id: string;
  readonly engine: EngineName;
  readonly accountId: number;
  readonly clientOrderId: string | null;
  readonly marketId: string;
  readonly side: SideName;
  readonly type: OrderType;
  readonly price: Fixed | null;
  readonly quantity: Fixed;
  readonly filledQuantity: Fixed;
  readonly remainingQuantity: Fixed;
  readonly avgFillPrice: Fixed | null;
  readonly status: OrderStatus;
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
  readonly reduceOnly: boolean;
  readonly marginMode: MarginMode;
  readonly stopPrice: Fixed | null;
  readonly takeProfitPrice: Fixed | null;
  readonly stopLossPrice: Fixed | null;
  readonly quoteId: string | null;
  readonly rejectReason: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** An isolated perp order's chosen leverage (null: the tiers'; always null on the CLOB). */
  readonly leverage: Fixed | null;
}

/** One side of a trade, as the account that took part sees it. */
export interface FillSide {
  readonly accountId: number;
  readonly orderId: string;
  readonly side: SideName;
  readonly liquidity: Liquidity;
  readonly fee: Fixed;
  readonly feeBps: Fixed;
  readonly realizedPnl: Fixed;
  readonly marginMode: MarginMode;
}

export interface FillRecord {
  readonly tradeId: string;
  readonly engine: EngineName;
  readonly marketId: string;
  readonly price: Fixed;
  readonly quantity: Fixed;
  readonly takerSide: SideName;
  readonly maker: FillSide;
  readonly taker: FillSide;
  readonly at: number;
}

export interface PositionRecord {
  readonly id: string;
  readonly accountId: number;
  readonly marketId: string;
  readonly marginMode: MarginMode;
  readonly side: PositionSide;
  /** Absolute size; 0 once closed. */
  readonly size: Fixed;
  readonly entryPrice: Fixed | null;
  readonly realizedPnl: Fixed;
  readonly isolatedMargin: Fixed;
  /** Funding received (positive) or paid (negative) over the position's life. */
  readonly funding: Fixed;
  readonly status: PositionStatus;
  readonly openedAt: number;
  readonly updatedAt: number;
}
