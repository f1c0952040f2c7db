/**
 * The command journal: every command the core accepted, in sequence order, with the time the
 * sequencer stamped on it. Appending a batch and writing the history projections of its events
 * happen in one SQLite transaction (group commit: one fsync per batch), so after a crash the
 * journal and the history tables agree. Restart replays the journal into a fresh core.
 */
import type { Command } from '../../core/commands.ts';
import type { ExchangeEvent } from '../../core/events.ts';
import { decode, encode } from './codec.ts';
import { migrate, type Db } from './database.ts';

/** Writes the history tables that reads serve from (ledger history, settlements, orders...). */
export interface Projector {
  readonly migrations: readonly { id: string; sql: string }[];
  /** The event types it projects; others never reach it (and need not cross to the worker). */
  readonly consumes: readonly ExchangeEvent['type'][];
  /** Called inside the batch transaction for every event, in order. */
  project(event: ExchangeEvent, seq: number): void;
  /** Called inside the transaction after the batch's last event (projectors that aggregate). */
  endBatch?(): void;
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
];

export class Journal {
  private readonly insert;
  private readonly appendTx;
  private lastSeq: number;

  constructor(
    private readonly db: Db,
    private readonly projectors: readonly Projector[],
  ) {
    migrate(db, [...JOURNAL_SCHEMA, ...projectors.flatMap((p) => p.migrations)]);
    this.insert = db.prepare('INSERT INTO journal (seq, ts, command) VALUES (?, ?, ?)');
    const row = db.prepare('SELECT MAX(seq) AS seq FROM journal').get() as { seq: number | null };
    this.lastSeq = row.seq ?? 0;
    this.appendTx = db.transaction((batch: readonly CommittedCommand[]) => {
      for (const item of batch) {
        const seq = ++this.lastSeq;
        this.insert.run(seq, item.ts, encode(item.command));
        for (const event of item.events) for (const p of this.projectors) p.project(event, seq);
      }
      for (const p of this.projectors) p.endBatch?.();
    });
  }

  /** Appends the batch durably (returns after fsync). Throws if the disk refuses. */
  append(batch: readonly CommittedCommand[]): void {
    const before = this.lastSeq;
    try {
      this.appendTx(batch);
    } catch (err) {
      this.lastSeq = before;
      throw err;
    }
  }

  /** Every event type some projector consumes. */
  projectedTypes(): ReadonlySet<ExchangeEvent['type']> {
    return new Set(this.projectors.flatMap((p) => p.consumes));
  }

  head(): number {
    return this.lastSeq;
  }

  *replay(fromSeq = 1): Generator<JournalRecord> {
    const stmt = this.db.prepare('SELECT seq, ts, command FROM journal WHERE seq >= ? ORDER BY seq');
    for (const row of stmt.iterate(fromSeq) as Iterable<{ seq: number; ts: number; command: string }>) {
      yield { seq: row.seq, ts: row.ts, command: decode<Command>(row.command) };
    }
  }
}
