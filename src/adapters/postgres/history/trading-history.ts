/**
 * The reads of the trading history in PostgreSQL, as TradingHistory answers them from SQLite
 * (src/adapters/store/projections/trading-history.ts): one order, an account's orders and trades
 * (newest first, paged by id, filtered), the fills of some orders, and a market's public trade
 * tape. The same parameters and results, returned as promises; PgHistoryProjector writes the rows.
 * And the retention of orders that ended without a fill (`pruneUnfilled`, as TradingHistory's).
 */
import type pg from 'pg';
import type {
  EngineName, Liquidity, MarginMode, OrderRecord, OrderStatus, OrderType, SideName, TimeInForce,
} from '../../../core/records.ts';
import type { OrderQuery, PublicTrade, TradeQuery, TradeRow, TradingHistoryReads } from '../../../gateway/history-port.ts';
import type { UnfilledRetention } from '../../store/projections/trading-history.ts';
import { fixed, fixedOrNull, int } from './values.ts';

interface OrderRow {
  id: string; engine: EngineName; account_id: string; market_id: string; client_order_id: string | null;
  side: SideName; type: OrderType; price: string | null; quantity: string; filled_quantity: string;
  remaining_quantity: string; avg_fill_price: string | null; status: OrderStatus; time_in_force: TimeInForce;
  post_only: boolean; reduce_only: boolean; margin_mode: MarginMode; stop_price: string | null;
  take_profit_price: string | null; stop_loss_price: string | null; quote_id: string | null;
  reject_reason: string | null; created_at: string; updated_at: string; leverage: string | null;
}

interface TradeDbRow {
  trade_id: string; order_id: string; market_id: string; side: SideName; price: string; quantity: string;
  liquidity: Liquidity; fee: string; fee_bps: string; realized_pnl: string; margin_mode: MarginMode; created_at: string;
}

interface TapeDbRow {
  trade_id: string; price: string; quantity: string; taker_side: SideName; created_at: string;
}

/** Orders that ended without a fill, of one kind, ended before $1, oldest first, at most $2 (a partial index each). */
const prune = (quotes: boolean): string => `DELETE FROM orders WHERE id IN (SELECT id FROM orders
  WHERE status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = 0 AND quote_id IS ${quotes ? 'NOT NULL' : 'NULL'}
    AND updated_at < $1 ORDER BY updated_at LIMIT $2)`;

const TRADE_COLUMNS = 'trade_id, order_id, market_id, side, price, quantity, liquidity, fee, fee_bps, realized_pnl, margin_mode, created_at';
const TAPE = `SELECT trade_id, price, quantity, taker_side, created_at FROM market_trades
  WHERE market_id = $1 AND trade_id < $2 ORDER BY trade_id DESC LIMIT $3`;

export class PgTradingHistory implements TradingHistoryReads {
  constructor(private readonly pool: pg.Pool) {}

  async order(id: number): Promise<OrderRecord | undefined> {
    const { rows } = await this.pool.query<OrderRow>({ name: 'trading-order', text: 'SELECT * FROM orders WHERE id = $1', values: [id] });
    return rows.length === 0 ? undefined : toOrder(rows[0]!);
  }

  async orders(q: OrderQuery): Promise<OrderRecord[]> {
    const args: (string | number)[] = [q.accountId, q.engine, q.beforeId ?? Number.MAX_SAFE_INTEGER];
    const where = ['account_id = $1', 'engine = $2', 'id < $3'];
    const filters: [string, string | undefined][] = [
      ['market_id', q.marketId], ['margin_mode', q.marginMode], ['status', q.status], ['client_order_id', q.clientOrderId],
    ];
    for (const [column, value] of filters) if (value !== undefined) where.push(`${column} = $${args.push(value)}`);
    const sql = `SELECT * FROM orders WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${args.push(q.limit)}`;
    return (await this.pool.query<OrderRow>(sql, args)).rows.map(toOrder);
  }

  /** The fills of some of an account's orders, by order id, oldest first (orders without fills absent). */
  async fillsOf(accountId: number, engine: EngineName, orderIds: readonly number[]): Promise<Map<string, TradeRow[]>> {
    const byOrder = new Map<string, TradeRow[]>();
    if (orderIds.length === 0) return byOrder;
    const { rows } = await this.pool.query<TradeDbRow>({
      name: 'trading-fills-of',
      text: `SELECT ${TRADE_COLUMNS} FROM trades WHERE account_id = $1 AND engine = $2 AND order_id = ANY($3::bigint[]) ORDER BY trade_id`,
      values: [accountId, engine, orderIds],
    });
    for (const row of rows.map(toTrade)) {
      const list = byOrder.get(row.orderId);
      if (list === undefined) byOrder.set(row.orderId, [row]);
      else list.push(row);
    }
    return byOrder;
  }

  async trades(q: TradeQuery): Promise<TradeRow[]> {
    const args: (string | number)[] = [q.accountId, q.engine, q.beforeId ?? Number.MAX_SAFE_INTEGER];
    const market = q.marketId === undefined ? '' : ` AND market_id = $${args.push(q.marketId)}`;
    const sql = `SELECT ${TRADE_COLUMNS} FROM trades WHERE account_id = $1 AND engine = $2 AND trade_id < $3${market}
      ORDER BY trade_id DESC LIMIT $${args.push(q.limit)}`;
    return (await this.pool.query<TradeDbRow>(sql, args)).rows.map(toTrade);
  }

  /** A market's public trades, newest first: at most `limit`, with a trade id below `beforeId` when given. */
  async publicTrades(marketId: string, limit: number, beforeId?: number): Promise<PublicTrade[]> {
    const { rows } = await this.pool.query<TapeDbRow>({ name: 'trading-tape', text: TAPE, values: [marketId, beforeId ?? Number.MAX_SAFE_INTEGER, limit] });
    return rows.map((r) => toPublicTrade(marketId, r));
  }

  /** The market's newest public trade, or undefined before its first. */
  async lastPublicTrade(marketId: string): Promise<PublicTrade | undefined> {
    const { rows } = await this.pool.query<TapeDbRow>({ name: 'trading-tape', text: TAPE, values: [marketId, Number.MAX_SAFE_INTEGER, 1] });
    return rows.length === 0 ? undefined : toPublicTrade(marketId, rows[0]!);
  }

  /**
   * Deletes at most `limit` orders that ended (cancelled, expired, rejected) with nothing filled
   * longer than their retention before `now` (service time: the projector's newest command's),
   * bulk-quote orders first, oldest first, and returns how many: TradingHistory.pruneUnfilled.
   * Orders with any fill, and fills, are never deleted. An ended order gets no later event, so a
   * chunk may run beside the projection, each in a transaction of its own; run it in small
   * chunks, and reads then answer for a pruned order as for an unknown one.
   */
  async pruneUnfilled(now: number, retention: UnfilledRetention, limit: number): Promise<number> {
    const quotes = (await this.pool.query({ name: 'prune-quotes', text: prune(true), values: [now - retention.unfilledQuoteRetentionMs, limit] })).rowCount ?? 0;
    if (quotes >= limit) return quotes;
    const orders = await this.pool.query({ name: 'prune-orders', text: prune(false), values: [now - retention.unfilledOrderRetentionMs, limit - quotes] });
    return quotes + (orders.rowCount ?? 0);
  }
}

function toPublicTrade(marketId: string, r: TapeDbRow): PublicTrade {
  return { tradeId: r.trade_id, marketId, price: fixed(r.price), quantity: fixed(r.quantity), takerSide: r.taker_side, createdAt: int(r.created_at) };
}

function toTrade(r: TradeDbRow): TradeRow {
  return {
    tradeId: r.trade_id,
    orderId: r.order_id,
    marketId: r.market_id,
    side: r.side,
    price: fixed(r.price),
    quantity: fixed(r.quantity),
    liquidity: r.liquidity,
    fee: fixed(r.fee),
    feeBps: fixed(r.fee_bps),
    realizedPnl: fixed(r.realized_pnl),
    marginMode: r.margin_mode,
    createdAt: int(r.created_at),
  };
}

function toOrder(r: OrderRow): OrderRecord {
  return {
    id: r.id,
    engine: r.engine,
    accountId: int(r.account_id),
    clientOrderId: r.client_order_id,
    marketId: r.market_id,
    side: r.side,
    type: r.type,
    price: fixedOrNull(r.price),
    quantity: fixed(r.quantity),
    filledQuantity: fixed(r.filled_quantity),
    remainingQuantity: fixed(r.remaining_quantity),
    avgFillPrice: fixedOrNull(r.avg_fill_price),
    status: r.status,
    timeInForce: r.time_in_force,
    postOnly: r.post_only,
    reduceOnly: r.reduce_only,
    marginMode: r.margin_mode,
    stopPrice: fixedOrNull(r.stop_price),
    takeProfitPrice: fixedOrNull(r.take_profit_price),
    stopLossPrice: fixedOrNull(r.stop_loss_price),
    quoteId: r.quote_id,
    rejectReason: r.reject_reason,
    createdAt: int(r.created_at),
    updatedAt: int(r.updated_at),
    leverage: fixedOrNull(r.leverage),
  };
}
