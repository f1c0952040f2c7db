/**
 * Retention of the trading history (docs/architecture.md "History"): orders that ended without a
 * fill leave it once their retention has passed (bulk-quote orders and a client's own orders each
 * have theirs), deleted in small chunks by the connection that writes the history — the journal
 * worker, which runs a chunk only while no append is waiting (journal-worker.ts).
 *
 * A chunk is one transaction, committed like the projections (`synchronous=NORMAL`, journal.ts):
 * the history is derived data, and what a crash takes back from a chunk is deleted again later.
 */
import type { Db } from '../database.ts';
import type { TradingHistory, UnfilledRetention } from './trading-history.ts';

export class UnfilledOrderPruner {
  private readonly chunkTx: (now: number) => number;
  /** The connection's own `synchronous` level (the journal's appends), restored after each chunk. */
  private readonly synchronous: number;

  constructor(
    private readonly db: Db,
    trading: TradingHistory,
    retention: UnfilledRetention,
    /** Rows deleted per chunk at most: bounds how long an arriving append can wait behind one. */
    readonly chunk = 256,
  ) {
    this.synchronous = db.pragma('synchronous', { simple: true }) as number;
    this.chunkTx = db.transaction((now: number) => trading.pruneUnfilled(now, retention, chunk));
  }

  /** Deletes one chunk of what is past its retention at `now` (service time); returns the rows deleted. */
  pruneChunk(now: number): number {
    this.db.pragma('synchronous = NORMAL');
    try {
      return this.chunkTx(now);
    } finally {
      this.db.pragma(`synchronous = ${this.synchronous}`);
    }
  }
}
