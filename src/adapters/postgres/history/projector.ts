/**
 * The distributed mode's history writer: the events of each command, in seq order, into the
 * PostgreSQL history tables (migrations/postgres/3000_history.sql), exactly once per seq.
 *
 * A batch is one transaction: it locks the watermark row (`SELECT ... FOR UPDATE`), refuses unless
 * the watermark stands just before the batch's first seq, writes the batch's rows (batch-rows.ts:
 * one multi-row statement per table, the batch's own repeats merged in memory) and moves the
 * watermark to its last seq. So two projectors that race serialize on the row, and the second
 * finds the watermark moved and writes nothing (HistoryOutOfOrder); a crash (of the projector or
 * of PostgreSQL) loses the open transaction whole, and the follower goes on from `projectedSeq()`.
 * The history is derived data: the command log is the record, and replaying it into a core
 * gives the same events again (docs/architecture.md "Distributed mode: history in PostgreSQL").
 *
 * The commit also sends `NOTIFY history_watermark, '<projected seq>'`, so a gateway waiting until
 * the history holds an acknowledged seq need not poll.
 */
import type pg from 'pg';
import type { ExchangeEvent } from '../../../core/events.ts';
import { BatchRows } from './batch-rows.ts';

/** One command's events, with its seq and the time the sequencer stamped on it. */
export interface ProjectedCommand {
  readonly seq: number;
  readonly ts: number;
  readonly events: readonly ExchangeEvent[];
}

/** The batch does not start just after the watermark: another projector wrote it, or a batch is missing. */
export class HistoryOutOfOrder extends Error {
  constructor(readonly firstSeq: number, readonly projectedSeq: number) {
    super(`history projection out of order: batch from seq ${firstSeq}, watermark at ${projectedSeq}`);
    this.name = 'HistoryOutOfOrder';
  }
}

/** The channel the projection commit notifies with the new watermark. */
export const HISTORY_WATERMARK_CHANNEL = 'history_watermark';

export interface PgHistoryProjectorOptions {
  /**
   * false: the projection commits without waiting for its WAL flush (`synchronous_commit = off`
   * for its transactions; the command log's appends keep `on`). A PostgreSQL crash may then take
   * back the last batches committed (whole, watermark included), so the follower must be able to
   * re-derive the events of commands before its newest batch. Default true: a commit that returned
   * is kept, and a follower only ever re-sends the batch whose project() failed.
   */
  readonly synchronousCommit?: boolean;
}

export class PgHistoryProjector {
  private readonly begin: string;

  constructor(private readonly pool: pg.Pool, options: PgHistoryProjectorOptions = {}) {
    const relaxed = options.synchronousCommit === false ? ' SET LOCAL synchronous_commit = off;' : '';
    this.begin = `BEGIN;${relaxed} SELECT projected_seq FROM history_watermark WHERE id = 1 FOR UPDATE`;
  }

  /** The last seq whose events are in the history tables. */
  async projectedSeq(): Promise<number> {
    const { rows } = await this.pool.query<{ projected_seq: string }>('SELECT projected_seq FROM history_watermark WHERE id = 1');
    return Number(rows[0]!.projected_seq);
  }

  /**
   * Writes the batch's history and moves the watermark to its last seq, in one transaction.
   * Throws HistoryOutOfOrder (writing nothing) unless the watermark stood at the first seq - 1;
   * throws the driver's error if PostgreSQL fails or goes away: then nothing was written, or, when
   * the connection broke during COMMIT, possibly all of it; either way `projectedSeq()` says which.
   */
  async project(batch: readonly ProjectedCommand[]): Promise<void> {
    if (batch.length === 0) return;
    const firstSeq = batch[0]!.seq;
    if (!Number.isSafeInteger(firstSeq) || firstSeq < 1) throw new Error(`history batch from seq ${firstSeq}: not a seq`);
    const lastSeq = firstSeq + batch.length - 1;
    const rows = new BatchRows();
    for (let i = 0; i < batch.length; i++) {
      const command = batch[i]!;
      if (command.seq !== firstSeq + i) throw new Error(`history batch not contiguous: seq ${command.seq} at position ${i} of a batch from ${firstSeq}`);
      for (const event of command.events) rows.add(event);
    }
    const statements = rows.statements();
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client's connection error (the server went away between two statements) is
    // emitted on the client, not the pool: unheard, it would crash the process; the next statement fails.
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    try {
      // One round trip: BEGIN and the lock, which waits while another projector holds the row.
      const results = (await client.query(this.begin)) as unknown as pg.QueryResult<{ projected_seq: string }>[];
      const locked = results[results.length - 1]!;
      const projected = Number(locked.rows[0]!.projected_seq);
      if (projected !== firstSeq - 1) throw new HistoryOutOfOrder(firstSeq, projected);
      for (const statement of statements) await client.query(statement.text, statement.values);
      // lastSeq is a safe integer (checked above), so it is spelled into the text: one more round trip saved.
      await client.query(`UPDATE history_watermark SET projected_seq = ${lastSeq} WHERE id = 1;
        SELECT pg_notify('${HISTORY_WATERMARK_CHANNEL}', '${lastSeq}'); COMMIT`);
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }
}
