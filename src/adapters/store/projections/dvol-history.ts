/**
 * DVOL history: one-minute candles of each underlying's volatility index, written from the `board`
 * events of the core's clock ticks (each carries the DVOL that tick computed, percent to 2
 * decimals, the value GET /markets/dvol serves), and the read behind GET /markets/dvol/history.
 * Part of the market history (market-history.ts owns it and hands it the events).
 *
 * Storage: `dvol_1m` keyed by (underlying, minute start in Unix seconds); open, high, low and close
 * are exact decimal TEXT. A tick without a DVOL (inputs missing or stale) records nothing, so a
 * minute without any DVOL has no row and reads omit it. Like the trade candles, rows are kept for
 * the life of the history (one row per underlying and minute) and reads are capped to 90 days.
 *
 * Tested by dvol-history.test.ts and test/api/dvol-history.test.ts (over HTTP).
 */
import { formatDecimal, max, min, type Fixed } from '../../../core/money.ts';
import type { DvolBar, DvolHistoryReads } from '../../../gateway/history-port.ts';
import type { Db } from '../database.ts';
import { storedDecimal } from '../stored-decimal.ts';

export type { DvolBar } from '../../../gateway/history-port.ts';

export const DVOL_MIGRATIONS = [
  {
    id: '0301_dvol_history',
    sql: `
      CREATE TABLE dvol_1m (
        underlying TEXT NOT NULL, t INTEGER NOT NULL, o TEXT NOT NULL, h TEXT NOT NULL, l TEXT NOT NULL,
        c TEXT NOT NULL, PRIMARY KEY (underlying, t)) WITHOUT ROWID;`,
  },
];

interface Minute {
  readonly t: number;
  readonly o: Fixed;
  readonly h: Fixed;
  readonly l: Fixed;
  readonly c: Fixed;
}

type RawRow = [number, string, string, string, string];

const fold = (a: Minute, b: Minute): Minute => ({ t: a.t, o: a.o, h: max(a.h, b.h), l: min(a.l, b.l), c: b.c });

export class DvolHistory implements DvolHistoryReads {
  private stmts: ReturnType<DvolHistory['prepare']> | null = null;
  /** This batch's minutes, merged in memory and written once per (underlying, minute). */
  private readonly pending = new Map<string, { underlying: string; minute: Minute }>();

  constructor(private readonly db: Db) {}

  /** A DVOL value the core computed at `at` (service time, ms). */
  record(underlying: string, at: number, dvol: Fixed): void {
    const t = Math.floor(at / 60_000) * 60;
    const one: Minute = { t, o: dvol, h: dvol, l: dvol, c: dvol };
    const key = `${underlying}|${t}`;
    const held = this.pending.get(key);
    if (held !== undefined) {
      held.minute = fold(held.minute, one);
      return;
    }
    const s = (this.stmts ??= this.prepare());
    const row = s.minute.get(underlying, t) as RawRow | undefined;
    const stored = row === undefined ? null : toMinute(row);
    this.pending.set(key, { underlying, minute: stored === null ? one : fold(stored, one) });
  }

  endBatch(): void {
    if (this.pending.size === 0) return;
    const s = (this.stmts ??= this.prepare());
    for (const { underlying, minute: m } of this.pending.values()) {
      s.upsert.run(underlying, m.t, formatDecimal(m.o), formatDecimal(m.h), formatDecimal(m.l), formatDecimal(m.c));
    }
    this.pending.clear();
  }

  /** Buckets of `sizeSec` whose start lies in [fromSec, toSec], oldest first; minutes without DVOL are omitted. */
  candles(underlying: string, sizeSec: number, fromSec: number, toSec: number): DvolBar[] {
    const s = (this.stmts ??= this.prepare());
    const first = Math.ceil(fromSec / sizeSec) * sizeSec;
    const end = Math.floor(toSec / sizeSec) * sizeSec + sizeSec; // exclusive bound on minute starts
    const bars: Minute[] = [];
    for (const row of s.range.iterate(underlying, first, end) as Iterable<RawRow>) {
      const minute = toMinute(row);
      const start = Math.floor(minute.t / sizeSec) * sizeSec;
      const last = bars[bars.length - 1];
      if (last !== undefined && last.t === start) bars[bars.length - 1] = fold(last, minute);
      else bars.push({ ...minute, t: start });
    }
    return bars.map((b) => ({ t: b.t, open: formatDecimal(b.o), high: formatDecimal(b.h), low: formatDecimal(b.l), close: formatDecimal(b.c) }));
  }

  private prepare() {
    return {
      minute: this.db.prepare('SELECT t, o, h, l, c FROM dvol_1m WHERE underlying = ? AND t = ?').raw(),
      upsert: this.db.prepare(
        `INSERT INTO dvol_1m (underlying, t, o, h, l, c) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (underlying, t) DO UPDATE SET h = excluded.h, l = excluded.l, c = excluded.c`,
      ),
      range: this.db.prepare('SELECT t, o, h, l, c FROM dvol_1m WHERE underlying = ? AND t >= ? AND t < ? ORDER BY t').raw(),
    };
  }
}

function toMinute([t, o, h, l, c]: RawRow): Minute {
  return { t, o: storedDecimal(o), h: storedDecimal(h), l: storedDecimal(l), c: storedDecimal(c) };
}
