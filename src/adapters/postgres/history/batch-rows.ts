/**
 * One projection batch's rows, gathered from its events in seq order and merged in memory so that
 * each table is written by one multi-row statement (projector.ts): a row the batch touches twice
 * (an order placed then filled, a candle's minute with several fills) is one row here. What each
 * event writes is what the embedded projections write (src/adapters/store/projections/), so both
 * histories answer alike: users' and the insurance fund's ledger lines, settlements' latest state,
 * orders' latest state, two trade rows and one tape row per fill, and one-minute candles of trades,
 * mark and index, and DVOL. Values stay exact: decimals go to PostgreSQL as formatDecimal text.
 */
import type { ExchangeEvent, SettlementRecord } from '../../../core/events.ts';
import { ledgerKey, type LedgerEntry } from '../../../core/ledger/ledger.ts';
import { formatDecimal, max, min, mul, type Fixed } from '../../../core/money.ts';
import type { FillRecord, FillSide, OrderRecord } from '../../../core/records.ts';

/** Open, high, low and close within a minute. */
export interface Ohlc {
  readonly o: Fixed;
  readonly h: Fixed;
  readonly l: Fixed;
  readonly c: Fixed;
}

interface TradeMinute extends Ohlc {
  readonly v: Fixed;
  readonly q: Fixed;
  readonly n: number;
}

interface PriceMinute {
  readonly mark: Ohlc | null;
  readonly index: Ohlc | null;
}

/** One SQL statement of the batch: text and its parameters. */
export interface Statement {
  readonly text: string;
  readonly values: unknown[];
}

const dec = (v: Fixed): string => formatDecimal(v);
const decOrNull = (v: Fixed | null): string | null => (v === null ? null : formatDecimal(v));
const point = (p: Fixed): Ohlc => ({ o: p, h: p, l: p, c: p });

function foldOhlc(a: Ohlc | null, b: Ohlc | null): Ohlc | null {
  if (a === null) return b;
  if (b === null) return a;
  return { o: a.o, h: max(a.h, b.h), l: min(a.l, b.l), c: b.c };
}

/** The minute (Unix seconds of its start) of a time in ms. */
const minuteOf = (at: number): number => Math.floor(at / 60_000) * 60;

export class BatchRows {
  private readonly ledger: LedgerEntry[] = [];
  /** Each account's balance after its last line in the batch. */
  private readonly balances = new Map<string, { balance: Fixed; lastId: number }>();
  private readonly settlements = new Map<string, SettlementRecord>();
  private readonly orders = new Map<string, OrderRecord>();
  private readonly fills: FillRecord[] = [];
  private readonly candles = new Map<string, { marketId: string; t: number; minute: TradeMinute }>();
  private readonly prices = new Map<string, { marketId: string; t: number; minute: PriceMinute }>();
  private readonly dvol = new Map<string, { underlying: string; t: number; minute: Ohlc }>();

  add(event: ExchangeEvent): void {
    switch (event.type) {
      case 'ledger': return this.addLedger(event.entry);
      case 'settlement': return this.addSettlement(event.settlement);
      case 'order': return this.addOrder(event.order);
      case 'fill': return this.addFill(event.fill);
      case 'mark': return this.addPrices(event.marketId, event.at, event.markPrice, event.indexPrice);
      case 'board': if (event.dvol !== null) this.addDvol(event.underlying, event.at, event.dvol); return;
      default: return; // positions, alarms, index inputs, MMP trips: no history of their own
    }
  }

  private addLedger(e: LedgerEntry): void {
    // As wallet-history.ts: users' lines and the insurance fund's; other system accounts are never read back.
    if (e.account.kind === 'system' && e.account.name !== 'insurance') return;
    this.ledger.push(e);
    this.balances.set(ledgerKey(e.account), { balance: e.balanceAfter, lastId: e.entryId });
  }

  /** A settlement seen again in the batch keeps what it was created with and takes the newer state. */
  private addSettlement(r: SettlementRecord): void {
    const held = this.settlements.get(r.id);
    this.settlements.set(r.id, held === undefined ? r : {
      ...held, status: r.status, txHash: r.txHash, confirmations: r.confirmations, failureReason: r.failureReason, updatedAt: r.updatedAt,
    });
  }

  /** As the SQLite upsert: the first record's fixed fields, the latest record's changing ones. */
  private addOrder(o: OrderRecord): void {
    const held = this.orders.get(o.id);
    this.orders.set(o.id, held === undefined ? o : {
      ...held, price: o.price, quantity: o.quantity, filledQuantity: o.filledQuantity, remainingQuantity: o.remainingQuantity,
      avgFillPrice: o.avgFillPrice, status: o.status, rejectReason: o.rejectReason, updatedAt: o.updatedAt,
    });
  }

  private addFill(f: FillRecord): void {
    this.fills.push(f);
    const t = minuteOf(f.at);
    // Exact: priceDecimals + sizeDecimals <= 18 (core/markets.ts), as market-history.ts computes it.
    const one: TradeMinute = { ...point(f.price), v: f.quantity, q: mul(f.price, f.quantity, 'trunc'), n: 1 };
    const key = `${f.marketId}|${t}`;
    const held = this.candles.get(key);
    if (held === undefined) this.candles.set(key, { marketId: f.marketId, t, minute: one });
    else held.minute = { ...foldOhlc(held.minute, one)!, v: held.minute.v + one.v, q: held.minute.q + one.q, n: held.minute.n + 1 };
  }

  private addPrices(marketId: string, at: number, mark: Fixed | null, index: Fixed | null): void {
    if (mark === null && index === null) return;
    const t = minuteOf(at);
    const one: PriceMinute = { mark: mark === null ? null : point(mark), index: index === null ? null : point(index) };
    const key = `${marketId}|${t}`;
    const held = this.prices.get(key);
    if (held === undefined) this.prices.set(key, { marketId, t, minute: one });
    else held.minute = { mark: foldOhlc(held.minute.mark, one.mark), index: foldOhlc(held.minute.index, one.index) };
  }

  private addDvol(underlying: string, at: number, dvol: Fixed): void {
    const t = minuteOf(at);
    const key = `${underlying}|${t}`;
    const held = this.dvol.get(key);
    if (held === undefined) this.dvol.set(key, { underlying, t, minute: point(dvol) });
    else held.minute = foldOhlc(held.minute, point(dvol))!;
  }

  /** The batch's writes: one multi-row statement (unnest of column arrays) per table it touches. */
  statements(): Statement[] {
    return [
      this.ledgerStatement(), this.balancesStatement(), this.settlementsStatement(), this.ordersStatement(),
      ...this.fillStatements(), this.candlesStatement(), this.pricesStatement(), this.dvolStatement(),
    ].filter((s): s is Statement => s !== null);
  }

  private ledgerStatement(): Statement | null {
    const rows = this.ledger;
    if (rows.length === 0) return null;
    const user = (e: LedgerEntry) => (e.account.kind === 'user' ? e.account : null);
    return insert('ledger_entries', [
      ['id', 'bigint', rows.map((e) => e.entryId)],
      ['tx_id', 'bigint', rows.map((e) => e.txId)],
      ['account_id', 'bigint', rows.map((e) => user(e)?.accountId ?? null)],
      ['system_name', 'text', rows.map((e) => (e.account.kind === 'system' ? e.account.name : null))],
      ['bucket', 'text', rows.map((e) => user(e)?.bucket ?? null)],
      ['asset', 'text', rows.map((e) => e.account.asset)],
      ['type', 'text', rows.map((e) => e.type)],
      ['amount', 'numeric', rows.map((e) => dec(e.amount))],
      ['balance_after', 'numeric', rows.map((e) => dec(e.balanceAfter))],
      ['ref', 'text', rows.map((e) => e.ref)],
      ['tx_hash', 'text', rows.map((e) => e.txHash)],
      ['created_at', 'bigint', rows.map((e) => e.at)],
    ], '');
  }

  private balancesStatement(): Statement | null {
    if (this.balances.size === 0) return null;
    const rows = [...this.balances];
    return insert('ledger_balances', [
      ['account_key', 'text', rows.map(([key]) => key)],
      ['balance_after', 'numeric', rows.map(([, b]) => dec(b.balance))],
      ['last_id', 'bigint', rows.map(([, b]) => b.lastId)],
    ], `ON CONFLICT (account_key) DO UPDATE SET balance_after = excluded.balance_after, last_id = excluded.last_id
        WHERE excluded.last_id > ledger_balances.last_id`);
  }

  private settlementsStatement(): Statement | null {
    if (this.settlements.size === 0) return null;
    const rows = [...this.settlements.values()];
    return insert('settlements', [
      ['id', 'text', rows.map((r) => r.id)],
      ['account_id', 'bigint', rows.map((r) => r.accountId)],
      ['kind', 'text', rows.map((r) => r.kind)],
      ['status', 'text', rows.map((r) => r.status)],
      ['amount', 'numeric', rows.map((r) => dec(r.amount))],
      ['asset', 'text', rows.map((r) => r.asset)],
      ['wallet_address', 'text', rows.map((r) => r.walletAddress)],
      ['tx_hash', 'text', rows.map((r) => r.txHash)],
      ['confirmations', 'integer', rows.map((r) => r.confirmations)],
      ['failure_reason', 'text', rows.map((r) => r.failureReason)],
      ['created_at', 'bigint', rows.map((r) => r.createdAt)],
      ['updated_at', 'bigint', rows.map((r) => r.updatedAt)],
    ], `ON CONFLICT (id) DO UPDATE SET status = excluded.status, tx_hash = excluded.tx_hash,
        confirmations = excluded.confirmations, failure_reason = excluded.failure_reason, updated_at = excluded.updated_at`);
  }

  private ordersStatement(): Statement | null {
    if (this.orders.size === 0) return null;
    const rows = [...this.orders.values()];
    return insert('orders', [
      ['id', 'bigint', rows.map((o) => o.id)],
      ['engine', 'text', rows.map((o) => o.engine)],
      ['account_id', 'bigint', rows.map((o) => o.accountId)],
      ['market_id', 'text', rows.map((o) => o.marketId)],
      ['client_order_id', 'text', rows.map((o) => o.clientOrderId)],
      ['side', 'text', rows.map((o) => o.side)],
      ['type', 'text', rows.map((o) => o.type)],
      ['price', 'numeric', rows.map((o) => decOrNull(o.price))],
      ['quantity', 'numeric', rows.map((o) => dec(o.quantity))],
      ['filled_quantity', 'numeric', rows.map((o) => dec(o.filledQuantity))],
      ['remaining_quantity', 'numeric', rows.map((o) => dec(o.remainingQuantity))],
      ['avg_fill_price', 'numeric', rows.map((o) => decOrNull(o.avgFillPrice))],
      ['status', 'text', rows.map((o) => o.status)],
      ['time_in_force', 'text', rows.map((o) => o.timeInForce)],
      ['post_only', 'boolean', rows.map((o) => o.postOnly)],
      ['reduce_only', 'boolean', rows.map((o) => o.reduceOnly)],
      ['margin_mode', 'text', rows.map((o) => o.marginMode)],
      ['stop_price', 'numeric', rows.map((o) => decOrNull(o.stopPrice))],
      ['take_profit_price', 'numeric', rows.map((o) => decOrNull(o.takeProfitPrice))],
      ['stop_loss_price', 'numeric', rows.map((o) => decOrNull(o.stopLossPrice))],
      ['quote_id', 'text', rows.map((o) => o.quoteId)],
      ['reject_reason', 'text', rows.map((o) => o.rejectReason)],
      ['created_at', 'bigint', rows.map((o) => o.createdAt)],
      ['updated_at', 'bigint', rows.map((o) => o.updatedAt)],
      ['leverage', 'numeric', rows.map((o) => decOrNull(o.leverage))],
    ], `ON CONFLICT (id) DO UPDATE SET price = excluded.price, quantity = excluded.quantity,
        filled_quantity = excluded.filled_quantity, remaining_quantity = excluded.remaining_quantity,
        avg_fill_price = excluded.avg_fill_price, status = excluded.status, reject_reason = excluded.reject_reason,
        updated_at = excluded.updated_at`);
  }

  /** Two trade rows per fill (maker, then taker) and one row of the public tape. */
  private fillStatements(): Statement[] {
    if (this.fills.length === 0) return [];
    const sides: { f: FillRecord; s: FillSide }[] = this.fills.flatMap((f) => [{ f, s: f.maker }, { f, s: f.taker }]);
    const fills = this.fills;
    return [
      insert('trades', [
        ['trade_id', 'bigint', sides.map(({ f }) => f.tradeId)],
        ['account_id', 'bigint', sides.map(({ s }) => s.accountId)],
        ['engine', 'text', sides.map(({ f }) => f.engine)],
        ['order_id', 'bigint', sides.map(({ s }) => s.orderId)],
        ['market_id', 'text', sides.map(({ f }) => f.marketId)],
        ['side', 'text', sides.map(({ s }) => s.side)],
        ['price', 'numeric', sides.map(({ f }) => dec(f.price))],
        ['quantity', 'numeric', sides.map(({ f }) => dec(f.quantity))],
        ['liquidity', 'text', sides.map(({ s }) => s.liquidity)],
        ['fee', 'numeric', sides.map(({ s }) => dec(s.fee))],
        ['fee_bps', 'numeric', sides.map(({ s }) => dec(s.feeBps))],
        ['realized_pnl', 'numeric', sides.map(({ s }) => dec(s.realizedPnl))],
        ['margin_mode', 'text', sides.map(({ s }) => s.marginMode)],
        ['created_at', 'bigint', sides.map(({ f }) => f.at)],
      ], ''),
      insert('market_trades', [
        ['market_id', 'text', fills.map((f) => f.marketId)],
        ['trade_id', 'bigint', fills.map((f) => f.tradeId)],
        ['price', 'numeric', fills.map((f) => dec(f.price))],
        ['quantity', 'numeric', fills.map((f) => dec(f.quantity))],
        ['taker_side', 'text', fills.map((f) => f.takerSide)],
        ['created_at', 'bigint', fills.map((f) => f.at)],
      ], ''),
    ];
  }

  /**
   * A minute already stored keeps its open; later fills move high, low, close and add up. A sum
   * keeps its operands' scale ('0.05' + '0.05' is '0.10'): trim_scale stores it as formatDecimal
   * writes it, so the rows do not depend on where batches were cut.
   */
  private candlesStatement(): Statement | null {
    if (this.candles.size === 0) return null;
    const rows = [...this.candles.values()];
    return insert('candles_1m', [
      ['market_id', 'text', rows.map((r) => r.marketId)],
      ['t', 'bigint', rows.map((r) => r.t)],
      ['o', 'numeric', rows.map((r) => dec(r.minute.o))],
      ['h', 'numeric', rows.map((r) => dec(r.minute.h))],
      ['l', 'numeric', rows.map((r) => dec(r.minute.l))],
      ['c', 'numeric', rows.map((r) => dec(r.minute.c))],
      ['v', 'numeric', rows.map((r) => dec(r.minute.v))],
      ['q', 'numeric', rows.map((r) => dec(r.minute.q))],
      ['n', 'integer', rows.map((r) => r.minute.n)],
    ], `ON CONFLICT (market_id, t) DO UPDATE SET h = GREATEST(candles_1m.h, excluded.h), l = LEAST(candles_1m.l, excluded.l),
        c = excluded.c, v = trim_scale(candles_1m.v + excluded.v), q = trim_scale(candles_1m.q + excluded.q), n = candles_1m.n + excluded.n`);
  }

  /**
   * Each series folds into a stored minute as price-history.ts folds it: a side without a value
   * takes the other's; GREATEST and LEAST skip NULLs.
   */
  private pricesStatement(): Statement | null {
    if (this.prices.size === 0) return null;
    const rows = [...this.prices.values()];
    const series = (p: 'm' | 'i', pick: (m: PriceMinute) => Ohlc | null): Column[] => (['o', 'h', 'l', 'c'] as const).map(
      (k): Column => [`${p}${k}`, 'numeric', rows.map((r) => { const s = pick(r.minute); return s === null ? null : dec(s[k]); })],
    );
    const fold = (p: 'm' | 'i') => `${p}o = COALESCE(prices_1m.${p}o, excluded.${p}o), ${p}h = GREATEST(prices_1m.${p}h, excluded.${p}h),
        ${p}l = LEAST(prices_1m.${p}l, excluded.${p}l), ${p}c = COALESCE(excluded.${p}c, prices_1m.${p}c)`;
    return insert('prices_1m', [
      ['market_id', 'text', rows.map((r) => r.marketId)],
      ['t', 'bigint', rows.map((r) => r.t)],
      ...series('m', (m) => m.mark),
      ...series('i', (m) => m.index),
    ], `ON CONFLICT (market_id, t) DO UPDATE SET ${fold('m')}, ${fold('i')}`);
  }

  private dvolStatement(): Statement | null {
    if (this.dvol.size === 0) return null;
    const rows = [...this.dvol.values()];
    return insert('dvol_1m', [
      ['underlying', 'text', rows.map((r) => r.underlying)],
      ['t', 'bigint', rows.map((r) => r.t)],
      ['o', 'numeric', rows.map((r) => dec(r.minute.o))],
      ['h', 'numeric', rows.map((r) => dec(r.minute.h))],
      ['l', 'numeric', rows.map((r) => dec(r.minute.l))],
      ['c', 'numeric', rows.map((r) => dec(r.minute.c))],
    ], `ON CONFLICT (underlying, t) DO UPDATE SET h = GREATEST(dvol_1m.h, excluded.h), l = LEAST(dvol_1m.l, excluded.l), c = excluded.c`);
  }
}

/** A column: its name, its PostgreSQL type, and one value per row. */
type Column = [name: string, type: string, values: unknown[]];

/** INSERT of many rows in one statement: one array parameter per column, unnested together. */
function insert(table: string, columns: readonly Column[], onConflict: string): Statement {
  const names = columns.map(([name]) => name).join(', ');
  const arrays = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  return {
    text: `INSERT INTO ${table} (${names}) SELECT * FROM unnest(${arrays}) ${onConflict}`,
    values: columns.map(([, , values]) => values),
  };
}
