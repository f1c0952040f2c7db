/**
 * The history read port: exactly the reads the routes and streams make of the history tables
 * (orders, fills, the public tape, the ledger, settlements, candles). The gateway owns it, so
 * gateway/ imports no adapter (docs/architecture.md "History"); the SQLite projections
 * (adapters/store/projections/) implement it in the embedded default, the PostgreSQL history
 * (adapters/postgres/history/) in the distributed mode. A read may answer at once or with a
 * promise: callers always await it. Reads go through `histories(ctx)` (context.ts), which first
 * waits until the tables hold everything acknowledged.
 */
import type { SettlementRecord } from '../core/events.ts';
import type { LedgerEntryType } from '../core/ledger/ledger.ts';
import type { Fixed } from '../core/money.ts';
import type { EngineName, Liquidity, MarginMode, OrderRecord, OrderStatus, SideName } from '../core/records.ts';
import type { SettlementKind, SettlementStatus } from '../core/wallet/wallet.ts';

/** A read that a store answers synchronously (SQLite) or asynchronously (PostgreSQL). */
export type HistoryRead<T> = T | Promise<T>;

// ---- candles ----

export const RESOLUTIONS = ['1', '5', '15', '30', '60', '240', 'D'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** Bucket length in seconds of each resolution. */
export const RESOLUTION_SECONDS: Readonly<Record<Resolution, number>> = {
  '1': 60,
  '5': 300,
  '15': 900,
  '30': 1800,
  '60': 3600,
  '240': 14_400,
  D: 86_400,
};

/** The candles of the mark or of the index price (beside those of the trades). */
export type PriceSeries = 'mark' | 'index';

/** A bar of the requested resolution; prices and volume are exact decimal strings. */
export interface Bar {
  /** Bucket start, Unix seconds. */
  readonly t: number;
  readonly o: string;
  readonly h: string;
  readonly l: string;
  readonly c: string;
  /** Base quantity traded. */
  readonly v: string;
  /** Number of fills. */
  readonly n: number;
}

export interface Stats24h {
  readonly open: Fixed | null;
  readonly high: Fixed | null;
  readonly low: Fixed | null;
  readonly last: Fixed | null;
  /** Base quantity traded. */
  readonly volumeBase: Fixed;
  /** Quote notional traded (sum of price x quantity). */
  readonly volumeQuote: Fixed;
  readonly trades: number;
}

/** One bucket of DVOL: its start (Unix seconds) and open, high, low and close (percent, decimal strings). */
export interface DvolBar {
  readonly t: number;
  readonly open: string;
  readonly high: string;
  readonly low: string;
  readonly close: string;
}

// ---- trading ----

export interface OrderQuery {
  readonly accountId: number;
  readonly engine: EngineName;
  readonly limit: number;
  readonly marketId?: string;
  readonly marginMode?: MarginMode;
  readonly status?: OrderStatus;
  readonly clientOrderId?: string;
  /** Orders with an id below this (newest first paging). */
  readonly beforeId?: number;
}

export interface TradeRow {
  readonly tradeId: string;
  readonly orderId: string;
  readonly marketId: string;
  readonly side: SideName;
  readonly price: Fixed;
  readonly quantity: Fixed;
  readonly liquidity: Liquidity;
  readonly fee: Fixed;
  readonly feeBps: Fixed;
  readonly realizedPnl: Fixed;
  readonly marginMode: MarginMode;
  readonly createdAt: number;
}

/** A trade of the public tape: no account, order or fee. */
export interface PublicTrade {
  readonly tradeId: string;
  readonly marketId: string;
  readonly price: Fixed;
  readonly quantity: Fixed;
  /** The taker's (aggressor's) side. */
  readonly takerSide: SideName;
  readonly createdAt: number;
}

export interface TradeQuery {
  readonly accountId: number;
  readonly engine: EngineName;
  readonly limit: number;
  readonly marketId?: string;
  readonly beforeId?: number;
}

// ---- wallet ----

export interface HistoryEntry {
  readonly id: number;
  readonly type: LedgerEntryType;
  readonly bucket: string;
  readonly asset: string;
  readonly amount: Fixed;
  readonly balanceAfter: Fixed;
  readonly ref: string | null;
  readonly txHash: string | null;
  readonly createdAt: number;
}

export interface SettlementQuery {
  readonly accountId: number;
  readonly kind?: SettlementKind;
  readonly status?: SettlementStatus;
  readonly limit: number;
  /** Only records created strictly before this settlement id's row (cursor pagination). */
  readonly before?: { createdAt: number; id: string };
}

/** A movement of a system account (the insurance fund) and its balance after it. */
export interface SystemMovement {
  readonly at: number;
  readonly amount: Fixed;
  readonly balanceAfter: Fixed;
}

// ---- the ports ----

export interface WalletHistoryReads {
  /** The account's ledger lines, newest first; `beforeId` pages backwards. */
  history(accountId: number, limit: number, beforeId?: number): HistoryRead<HistoryEntry[]>;
  /** Deposits and withdrawals, newest first. */
  settlements(q: SettlementQuery): HistoryRead<SettlementRecord[]>;
  settlement(id: string): HistoryRead<SettlementRecord | undefined>;
  /** A system account's balance after each movement since `sinceMs`, oldest first. */
  systemHistory(name: string, asset: string, sinceMs: number): HistoryRead<SystemMovement[]>;
}

export interface TradingHistoryReads {
  order(id: number): HistoryRead<OrderRecord | undefined>;
  /** Newest first. */
  orders(q: OrderQuery): HistoryRead<OrderRecord[]>;
  /** The fills of some of an account's orders, by order id, oldest first (orders without fills absent). */
  fillsOf(accountId: number, engine: EngineName, orderIds: readonly number[]): HistoryRead<Map<string, TradeRow[]>>;
  /** Newest first. */
  trades(q: TradeQuery): HistoryRead<TradeRow[]>;
  /** A market's public trades, newest first, with a trade id below `beforeId` when given. */
  publicTrades(marketId: string, limit: number, beforeId?: number): HistoryRead<PublicTrade[]>;
  /** The market's newest public trade, or undefined before its first. */
  lastPublicTrade(marketId: string): HistoryRead<PublicTrade | undefined>;
}

export interface DvolHistoryReads {
  /** Buckets of `sizeSec` whose start lies in [fromSec, toSec], oldest first. */
  candles(underlying: string, sizeSec: number, fromSec: number, toSec: number): HistoryRead<DvolBar[]>;
}

export interface MarketHistoryReads {
  /** The DVOL candles of each underlying. */
  readonly dvol: DvolHistoryReads;
  /**
   * Bars of `resolution` whose start lies in [fromSec, toSec], oldest first; with `limit`, only the
   * newest `limit` of them. `series` picks the trades (default) or the mark or index candles.
   */
  candles(
    marketId: string, resolution: Resolution, fromSec: number, toSec: number, limit?: number,
    series?: 'trade' | PriceSeries,
  ): HistoryRead<Bar[]>;
  /** Start of the newest `resolution` bucket with data that starts before `sec`, or null (UDF `nextTime`). */
  lastBarBefore(marketId: string, sec: number, resolution?: Resolution, series?: 'trade' | PriceSeries): HistoryRead<number | null>;
  /** Open, high, low, last and volumes of the minute candles started after nowMs - 24 h. */
  stats24h(marketId: string, nowMs: number): HistoryRead<Stats24h>;
}

/** The history tables as the gateway reads them. */
export interface Histories {
  readonly wallet: WalletHistoryReads;
  readonly trading: TradingHistoryReads;
  readonly market: MarketHistoryReads;
}
