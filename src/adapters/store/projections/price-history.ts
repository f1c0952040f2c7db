/**
 * Mark and index history: one-minute candles of the mark price and the index price of every linear
 * market (perpetuals and dated futures), written from the core's `mark` events, and the reads
 * behind `GET /perps/ohlc?price=mark|index`. Part of the market history (market-history.ts owns
 * it, hands it the events and aggregates its rows with the trade candles' bar builder).
 *
 * Source: the linear engine emits a `mark` event per open market on every clock tick and on every
 * index input (feed observation or push), carrying the mark and the index it was computed from, so
 * every index value that moved a mark reaches a candle. Both are exact decimals written as TEXT
 * (formatDecimal); a side without a value (stale index, no mark yet) leaves its columns NULL for
 * that minute when nothing else fills them, and reads omit such minutes.
 *
 * Storage: `prices_1m` keyed by (market, minute start in Unix seconds), one row per market and
 * minute holding both series (mark o/h/l/c, index o/h/l/c): markets x 1,440 rows a day, kept for
 * the life of the history like the trade candles; reads are capped to 90 days by the route.
 *
 * Tested by price-history.test.ts and test/api/price-candles.test.ts (over HTTP).
 */
import { formatDecimal, max, min, type Fixed } from '../../../core/money.ts';
import type { PriceSeries } from '../../../gateway/history-port.ts';
import type { Db } from '../database.ts';
import { storedDecimal } from '../stored-decimal.ts';

export const PRICE_MIGRATIONS = [
  {
    id: '0302_price_history',
    sql: `
      CREATE TABLE prices_1m (
        market_id TEXT NOT NULL, t INTEGER NOT NULL,
        mo TEXT, mh TEXT, ml TEXT, mc TEXT, io TEXT, ih TEXT, il TEXT, ic TEXT,
        PRIMARY KEY (market_id, t)) WITHOUT ROWID;`,
  },
];

/** The price series a candle request can ask for besides trades. */
export type { PriceSeries };

/** Open, high, low and close of one series within a minute. */
interface Ohlc {
  readonly o: Fixed;
  readonly h: Fixed;
  readonly l: Fixed;
  readonly c: Fixed;
}

/** A market's minute: each series' candle, or null while it had no value. */
interface Minute {
  readonly t: number;
  readonly mark: Ohlc | null;
  readonly index: Ohlc | null;
}

/** The columns of a stored minute: t, then mark o/h/l/c, then index o/h/l/c (NULL when absent). */
type StoredRow = [number, ...(string | null)[]];

/** [t, o, h, l, c, v, n] of one series, in the trade candles' raw row shape (v "0", n 0). */
export type SeriesRow = [number, string, string, string, string, string, number];

const point = (p: Fixed | null): Ohlc | null => (p === null ? null : { o: p, h: p, l: p, c: p });

function foldSeries(a: Ohlc | null, b: Ohlc | null): Ohlc | null {
  if (a === null) return b;
  if (b === null) return a;
  return { o: a.o, h: max(a.h, b.h), l: min(a.l, b.l), c: b.c };
}

const fold = (a: Minute, b: Minute): Minute => ({
  t: a.t, mark: foldSeries(a.mark, b.mark), index: foldSeries(a.index, b.index),
});

export class PriceHistory {
  private stmts: ReturnType<PriceHistory['prepare']> | null = null;
  /** This batch's minutes, merged in memory and written once per (market, minute). */
  private readonly pending = new Map<string, { marketId: string; minute: Minute }>();

  constructor(private readonly db: Db) {}

  /** The mark and index of `marketId` the core computed at `at` (service time, ms). */
  record(marketId: string, at: number, mark: Fixed | null, index: Fixed | null): void {
    if (mark === null && index === null) return;
    const t = Math.floor(at / 60_000) * 60;
    const one: Minute = { t, mark: point(mark), index: point(index) };
    const key = `${marketId}|${t}`;
    const held = this.pending.get(key);
    if (held !== undefined) {
      held.minute = fold(held.minute, one);
      return;
    }
    const s = (this.stmts ??= this.prepare());
    const row = s.minute.get(marketId, t) as StoredRow | undefined;
    this.pending.set(key, { marketId, minute: row === undefined ? one : fold(toMinute(row), one) });
  }

  endBatch(): void {
    if (this.pending.size === 0) return;
    const s = (this.stmts ??= this.prepare());
    for (const { marketId, minute: m } of this.pending.values()) {
      s.upsert.run(marketId, m.t, ...columns(m.mark), ...columns(m.index));
    }
    this.pending.clear();
  }

  /**
   * The minute rows of `series` with start in [first, end), oldest first or newest first, as raw
   * rows the trade candles' bar builder folds (volume "0", no fills); minutes without the series
   * are skipped.
   */
  rows(marketId: string, series: PriceSeries, first: number, end: number, newestFirst: boolean): Iterable<SeriesRow> {
    const s = (this.stmts ??= this.prepare());
    const stmt = series === 'mark'
      ? (newestFirst ? s.markDesc : s.mark)
      : (newestFirst ? s.indexDesc : s.index);
    return stmt.iterate(marketId, first, end) as Iterable<SeriesRow>;
  }

  /** Start (Unix seconds) of the newest minute of `series` before `sec`, or null. */
  lastMinuteBefore(marketId: string, series: PriceSeries, sec: number): number | null {
    const s = (this.stmts ??= this.prepare());
    const row = (series === 'mark' ? s.markBefore : s.indexBefore).get(marketId, sec) as { t: number } | undefined;
    return row?.t ?? null;
  }

  private prepare() {
    const select = (p: 'm' | 'i', order: 'ASC' | 'DESC') => this.db.prepare(
      `SELECT t, ${p}o, ${p}h, ${p}l, ${p}c, '0', 0 FROM prices_1m
       WHERE market_id = ? AND t >= ? AND t < ? AND ${p}o IS NOT NULL ORDER BY t ${order}`,
    ).raw();
    const before = (p: 'm' | 'i') => this.db.prepare(
      `SELECT t FROM prices_1m WHERE market_id = ? AND t < ? AND ${p}o IS NOT NULL ORDER BY t DESC LIMIT 1`,
    );
    return {
      minute: this.db.prepare('SELECT t, mo, mh, ml, mc, io, ih, il, ic FROM prices_1m WHERE market_id = ? AND t = ?').raw(),
      upsert: this.db.prepare(
        `INSERT INTO prices_1m (market_id, t, mo, mh, ml, mc, io, ih, il, ic) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (market_id, t) DO UPDATE SET mo = excluded.mo, mh = excluded.mh, ml = excluded.ml,
         mc = excluded.mc, io = excluded.io, ih = excluded.ih, il = excluded.il, ic = excluded.ic`,
      ),
      mark: select('m', 'ASC'),
      markDesc: select('m', 'DESC'),
      index: select('i', 'ASC'),
      indexDesc: select('i', 'DESC'),
      markBefore: before('m'),
      indexBefore: before('i'),
    };
  }
}

/** A series' four columns as stored: decimal text, or NULLs without a value. */
function columns(s: Ohlc | null): (string | null)[] {
  return s === null ? [null, null, null, null] : [formatDecimal(s.o), formatDecimal(s.h), formatDecimal(s.l), formatDecimal(s.c)];
}

/** A series' four stored columns (all set or all NULL, as `columns` writes them) as exact values. */
function toSeries([o, h, l, c]: (string | null)[]): Ohlc | null {
  if (typeof o !== 'string' || typeof h !== 'string' || typeof l !== 'string' || typeof c !== 'string') return null;
  return { o: storedDecimal(o), h: storedDecimal(h), l: storedDecimal(l), c: storedDecimal(c) };
}

function toMinute([t, ...prices]: StoredRow): Minute {
  return { t, mark: toSeries(prices.slice(0, 4)), index: toSeries(prices.slice(4, 8)) };
}
