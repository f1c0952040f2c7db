/**
 * Market history: one-minute candles of every linear market, written from `fill` events inside
 * the journal transaction, and the reads behind `GET /perps/ohlc` and the 24-hour part of
 * `GET /perps/market-stats`; in `dvol` (dvol-history.ts), the one-minute DVOL candles of each
 * underlying written from `board` events, behind `GET /markets/dvol/history`; and in `prices`
 * (price-history.ts), the one-minute mark and index candles of each linear market written from
 * `mark` events, behind `GET /perps/ohlc?price=mark|index` (aggregated here like the trades).
 *
 * Storage: `candles_1m` keyed by (market, minute start in Unix seconds). Prices and volumes are
 * exact decimal TEXT (formatDecimal), never REAL; every sum and comparison is done with bigint in
 * JS. A fill costs one SELECT and one UPSERT on prepared statements. Fills arrive in journal
 * order and the core's clock never runs backwards, so the latest fill of a minute is its close.
 * The journal replays commands into the core on restart but does not re-project, so a fill is
 * counted exactly once.
 *
 * Reads: coarser resolutions are aggregated from the minute rows (bucket start = floor(t / size)
 * * size, so 240-minute buckets start at 00, 04, ... 20 UTC and 'D' buckets at UTC midnight).
 * Buckets without trades are omitted (UDF clients draw gaps). Bars come back as the stored exact
 * strings: highs and lows are compared as decimal text and only volumes are summed as bigint, so
 * a 90-day daily request (up to 129,600 minute rows) stays cheap. `stats24h` works at minute
 * granularity: it counts the minute candles that started strictly after now - 24 h, so a trade
 * between 23 h 59 m and 24 h old may drop out of the window up to a minute early.
 *
 * Tested by market-history.test.ts (synthetic fill events on a temporary SQLite file) and
 * test/api/market-data.test.ts (over HTTP).
 */
import type { ExchangeEvent } from '../../../core/events.ts';
import { formatDecimal, max, min, mul, type Fixed } from '../../../core/money.ts';
import type { FillRecord } from '../../../core/records.ts';
import type { Db } from '../database.ts';
import type { Projector } from '../journal.ts';
import { storedDecimal } from '../stored-decimal.ts';
import { DVOL_MIGRATIONS, DvolHistory } from './dvol-history.ts';
import { PRICE_MIGRATIONS, PriceHistory } from './price-history.ts';
import { RESOLUTION_SECONDS, type Bar, type MarketHistoryReads, type PriceSeries, type Resolution, type Stats24h } from '../../../gateway/history-port.ts';

// The read types belong to the gateway's history port; re-exported for the store's other readers.
export { RESOLUTIONS, RESOLUTION_SECONDS, type Bar, type Resolution, type Stats24h } from '../../../gateway/history-port.ts';

const MIGRATIONS = [
  {
    id: '0300_market_history',
    sql: `
      CREATE TABLE candles_1m (
        market_id TEXT NOT NULL, t INTEGER NOT NULL, o TEXT NOT NULL, h TEXT NOT NULL, l TEXT NOT NULL,
        c TEXT NOT NULL, v TEXT NOT NULL, q TEXT NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (market_id, t)) WITHOUT ROWID;`,
  },
];

const DAY_SEC = 86_400;
const BARS = 'SELECT t, o, h, l, c, v, n FROM candles_1m WHERE market_id = ? AND t >= ? AND t < ?';

/** A one-minute row as exact values (the write path and the 24-hour stats). */
interface Candle {
  readonly t: number;
  readonly o: Fixed;
  readonly h: Fixed;
  readonly l: Fixed;
  readonly c: Fixed;
  readonly v: Fixed;
  readonly q: Fixed;
  readonly n: number;
}

interface Row {
  t: number;
  o: string;
  h: string;
  l: string;
  c: string;
  v: string;
  q: string;
  n: number;
}

/** [t, o, h, l, c, v, n] as read in raw mode (no per-row object, no decimal parsing). */
type RawBarRow = [number, string, string, string, string, string, number];

const toCandle = (r: Row): Candle => ({
  t: r.t,
  o: storedDecimal(r.o),
  h: storedDecimal(r.h),
  l: storedDecimal(r.l),
  c: storedDecimal(r.c),
  v: storedDecimal(r.v),
  q: storedDecimal(r.q),
  n: r.n,
});

/** Folds a later minute into a candle that already holds earlier minutes. */
const merge = (a: Candle, b: Candle): Candle => ({
  t: a.t,
  o: a.o,
  h: max(a.h, b.h),
  l: min(a.l, b.l),
  c: b.c,
  v: a.v + b.v,
  q: a.q + b.q,
  n: a.n + b.n,
});

/**
 * a > b for decimal strings as formatDecimal writes them. Positive values (every stored price)
 * compare by integer-part length, then as text; anything signed falls back to exact parsing.
 */
export function decimalGreater(a: string, b: string): boolean {
  if (a.charCodeAt(0) === 45 || b.charCodeAt(0) === 45) return storedDecimal(a) > storedDecimal(b);
  const ia = a.indexOf('.');
  const ib = b.indexOf('.');
  const la = ia < 0 ? a.length : ia;
  const lb = ib < 0 ? b.length : ib;
  return la !== lb ? la > lb : a > b;
}

/** Accumulates minute rows into bars; `newestFirst` says in which order rows arrive. */
class BarBuilder {
  readonly bars: { t: number; o: string; h: string; l: string; c: string; v: Fixed; n: number }[] = [];

  constructor(
    private readonly size: number,
    private readonly newestFirst: boolean,
  ) {}

  /** Adds a row; returns false (and adds nothing) when it would open bar number `limit` + 1. */
  add(row: RawBarRow, limit: number): boolean {
    const [t, o, h, l, c, v, n] = row;
    const start = Math.floor(t / this.size) * this.size;
    const bar = this.bars[this.bars.length - 1];
    if (bar === undefined || bar.t !== start) {
      if (this.bars.length === limit) return false;
      this.bars.push({ t: start, o, h, l, c, v: storedDecimal(v), n });
      return true;
    }
    if (decimalGreater(h, bar.h)) bar.h = h;
    if (decimalGreater(bar.l, l)) bar.l = l;
    if (this.newestFirst) bar.o = o;
    else bar.c = c;
    bar.v += storedDecimal(v);
    bar.n += n;
    return true;
  }

  result(): Bar[] {
    const out = this.bars.map((b) => ({ ...b, v: formatDecimal(b.v) }));
    return this.newestFirst ? out.reverse() : out;
  }
}

export class MarketHistory implements Projector, MarketHistoryReads {
  readonly migrations = [...MIGRATIONS, ...DVOL_MIGRATIONS, ...PRICE_MIGRATIONS];
  readonly consumes = ['fill', 'board', 'mark'] as const;
  /** The DVOL candles of each underlying. */
  readonly dvol: DvolHistory;
  /** The mark and index candles of each linear market. */
  readonly prices: PriceHistory;
  private stmts: ReturnType<MarketHistory['prepare']> | null = null;

  constructor(private readonly db: Db) {
    this.dvol = new DvolHistory(db);
    this.prices = new PriceHistory(db);
  }

  project(event: ExchangeEvent): void {
    if (event.type === 'fill') this.record(event.fill);
    else if (event.type === 'mark') this.prices.record(event.marketId, event.at, event.markPrice, event.indexPrice);
    else if (event.type === 'board' && event.dvol !== null) this.dvol.record(event.underlying, event.at, event.dvol);
  }

  /**
   * Bars of `resolution` whose start lies in [fromSec, toSec], oldest first. With `limit`, only
   * the newest `limit` of them (rows are read newest first, so older rows are not touched).
   * `series` picks the trades (default) or the mark or index candles (their `v` is "0", `n` 0).
   */
  candles(
    marketId: string, resolution: Resolution, fromSec: number, toSec: number, limit?: number,
    series: 'trade' | PriceSeries = 'trade',
  ): Bar[] {
    const s = (this.stmts ??= this.prepare());
    const size = RESOLUTION_SECONDS[resolution];
    const first = Math.ceil(fromSec / size) * size;
    const end = Math.floor(toSec / size) * size + size; // exclusive bound on minute starts
    if (first >= end || limit === 0) return [];
    const newestFirst = limit !== undefined;
    const builder = new BarBuilder(size, newestFirst);
    const rows = series === 'trade'
      ? (newestFirst ? s.barsDesc : s.bars).iterate(marketId, first, end) as Iterable<RawBarRow>
      : this.prices.rows(marketId, series, first, end, newestFirst);
    for (const row of rows) {
      if (!builder.add(row, limit ?? Number.POSITIVE_INFINITY)) break;
    }
    return builder.result();
  }

  /**
   * Start (Unix seconds) of the newest `resolution` bucket that has trades (or, with `series`, a
   * mark or index) and starts before `sec`, or null. UDF `nextTime` for a request with no bars.
   */
  lastBarBefore(marketId: string, sec: number, resolution: Resolution = '1', series: 'trade' | PriceSeries = 'trade'): number | null {
    const s = (this.stmts ??= this.prepare());
    const size = RESOLUTION_SECONDS[resolution];
    // Every minute before this bound belongs to a bucket that starts before `sec`.
    const bound = Math.ceil(sec / size) * size;
    const t = series === 'trade'
      ? (s.before.get(marketId, bound) as { t: number } | undefined)?.t ?? null
      : this.prices.lastMinuteBefore(marketId, series, bound);
    return t === null ? null : Math.floor(t / size) * size;
  }

  /** Open, high, low, last and volumes of the minute candles started after nowMs - 24 h. */
  stats24h(marketId: string, nowMs: number): Stats24h {
    const s = (this.stmts ??= this.prepare());
    const fromSec = Math.floor((nowMs - DAY_SEC * 1000) / 1000) + 1;
    const toSec = Math.floor(nowMs / 1000) + 1;
    let acc: Candle | null = null;
    for (const row of s.range.iterate(marketId, fromSec, toSec) as Iterable<Row>) {
      const minute = toCandle(row);
      acc = acc === null ? minute : merge(acc, minute);
    }
    if (acc === null) {
      return { open: null, high: null, low: null, last: null, volumeBase: 0n, volumeQuote: 0n, trades: 0 };
    }
    return {
      open: acc.o, high: acc.h, low: acc.l, last: acc.c, volumeBase: acc.v, volumeQuote: acc.q, trades: acc.n,
    };
  }

  /** This batch's minute candles, merged in memory and written once per (market, minute). */
  private readonly pending = new Map<string, { marketId: string; candle: Candle }>();

  private record(fill: FillRecord): void {
    const s = (this.stmts ??= this.prepare());
    const t = Math.floor(fill.at / 60_000) * 60;
    // Exact: priceDecimals + sizeDecimals <= 18 (core/markets.ts), so nothing is truncated.
    const notional = mul(fill.price, fill.quantity, 'trunc');
    const price = fill.price;
    const one: Candle = { t, o: price, h: price, l: price, c: price, v: fill.quantity, q: notional, n: 1 };
    const key = `${fill.marketId}|${t}`;
    const held = this.pending.get(key);
    if (held !== undefined) {
      held.candle = merge(held.candle, one);
      return;
    }
    const row = s.minute.get(fill.marketId, t) as Row | undefined;
    this.pending.set(key, { marketId: fill.marketId, candle: row === undefined ? one : merge(toCandle(row), one) });
  }

  endBatch(): void {
    this.dvol.endBatch();
    this.prices.endBatch();
    if (this.pending.size === 0) return;
    const s = (this.stmts ??= this.prepare());
    for (const { marketId, candle: c } of this.pending.values()) {
      s.upsert.run(
        marketId, c.t, formatDecimal(c.o), formatDecimal(c.h), formatDecimal(c.l),
        formatDecimal(c.c), formatDecimal(c.v), formatDecimal(c.q), c.n,
      );
    }
    this.pending.clear();
  }

  private prepare() {
    return {
      minute: this.db.prepare('SELECT t, o, h, l, c, v, q, n FROM candles_1m WHERE market_id = ? AND t = ?'),
      upsert: this.db.prepare(
        `INSERT INTO candles_1m (market_id, t, o, h, l, c, v, q, n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (market_id, t) DO UPDATE SET h = excluded.h, l = excluded.l, c = excluded.c,
         v = excluded.v, q = excluded.q, n = excluded.n`,
      ),
      range: this.db.prepare(
        'SELECT t, o, h, l, c, v, q, n FROM candles_1m WHERE market_id = ? AND t >= ? AND t < ? ORDER BY t',
      ),
      bars: this.db.prepare(`${BARS} ORDER BY t`).raw(),
      barsDesc: this.db.prepare(`${BARS} ORDER BY t DESC`).raw(),
      before: this.db.prepare(
        'SELECT t FROM candles_1m WHERE market_id = ? AND t < ? ORDER BY t DESC LIMIT 1',
      ),
    };
  }
}
