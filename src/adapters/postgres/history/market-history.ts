/**
 * The reads of the market history in PostgreSQL, as MarketHistory answers them from SQLite
 * (src/adapters/store/projections/market-history.ts, price-history.ts, dvol-history.ts): bars of
 * trades, mark or index at any resolution, the newest bar before a time (UDF `nextTime`), the
 * 24-hour stats, and (in `dvol`) the DVOL bars of an underlying. The same parameters and results,
 * returned as promises; PgHistoryProjector writes the one-minute rows.
 *
 * Bars are aggregated in PostgreSQL from the one-minute rows, in exact numeric arithmetic, bucket
 * start = floor(t / size) * size (so 240-minute buckets start at 00, 04, ... 20 UTC and 'D'
 * buckets at UTC midnight): open is the first minute's, close the last's, high and low the
 * extremes, volume and fills the sums. Buckets without rows are omitted. Decimal results are
 * written as formatDecimal writes them (an aggregate's text may carry trailing zeros).
 */
import type pg from 'pg';
import type { Fixed } from '../../../core/money.ts';
import {
  RESOLUTION_SECONDS, type Bar, type DvolBar, type DvolHistoryReads, type MarketHistoryReads, type PriceSeries, type Resolution, type Stats24h,
} from '../../../gateway/history-port.ts';
import { canonical, fixed, int } from './values.ts';

const DAY_SEC = 86_400;

/** Where each series' minutes are: table, key column and its o/h/l/c/v/n expressions. */
const SOURCES = {
  trade: { table: 'candles_1m', key: 'market_id', o: 'o', h: 'h', l: 'l', c: 'c', v: 'v', n: 'n', present: 'TRUE' },
  mark: { table: 'prices_1m', key: 'market_id', o: 'mo', h: 'mh', l: 'ml', c: 'mc', v: '0::numeric', n: '0', present: 'mo IS NOT NULL' },
  index: { table: 'prices_1m', key: 'market_id', o: 'io', h: 'ih', l: 'il', c: 'ic', v: '0::numeric', n: '0', present: 'io IS NOT NULL' },
  dvol: { table: 'dvol_1m', key: 'underlying', o: 'o', h: 'h', l: 'l', c: 'c', v: '0::numeric', n: '0', present: 'TRUE' },
} as const;
type Source = keyof typeof SOURCES;

/**
 * Buckets of $4 seconds over the minutes of $1 with start in [$2, $3), newest first, at most $5
 * (NULL: all). floor division by hand: `%` keeps the sign of a negative t.
 */
function barsSql(source: Source): string {
  const s = SOURCES[source];
  return `SELECT b, (array_agg(o ORDER BY t))[1] AS o, max(h) AS h, min(l) AS l, (array_agg(c ORDER BY t DESC))[1] AS c,
      sum(v) AS v, sum(n) AS n
    FROM (SELECT t - ((t % $4) + $4) % $4 AS b, t, ${s.o} AS o, ${s.h} AS h, ${s.l} AS l, ${s.c} AS c, ${s.v} AS v, ${s.n} AS n
          FROM ${s.table} WHERE ${s.key} = $1 AND t >= $2 AND t < $3 AND ${s.present}) AS minutes
    GROUP BY b ORDER BY b DESC LIMIT $5`;
}

function lastMinuteSql(source: Source): string {
  const s = SOURCES[source];
  return `SELECT t FROM ${s.table} WHERE ${s.key} = $1 AND t < $2 AND ${s.present} ORDER BY t DESC LIMIT 1`;
}

interface BarRow { b: string; o: string; h: string; l: string; c: string; v: string; n: string }

/** Newest-first bars of `source` as [first, end) minute starts in buckets of `size`, at most `limit`. */
async function bars(pool: pg.Pool, source: Source, key: string, size: number, first: number, end: number, limit: number | null): Promise<BarRow[]> {
  const { rows } = await pool.query<BarRow>({ name: `bars-${source}`, text: barsSql(source), values: [key, first, end, size, limit] });
  return rows;
}

export class PgMarketHistory implements MarketHistoryReads {
  /** The DVOL candles of each underlying. */
  readonly dvol: PgDvolHistory;

  constructor(private readonly pool: pg.Pool) {
    this.dvol = new PgDvolHistory(pool);
  }

  /**
   * Bars of `resolution` whose start lies in [fromSec, toSec], oldest first. With `limit`, only
   * the newest `limit` of them. `series` picks the trades (default) or the mark or index candles
   * (their `v` is "0", `n` 0).
   */
  async candles(
    marketId: string, resolution: Resolution, fromSec: number, toSec: number, limit?: number,
    series: 'trade' | PriceSeries = 'trade',
  ): Promise<Bar[]> {
    const size = RESOLUTION_SECONDS[resolution];
    const first = Math.ceil(fromSec / size) * size;
    const end = Math.floor(toSec / size) * size + size; // exclusive bound on minute starts
    if (first >= end || limit === 0) return [];
    const rows = await bars(this.pool, series, marketId, size, first, end, limit ?? null);
    return rows.reverse().map((r) => ({
      t: int(r.b), o: canonical(r.o), h: canonical(r.h), l: canonical(r.l), c: canonical(r.c), v: canonical(r.v), n: int(r.n),
    }));
  }

  /**
   * Start (Unix seconds) of the newest `resolution` bucket that has trades (or, with `series`, a
   * mark or index) and starts before `sec`, or null.
   */
  async lastBarBefore(marketId: string, sec: number, resolution: Resolution = '1', series: 'trade' | PriceSeries = 'trade'): Promise<number | null> {
    const size = RESOLUTION_SECONDS[resolution];
    // Every minute before this bound belongs to a bucket that starts before `sec`.
    const bound = Math.ceil(sec / size) * size;
    const { rows } = await this.pool.query<{ t: string }>({ name: `last-minute-${series}`, text: lastMinuteSql(series), values: [marketId, bound] });
    return rows.length === 0 ? null : Math.floor(int(rows[0]!.t) / size) * size;
  }

  /** Open, high, low, last and volumes of the minute candles started after nowMs - 24 h. */
  async stats24h(marketId: string, nowMs: number): Promise<Stats24h> {
    const fromSec = Math.floor((nowMs - DAY_SEC * 1000) / 1000) + 1;
    const toSec = Math.floor(nowMs / 1000) + 1;
    const { rows } = await this.pool.query<{ o: string | null; h: string | null; l: string | null; c: string | null; v: string | null; q: string | null; n: string | null }>({
      name: 'stats-24h',
      text: `SELECT (array_agg(o ORDER BY t))[1] AS o, max(h) AS h, min(l) AS l, (array_agg(c ORDER BY t DESC))[1] AS c,
               sum(v) AS v, sum(q) AS q, sum(n) AS n
             FROM candles_1m WHERE market_id = $1 AND t >= $2 AND t < $3`,
      values: [marketId, fromSec, toSec],
    });
    const r = rows[0]!;
    if (r.o === null) return { open: null, high: null, low: null, last: null, volumeBase: 0n, volumeQuote: 0n, trades: 0 };
    const must = (text: string | null): Fixed => fixed(text!);
    return {
      open: must(r.o), high: must(r.h), low: must(r.l), last: must(r.c),
      volumeBase: must(r.v), volumeQuote: must(r.q), trades: int(r.n!),
    };
  }
}

export class PgDvolHistory implements DvolHistoryReads {
  constructor(private readonly pool: pg.Pool) {}

  /** Buckets of `sizeSec` whose start lies in [fromSec, toSec], oldest first; minutes without DVOL are omitted. */
  async candles(underlying: string, sizeSec: number, fromSec: number, toSec: number): Promise<DvolBar[]> {
    const first = Math.ceil(fromSec / sizeSec) * sizeSec;
    const end = Math.floor(toSec / sizeSec) * sizeSec + sizeSec; // exclusive bound on minute starts
    if (first >= end) return [];
    const rows = await bars(this.pool, 'dvol', underlying, sizeSec, first, end, null);
    return rows.reverse().map((r) => ({ t: int(r.b), open: canonical(r.o), high: canonical(r.h), low: canonical(r.l), close: canonical(r.c) }));
  }
}
