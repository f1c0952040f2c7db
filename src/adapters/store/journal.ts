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
import type { ExchangeEvent } from '../../core/events.ts';
import type { Ledger } from '../../core/ledger/ledger.ts';
import type { CommittedCommand, JournalRecord, RecoveryJournal } from '../../runtime/journal-port.ts';
import { migrate, type Db } from './database.ts';
import { decodeRecord, encodeRecord, GENESIS, link, type StoredRecord } from './journal-record.ts';

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
  {
    // Each record carries a link of a hash chain over the journal (see `link`); records written
    // before this migration are linked once, as they are, when a Journal first opens the file.
    id: '0003_journal_chain',
    sql: `ALTER TABLE journal ADD COLUMN chain INTEGER;`,
  },
];

/** The SQLite journal: recovery's side of the sequencer's journal port (runtime/journal-port.ts). */
export class Journal implements RecoveryJournal {
  private readonly insert;
  private readonly appendTx;
  private readonly projectTx;
  private readonly readWatermark;
  private readonly trimStmt;
  /** The connection's own `synchronous` level (what journal appends commit with), restored after projecting. */
  private readonly appendSynchronous: number;
  private lastSeq: number;
  /** The link of the record at `lastSeq`. */
  private lastLink: number;

  /** `readOnly`: an offline reader (the audit) on a read-only connection: no migration, no linking, no appends. */
  constructor(
    private readonly db: Db,
    private readonly projectors: readonly Projector[],
    options: { readonly readOnly?: boolean } = {},
  ) {
    if (options.readOnly !== true) {
      migrate(db, [...JOURNAL_SCHEMA, ...projectors.flatMap((p) => p.migrations)]);
      linkUnlinkedRecords(db);
    }
    this.appendSynchronous = db.pragma('synchronous', { simple: true }) as number;
    this.insert = db.prepare('INSERT INTO journal (seq, ts, command, chain) VALUES (?, ?, ?, ?)');
    const row = db.prepare('SELECT seq, chain FROM journal ORDER BY seq DESC LIMIT 1').get() as { seq: number; chain: number } | undefined;
    this.lastSeq = row?.seq ?? 0;
    this.lastLink = row?.chain ?? GENESIS;
    this.appendTx = db.transaction((batch: readonly CommittedCommand[]) => {
      for (const item of batch) {
        const stored = encodeRecord({ seq: this.lastSeq + 1, ts: item.ts, command: item.command }, this.lastLink);
        this.insert.run(stored.seq, stored.ts, stored.command, stored.chain);
        this.lastSeq = stored.seq;
        this.lastLink = stored.chain!;
      }
    });
    this.readWatermark = db.prepare('SELECT projected_seq AS seq FROM projection_state WHERE id = 1');
    this.trimStmt = db.prepare('DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE seq <= ? AND seq < ? ORDER BY seq LIMIT ?)');
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
    const linkBefore = this.lastLink;
    try {
      this.appendTx(batch);
    } catch (err) {
      this.lastSeq = before;
      this.lastLink = linkBefore;
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

  /** The first seq the database still holds (records before it are archived in segments); head + 1 when empty. */
  firstSeq(): number {
    const row = this.db.prepare('SELECT MIN(seq) AS seq FROM journal').get() as { seq: number | null };
    return row.seq ?? this.lastSeq + 1;
  }

  /**
   * The journal's rows from `fromSeq` in order, each with its link. Its seqs are contiguous by
   * construction (one writer, every batch appended whole or not at all): a gap means a record was
   * lost or removed, and replaying past it would rebuild a state no client was acknowledged, so it
   * throws and names the seq. A record whose link does not match (journal-record.ts `link`) was
   * altered after it was written, and one that does not decode is corrupt: it throws too. The chain
   * goes on from `previousLink` (the link of the record before `fromSeq`: a snapshot's or a
   * segment's), or from the row before `fromSeq` when that is still in the database. A row's
   * command is a BLOB (the compact encoding) or, written by an older build, TEXT (JSON);
   * better-sqlite3 hands back a Buffer or a string, and `decodeRecord` reads either.
   */
  *replay(fromSeq = 1, previousLink?: number): Generator<JournalRecord & { readonly chain: number }> {
    const stmt = this.db.prepare('SELECT seq, ts, command, chain FROM journal WHERE seq >= ? ORDER BY seq');
    let previous = previousLink ?? this.linkBefore(fromSeq);
    let expected = fromSeq;
    for (const row of stmt.iterate(fromSeq) as Iterable<StoredRecord>) {
      if (row.seq !== expected) throw new Error(`the journal has no record at seq ${expected} (the next is seq ${row.seq}): a record was lost or removed; refusing to replay past it`);
      const record = decodeRecord(row, previous);
      previous = row.chain!;
      expected++;
      yield { ...record, chain: previous };
    }
  }

  /** The rows `fromSeq..toSeq` as stored (segments archive them as they are). */
  storedRows(fromSeq: number, toSeq: number): StoredRecord[] {
    return this.db.prepare('SELECT seq, ts, command, chain FROM journal WHERE seq BETWEEN ? AND ? ORDER BY seq').all(fromSeq, toSeq) as StoredRecord[];
  }

  /** The link of the record before `seq`, read from the database. */
  linkBefore(seq: number): number {
    if (seq === 1) return GENESIS;
    const row = this.db.prepare('SELECT chain FROM journal WHERE seq = ?').get(seq - 1) as { chain: number | null } | undefined;
    if (row?.chain === undefined || row.chain === null) {
      throw new Error(`the journal record before seq ${seq} is not in the database (archived in a segment, or lost): its link must come from where it is`);
    }
    return row.chain;
  }

  /**
   * Deletes up to `limit` rows at or below `throughSeq` (archived in segments), never the newest
   * row (it holds the head's seq and link); returns how many went. Like the projections, without an
   * fsync of its own: rows a crash brings back are archived already and deleted again.
   */
  trimArchived(throughSeq: number, limit: number): number {
    this.db.pragma('synchronous = NORMAL');
    try {
      return this.trimStmt.run(throughSeq, this.lastSeq, limit).changes;
    } finally {
      this.db.pragma(`synchronous = ${this.appendSynchronous}`);
    }
  }
}

/**
 * Links the records a journal written before the chain holds (migration 0003), once, in one
 * transaction: they are taken as they are. A no-op on a journal whose every record is linked.
 */
function linkUnlinkedRecords(db: Db): void {
  const first = db.prepare('SELECT MIN(seq) AS seq FROM journal WHERE chain IS NULL').get() as { seq: number | null };
  if (first.seq === null) return;
  // Only a tail can be unlinked (the records before the chain existed): a linked record after an
  // unlinked one means a link was removed, and replay is left to refuse it.
  if (db.prepare('SELECT 1 FROM journal WHERE seq > ? AND chain IS NOT NULL LIMIT 1').get(first.seq) !== undefined) return;
  const update = db.prepare('UPDATE journal SET chain = ? WHERE seq = ?');
  const page = db.prepare('SELECT seq, ts, command FROM journal WHERE seq >= ? ORDER BY seq LIMIT 10000');
  db.transaction(() => {
    const before = db.prepare('SELECT chain FROM journal WHERE seq = ?').get(first.seq! - 1) as { chain: number | null } | undefined;
    let previous = before?.chain ?? GENESIS;
    // In pages: a statement cannot update the table while another iterates it, and a whole
    // journal read at once could exceed the memory.
    for (let from = first.seq!; ;) {
      const rows = page.all(from) as { seq: number; ts: number; command: string | Uint8Array }[];
      if (rows.length === 0) break;
      for (const row of rows) {
        previous = link(previous, row.seq, row.ts, row.command);
        update.run(previous, row.seq);
      }
      from = rows[rows.length - 1]!.seq + 1;
    }
  })();
}

function assertAppended(lastToProject: number, lastAppended: number): void {
  if (lastToProject > lastAppended) {
    throw new Error(`history projection ahead of the journal: seq ${lastToProject} > ${lastAppended}`);
  }
}
