/**
 * History of trading: every order's latest state and every fill, one row per participating
 * account, written from the core's `order` and `fill` events inside the journal transaction. It
 * serves the order and trade lists of both engines (`/perps/orders`, `/perps/trades`,
 * `/orders/me`, `/options/trades/me`) and tells a cancel of a finished order (409) from one of an
 * unknown order (404). Exact decimals are stored as TEXT.
 *
 * The public trade tape (`market_trades`): one more row per fill, keyed by market and trade id,
 * with no account, order or fee: what `GET /markets/{marketId}/trades` pages through newest first,
 * what the trades stream opens with, and the last price of the market stats.
 *
 * Retention: orders that ended without any fill leave the history after a retention
 * (`pruneUnfilled`, HISTORY_UNFILLED_*_RETENTION_MS); orders with a fill, every fill and the
 * public tape stay.
 */
import type { ExchangeEvent } from '../../../core/events.ts';
import { formatDecimal, type Fixed } from '../../../core/money.ts';
import type {
  EngineName,
  FillSide,
  Liquidity,
  MarginMode,
  OrderRecord,
  OrderStatus,
  OrderType,
  SideName,
  TimeInForce,
} from '../../../core/records.ts';
import type { OrderQuery, PublicTrade, TradeQuery, TradeRow, TradingHistoryReads } from '../../../gateway/history-port.ts';
import type { Db } from '../database.ts';
import type { Projector } from '../journal.ts';
import { storedDecimal, storedDecimalOrNull } from '../stored-decimal.ts';

const MIGRATIONS = [
  {
    id: '0200_trading_history',
    sql: `
      CREATE TABLE orders (
        id INTEGER PRIMARY KEY, engine TEXT NOT NULL, account_id INTEGER NOT NULL, market_id TEXT NOT NULL,
        client_order_id TEXT, side TEXT NOT NULL, type TEXT NOT NULL, price TEXT, quantity TEXT NOT NULL,
        filled_quantity TEXT NOT NULL, remaining_quantity TEXT NOT NULL, avg_fill_price TEXT, status TEXT NOT NULL,
        time_in_force TEXT NOT NULL, post_only INTEGER NOT NULL, reduce_only INTEGER NOT NULL, margin_mode TEXT NOT NULL,
        stop_price TEXT, take_profit_price TEXT, stop_loss_price TEXT, quote_id TEXT, reject_reason TEXT,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
      CREATE INDEX orders_by_account ON orders (account_id, engine, id DESC);
      CREATE TABLE trades (
        trade_id INTEGER NOT NULL, account_id INTEGER NOT NULL, engine TEXT NOT NULL, order_id INTEGER NOT NULL,
        market_id TEXT NOT NULL, side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL,
        liquidity TEXT NOT NULL, fee TEXT NOT NULL, fee_bps TEXT NOT NULL, realized_pnl TEXT NOT NULL,
        margin_mode TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (trade_id, account_id));
      CREATE INDEX trades_by_account ON trades (account_id, engine, trade_id DESC);
      CREATE INDEX trades_by_market ON trades (market_id, trade_id DESC);`,
  },
  {
    // Every fill writes two trade rows inside the durable transaction. Keyed by how they are read
    // (an account's trades on one engine, newest first) in a WITHOUT ROWID table, a row is one
    // B-tree insert instead of four (the table, its primary-key index, by-account, by-market; no
    // query reads this table by market: the public tape has its own table, 0205).
    id: '0201_trades_clustered_by_account',
    sql: `
      CREATE TABLE trades_by_account_key (
        trade_id INTEGER NOT NULL, account_id INTEGER NOT NULL, engine TEXT NOT NULL, order_id INTEGER NOT NULL,
        market_id TEXT NOT NULL, side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL,
        liquidity TEXT NOT NULL, fee TEXT NOT NULL, fee_bps TEXT NOT NULL, realized_pnl TEXT NOT NULL,
        margin_mode TEXT NOT NULL, created_at INTEGER NOT NULL,
        PRIMARY KEY (account_id, engine, trade_id)) WITHOUT ROWID;
      INSERT INTO trades_by_account_key SELECT trade_id, account_id, engine, order_id, market_id, side, price, quantity,
        liquidity, fee, fee_bps, realized_pnl, margin_mode, created_at FROM trades;
      DROP TABLE trades;
      ALTER TABLE trades_by_account_key RENAME TO trades;`,
  },
  {
    // Reconciling after a lost response: a client finds its order by the clientOrderId it sent.
    id: '0202_orders_by_client_id',
    sql: `CREATE INDEX orders_by_client_id ON orders (account_id, client_order_id) WHERE client_order_id IS NOT NULL;`,
  },
  {
    // Order reads carry the order's fills (decisions.md "Order object"): a page of orders finds them
    // in one indexed lookup instead of a walk of the account's trades.
    id: '0203_trades_by_order',
    sql: `CREATE INDEX trades_by_order ON trades (account_id, engine, order_id);`,
  },
  {
    // Orders that ended without a fill leave the history after a retention (`pruneUnfilled`): these
    // partial indexes hold just them, by the time they ended, one for bulk-quote orders (quote_id
    // set, replaced on every re-quote) and one for the rest, so pruning never scans the table.
    id: '0204_unfilled_ended_orders',
    sql: `
      CREATE INDEX orders_unfilled_ended_quotes ON orders (updated_at)
        WHERE status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = '0' AND quote_id IS NOT NULL;
      CREATE INDEX orders_unfilled_ended_orders ON orders (updated_at)
        WHERE status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = '0' AND quote_id IS NULL;`,
  },
  {
    // The public trade tape: one row per fill (not per side), clustered by market and trade id so a
    // page newest first, and a market's last trade, are one range read. Filled from the fills kept
    // so far (each has exactly one taker row), so an upgraded venue's tape starts with its history.
    id: '0205_market_trades',
    sql: `
      CREATE TABLE market_trades (
        market_id TEXT NOT NULL, trade_id INTEGER NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL,
        taker_side TEXT NOT NULL, created_at INTEGER NOT NULL,
        PRIMARY KEY (market_id, trade_id)) WITHOUT ROWID;
      INSERT OR IGNORE INTO market_trades (market_id, trade_id, price, quantity, taker_side, created_at)
        SELECT market_id, trade_id, price, quantity, side, created_at FROM trades WHERE liquidity = 'taker';`,
  },
  {
    // An isolated perp order's chosen leverage (null: the tiers'; orders kept before it had none).
    id: '0206_orders_leverage',
    sql: `ALTER TABLE orders ADD COLUMN leverage TEXT;`,
  },
];

/** How long orders that ended without a fill stay, by kind (config/env.ts `history`). */
export interface UnfilledRetention {
  readonly unfilledOrderRetentionMs: number;
  readonly unfilledQuoteRetentionMs: number;
}

/** The two kinds of unfilled ended orders, each with the partial index that finds them in time order. */
const UNFILLED = `status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = '0'`;
const PRUNE_QUOTES = `DELETE FROM orders WHERE id IN (SELECT id FROM orders INDEXED BY orders_unfilled_ended_quotes
  WHERE ${UNFILLED} AND quote_id IS NOT NULL AND updated_at < ? ORDER BY updated_at LIMIT ?)`;
const PRUNE_ORDERS = `DELETE FROM orders WHERE id IN (SELECT id FROM orders INDEXED BY orders_unfilled_ended_orders
  WHERE ${UNFILLED} AND quote_id IS NULL AND updated_at < ? ORDER BY updated_at LIMIT ?)`;

interface OrderRow {
  id: number; engine: EngineName; account_id: number; market_id: string; client_order_id: string | null;
  side: SideName; type: OrderType; price: string | null; quantity: string; filled_quantity: string;
  remaining_quantity: string; avg_fill_price: string | null; status: OrderStatus; time_in_force: TimeInForce;
  post_only: number; reduce_only: number; margin_mode: MarginMode; stop_price: string | null;
  take_profit_price: string | null; stop_loss_price: string | null; quote_id: string | null;
  reject_reason: string | null; created_at: number; updated_at: number; leverage: string | null;
}

const opt = (v: Fixed | null): string | null => (v === null ? null : formatDecimal(v));

export type { OrderQuery, PublicTrade, TradeQuery, TradeRow } from '../../../gateway/history-port.ts';

export class TradingHistory implements Projector, TradingHistoryReads {
  readonly migrations = MIGRATIONS;
  readonly consumes = ['order', 'fill'] as const;
  private stmts: ReturnType<TradingHistory['prepare']> | null = null;

  constructor(private readonly db: Db) {}

  project(event: ExchangeEvent): void {
    const s = (this.stmts ??= this.prepare());
    if (event.type === 'order') {
      const o = event.order;
      s.upsertOrder.run(
        Number(o.id), o.engine, o.accountId, o.marketId, o.clientOrderId, o.side, o.type, opt(o.price),
        formatDecimal(o.quantity), formatDecimal(o.filledQuantity), formatDecimal(o.remainingQuantity),
        opt(o.avgFillPrice), o.status, o.timeInForce, o.postOnly ? 1 : 0, o.reduceOnly ? 1 : 0, o.marginMode,
        opt(o.stopPrice), opt(o.takeProfitPrice), opt(o.stopLossPrice), o.quoteId, o.rejectReason,
        o.createdAt, o.updatedAt, opt(o.leverage),
      );
    } else if (event.type === 'fill') {
      const f = event.fill;
      const tradeId = Number(f.tradeId);
      const price = formatDecimal(f.price);
      const quantity = formatDecimal(f.quantity);
      this.insertTrade(s.insertTrade, tradeId, f.engine, f.marketId, price, quantity, f.maker, f.at);
      this.insertTrade(s.insertTrade, tradeId, f.engine, f.marketId, price, quantity, f.taker, f.at);
      s.insertTape.run(f.marketId, tradeId, price, quantity, f.takerSide, f.at);
    }
  }

  private insertTrade(
    stmt: ReturnType<TradingHistory['prepare']>['insertTrade'],
    tradeId: number, engine: EngineName, marketId: string, price: string, quantity: string, side: FillSide, at: number,
  ): void {
    stmt.run(
      tradeId, side.accountId, engine, Number(side.orderId), marketId, side.side, price,
      quantity, side.liquidity, formatDecimal(side.fee), formatDecimal(side.feeBps),
      formatDecimal(side.realizedPnl), side.marginMode, at,
    );
  }

  order(id: number): OrderRecord | undefined {
    const s = (this.stmts ??= this.prepare());
    const row = s.order.get(id) as OrderRow | undefined;
    return row === undefined ? undefined : toOrder(row);
  }

  orders(q: OrderQuery): OrderRecord[] {
    const where = ['account_id = ?', 'engine = ?', 'id < ?'];
    const args: (string | number)[] = [q.accountId, q.engine, q.beforeId ?? Number.MAX_SAFE_INTEGER];
    const filters: [string, string | undefined][] = [
      ['market_id = ?', q.marketId],
      ['margin_mode = ?', q.marginMode],
      ['status = ?', q.status],
      ['client_order_id = ?', q.clientOrderId],
    ];
    for (const [clause, value] of filters) {
      if (value === undefined) continue;
      where.push(clause);
      args.push(value);
    }
    const sql = `SELECT * FROM orders WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...args, q.limit) as OrderRow[]).map(toOrder);
  }

  /** The fills of some of an account's orders, by order id, oldest first (orders without fills absent). */
  fillsOf(accountId: number, engine: EngineName, orderIds: readonly number[]): Map<string, TradeRow[]> {
    const byOrder = new Map<string, TradeRow[]>();
    if (orderIds.length === 0) return byOrder;
    const sql = `SELECT * FROM trades WHERE account_id = ? AND engine = ? AND order_id IN (${orderIds.map(() => '?').join(',')})
      ORDER BY trade_id`;
    for (const row of (this.db.prepare(sql).all(accountId, engine, ...orderIds) as TradeDbRow[]).map(toTrade)) {
      const list = byOrder.get(row.orderId);
      if (list === undefined) byOrder.set(row.orderId, [row]);
      else list.push(row);
    }
    return byOrder;
  }

  /**
   * Deletes at most `limit` orders that ended (cancelled, expired, rejected) with nothing filled
   * longer than their retention before `now`, oldest first, and returns how many. Orders with any
   * fill, and fills themselves, are never deleted. The caller runs it in a transaction of its own,
   * in small chunks (journal-worker.ts): reads then answer for a pruned order as for an unknown one.
   */
  pruneUnfilled(now: number, retention: UnfilledRetention, limit: number): number {
    const s = (this.stmts ??= this.prepare());
    const quotes = s.pruneQuotes.run(now - retention.unfilledQuoteRetentionMs, limit).changes;
    if (quotes >= limit) return quotes;
    return quotes + s.pruneOrders.run(now - retention.unfilledOrderRetentionMs, limit - quotes).changes;
  }

  trades(q: TradeQuery): TradeRow[] {
    const where = ['account_id = ?', 'engine = ?', 'trade_id < ?'];
    const args: (string | number)[] = [q.accountId, q.engine, q.beforeId ?? Number.MAX_SAFE_INTEGER];
    if (q.marketId !== undefined) {
      where.push('market_id = ?');
      args.push(q.marketId);
    }
    const sql = `SELECT * FROM trades WHERE ${where.join(' AND ')} ORDER BY trade_id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...args, q.limit) as TradeDbRow[]).map(toTrade);
  }

  /**
   * A market's public trades, newest first: at most `limit`, with a trade id below `beforeId` when
   * given (the cursor: the smallest id of the page already read). One range read of the tape's key.
   */
  publicTrades(marketId: string, limit: number, beforeId?: number): PublicTrade[] {
    const s = (this.stmts ??= this.prepare());
    const rows = s.tape.all(marketId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as TapeDbRow[];
    const out: PublicTrade[] = new Array<PublicTrade>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = toPublicTrade(marketId, rows[i]!);
    return out;
  }

  /** The market's newest public trade, or undefined before its first. */
  lastPublicTrade(marketId: string): PublicTrade | undefined {
    const s = (this.stmts ??= this.prepare());
    const row = s.tape.get(marketId, Number.MAX_SAFE_INTEGER, 1) as TapeDbRow | undefined;
    return row === undefined ? undefined : toPublicTrade(marketId, row);
  }

  private prepare() {
    return {
      upsertOrder: this.db.prepare(
        `INSERT INTO orders (id, engine, account_id, market_id, client_order_id, side, type, price, quantity,
         filled_quantity, remaining_quantity, avg_fill_price, status, time_in_force, post_only, reduce_only,
         margin_mode, stop_price, take_profit_price, stop_loss_price, quote_id, reject_reason, created_at, updated_at, leverage)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET price = excluded.price, quantity = excluded.quantity, filled_quantity = excluded.filled_quantity,
         remaining_quantity = excluded.remaining_quantity, avg_fill_price = excluded.avg_fill_price,
         status = excluded.status, reject_reason = excluded.reject_reason, updated_at = excluded.updated_at`,
      ),
      insertTrade: this.db.prepare(
        `INSERT INTO trades (trade_id, account_id, engine, order_id, market_id, side, price, quantity, liquidity,
         fee, fee_bps, realized_pnl, margin_mode, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertTape: this.db.prepare(
        `INSERT INTO market_trades (market_id, trade_id, price, quantity, taker_side, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      tape: this.db.prepare(
        `SELECT trade_id, price, quantity, taker_side, created_at FROM market_trades
         WHERE market_id = ? AND trade_id < ? ORDER BY trade_id DESC LIMIT ?`,
      ),
      order: this.db.prepare('SELECT * FROM orders WHERE id = ?'),
      pruneQuotes: this.db.prepare(PRUNE_QUOTES),
      pruneOrders: this.db.prepare(PRUNE_ORDERS),
    };
  }
}

interface TradeDbRow {
  trade_id: number; order_id: number; market_id: string; side: SideName; price: string; quantity: string;
  liquidity: Liquidity; fee: string; fee_bps: string; realized_pnl: string; margin_mode: MarginMode; created_at: number;
}

interface TapeDbRow {
  trade_id: number; price: string; quantity: string; taker_side: SideName; created_at: number;
}

function toPublicTrade(marketId: string, r: TapeDbRow): PublicTrade {
  return {
    tradeId: String(r.trade_id),
    marketId,
    price: storedDecimal(r.price),
    quantity: storedDecimal(r.quantity),
    takerSide: r.taker_side,
    createdAt: r.created_at,
  };
}

function toTrade(r: TradeDbRow): TradeRow {
  return {
    tradeId: String(r.trade_id),
    orderId: String(r.order_id),
    marketId: r.market_id,
    side: r.side,
    price: storedDecimal(r.price),
    quantity: storedDecimal(r.quantity),
    liquidity: r.liquidity,
    fee: storedDecimal(r.fee),
    feeBps: storedDecimal(r.fee_bps),
    realizedPnl: storedDecimal(r.realized_pnl),
    marginMode: r.margin_mode,
    createdAt: r.created_at,
  };
}

function toOrder(r: OrderRow): OrderRecord {
  return {
    id: String(r.id),
    engine: r.engine,
    accountId: r.account_id,
    clientOrderId: r.client_order_id,
    marketId: r.market_id,
    side: r.side,
    type: r.type,
    price: storedDecimalOrNull(r.price),
    quantity: storedDecimal(r.quantity),
    filledQuantity: storedDecimal(r.filled_quantity),
    remainingQuantity: storedDecimal(r.remaining_quantity),
    avgFillPrice: storedDecimalOrNull(r.avg_fill_price),
    status: r.status,
    timeInForce: r.time_in_force,
    postOnly: r.post_only === 1,
    reduceOnly: r.reduce_only === 1,
    marginMode: r.margin_mode,
    stopPrice: storedDecimalOrNull(r.stop_price),
    takeProfitPrice: storedDecimalOrNull(r.take_profit_price),
    stopLossPrice: storedDecimalOrNull(r.stop_loss_price),
    quoteId: r.quote_id,
    rejectReason: r.reject_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    leverage: storedDecimalOrNull(r.leverage),
  };
}
