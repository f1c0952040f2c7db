/**
 * The command journal: every command the core accepted, in sequence order, with the time the
 * sequencer stamped on it. It is the exchange's durable record: restart replays it into a fresh
 * core. Appending a batch is one SQLite transaction with `synchronous=FULL` (group commit: one
 * fsync per batch), and a command is acknowledged once its batch is appended.
 *
 * The history tables that reads serve from (orders, trades, ledger lines, candles...) are
 * projections of the commands' events, written by `project` in a transaction of their own right
 * after the append, off the acknowledgement's path. They are derived data: the projection
 * transaction also moves a watermark (`projection_state.projected_seq`), so the history and the
 * watermark always agree, and a restart projects the journal's tail past the watermark from the
 * replay's own events (the core is deterministic). That is why those commits need no fsync of
 * their own (`synchronous=NORMAL`): what a crash takes from them, the journal gives back.
 */
import type { Command } from '../../core/commands.ts';
import type { ExchangeEvent } from '../../core/events.ts';
import type { Ledger } from '../../core/ledger/ledger.ts';
import { decode, encode } from './codec.ts';
import { migrate, type Db } from './database.ts';

/** Writes the history tables that reads serve from (ledger history, settlements, orders...). */
export interface Projector {
  readonly migrations: readonly { id: string; sql: string }[];
  /** The event types it projects; others never reach it (and need not cross to the worker). */
  readonly consumes: readonly ExchangeEvent['type'][];
  /** Called inside the projection transaction for every event, in order. */
  project(event: ExchangeEvent, seq: number): void;
  /** Called inside the transaction after the batch's last event (projectors that aggregate). */
  endBatch?(): void;
  /**
   * Where what this projection recorded disagrees with `ledger` replayed up to the watermark
   * (recovery's check that replaying the journal reproduced what clients were shown); empty when
   * all agree.
   */
  replayDifferences?(ledger: Ledger): string[];
}

export interface JournalRecord {
  readonly seq: number;
  readonly ts: number;
  readonly command: Command;
}

export interface CommittedCommand {
  readonly ts: number;
  readonly command: Command;
  readonly events: readonly ExchangeEvent[];
}

const JOURNAL_SCHEMA = [
  {
    id: '0001_journal',
    sql: `CREATE TABLE journal (seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, command TEXT NOT NULL);`,
  },
  {
    // Until this migration the history was written inside the journal's own transaction, so an
    // existing journal is projected up to its last command.
    id: '0002_projection_state',
    sql: `
      CREATE TABLE projection_state (id INTEGER PRIMARY KEY CHECK (id = 1), projected_seq INTEGER NOT NULL);
      INSERT INTO projection_state (id, projected_seq) SELECT 1, COALESCE(MAX(seq), 0) FROM journal;`,
  },
];

export class Journal {
  private readonly insert;
  private readonly appendTx;
  private readonly projectTx;
  private readonly readWatermark;
  /** The connection's own `synchronous` level (what journal appends commit with), restored after projecting. */
  private readonly appendSynchronous: number;
  private lastSeq: number;

  constructor(
    private readonly db: Db,
    private readonly projectors: readonly Projector[],
  ) {
    migrate(db, [...JOURNAL_SCHEMA, ...projectors.flatMap((p) => p.migrations)]);
    this.appendSynchronous = db.pragma('synchronous', { simple: true }) as number;
    this.insert = db.prepare('INSERT INTO journal (seq, ts, command) VALUES (?, ?, ?)');
    const row = db.prepare('SELECT MAX(seq) AS seq FROM journal').get() as { seq: number | null };
    this.lastSeq = row.seq ?? 0;
    this.appendTx = db.transaction((batch: readonly CommittedCommand[]) => {
      for (const item of batch) this.insert.run(++this.lastSeq, item.ts, encode(item.command));
    });
    this.readWatermark = db.prepare('SELECT projected_seq AS seq FROM projection_state WHERE id = 1');
    const moveWatermark = db.prepare('UPDATE projection_state SET projected_seq = ? WHERE id = 1 AND projected_seq = ?');
    this.projectTx = db.transaction((batch: readonly CommittedCommand[], firstSeq: number) => {
      const from = firstSeq - 1;
      // Projections run in journal order, each command once: the watermark must be where this batch starts.
      if (moveWatermark.run(from + batch.length, from).changes !== 1) {
        throw new Error(`history projection out of order: batch from seq ${firstSeq}, watermark at ${this.projectedSeq()}`);
      }
      for (let i = 0; i < batch.length; i++) {
        const seq = firstSeq + i;
        for (const event of batch[i]!.events) for (const p of this.projectors) p.project(event, seq);
      }
      for (const p of this.projectors) p.endBatch?.();
    });
  }

  /**
   * Appends the batch durably (returns after fsync) and returns the seq of its first command.
   * Throws if the disk refuses.
   */
  append(batch: readonly CommittedCommand[]): number {
    const before = this.lastSeq;
    try {
      this.appendTx(batch);
    } catch (err) {
      this.lastSeq = before;
      throw err;
    }
    return before + 1;
  }

  /**
   * Writes the history of appended commands `firstSeq ..` (their events) and moves the
   * watermark past them, in one transaction without an fsync of its own (see the file comment).
   */
  project(batch: readonly CommittedCommand[], firstSeq: number): void {
    if (batch.length === 0) return;
    assertAppended(firstSeq + batch.length - 1, this.lastSeq);
    this.db.pragma('synchronous = NORMAL');
    try {
      this.projectTx(batch, firstSeq);
    } finally {
      this.db.pragma(`synchronous = ${this.appendSynchronous}`);
    }
  }

  /** The last command whose events are in the history tables. */
  projectedSeq(): number {
    return (this.readWatermark.get() as { seq: number }).seq;
  }

  /** What the history recorded against the replayed ledger (Projector.replayDifferences). */
  replayDifferences(ledger: Ledger): string[] {
    return this.projectors.flatMap((p) => p.replayDifferences?.(ledger) ?? []);
  }

  /** Every event type some projector consumes. */
  projectedTypes(): ReadonlySet<ExchangeEvent['type']> {
    return new Set(this.projectors.flatMap((p) => p.consumes));
  }

  head(): number {
    return this.lastSeq;
  }

  /**
   * The journal from `fromSeq` in order. Its seqs are contiguous by construction (one writer, every
   * batch appended whole or not at all): a gap means a record was lost or removed, and replaying
   * past it would rebuild a state no client was acknowledged, so it throws and names the seq.
   */
  *replay(fromSeq = 1): Generator<JournalRecord> {
    const stmt = this.db.prepare('SELECT seq, ts, command FROM journal WHERE seq >= ? ORDER BY seq');
    let expected = fromSeq;
    for (const row of stmt.iterate(fromSeq) as Iterable<{ seq: number; ts: number; command: string }>) {
      if (row.seq !== expected) throw new Error(`the journal has no record at seq ${expected} (the next is seq ${row.seq}): a record was lost or removed; refusing to replay past it`);
      expected++;
      yield { seq: row.seq, ts: row.ts, command: decode<Command>(row.command) };
    }
  }
}

function assertAppended(lastToProject: number, lastAppended: number): void {
  if (lastToProject > lastAppended) {
    throw new Error(`history projection ahead of the journal: seq ${lastToProject} > ${lastAppended}`);
  }
}
