/**
 * The sequencer's journal port: what the sequencer asks of the durable command log, and nothing
 * about where that log is kept. The sequencer owns it (dependencies point inward); the embedded
 * default implements it with SQLite (adapters/store/journal.ts and journal-writer.ts), and the
 * composition root (service.ts) chooses the implementation. A log on other infrastructure (the
 * PostgreSQL command log of the distributed mode, adapters/postgres/command-log.ts) implements the
 * writer and the log side of recovery (`RecoveryLog`), so the sequencer, its group commit and its
 * recovery stay one piece of code for both modes; that core keeps no history of its own (a
 * projector writes it), so it has no `RecoveryHistory` and its `whenProjected` rejects.
 *
 * Two sides, because they run at different times and, in the embedded default, on different
 * connections: `JournalWriter` makes batches durable while the service runs (off the event loop),
 * `RecoveryLog` (with `RecoveryHistory` beside it: a `RecoveryJournal`) is read on the event loop
 * before the first command, to rebuild the core and complete the history a crash left behind (docs/architecture.md "Durable before acknowledged").
 * Its reads may be asynchronous (a PostgreSQL driver answers with promises; SQLite answers at once,
 * with plain values): recovery awaits them, and nothing on the order path reads them.
 */
import type { Command } from '../core/commands.ts';
import type { ExchangeEvent } from '../core/events.ts';
import type { Ledger } from '../core/ledger/ledger.ts';

/** A command the core applied, stamped with its time, and the events it produced: what is appended. */
export interface CommittedCommand {
  /**
   * The id the submitter gave the command (the distributed mode's gateways do): the log keeps
   * each id once, so a submission retried after a failover is applied once.
   */
  readonly commandId?: string;
  readonly ts: number;
  readonly command: Command;
  readonly events: readonly ExchangeEvent[];
}

/** A journaled command as read back for replay: the events are not kept, the core recomputes them. */
export interface JournalRecord {
  readonly seq: number;
  readonly ts: number;
  readonly command: Command;
}

/**
 * The write side. Seqs are implied: the writer appends batches strictly in the order they were
 * sent, each command taking the next seq, so the sequencer's durable watermark is the journal's
 * head at start plus the commands of every batch acknowledged since.
 */
export interface JournalWriter {
  /**
   * Resolves once the whole batch is durable (a group commit: the writer may join batches queued
   * behind one another in one commit); rejects if it could not be written, after which the writer
   * accepts nothing more (fail-stop: a later batch was computed on top of the failed one).
   */
  append(batch: readonly CommittedCommand[]): Promise<void>;
  /**
   * Resolves once the history holds every command up to journal seq `seq` (history reads wait for
   * what was acknowledged before them); rejects if the history can no longer follow the journal.
   * A writer whose process keeps no history (the distributed core's log: a projector of its own
   * writes the history, and history reads wait on its watermark) rejects, saying so.
   */
  whenProjected(seq: number): Promise<void>;
  /** Called once if the writer fails, whether or not a call is waiting on it (fail-stop). */
  onFailure(listener: (error: Error) => void): void;
}

/**
 * The log side of recovery, read on the event loop before the first command: the journal's
 * durable head and its records.
 */
export interface RecoveryLog {
  /** The seq of the last durable command (0 when the journal is empty). */
  head(): number | Promise<number>;
  /**
   * The records from `fromSeq` to the head, in order and contiguous; throws, naming the seq, at a
   * gap or a record that fails its check, rather than replay past it. `previousLink` is the chain
   * link of the record before `fromSeq` when the caller knows it (a snapshot's header).
   * Asynchronous for a log read over the network (read in pages as replay goes); a store that
   * reads synchronously (SQLite) returns a plain Iterable, sparing recovery a promise per record.
   */
  replay(fromSeq: number, previousLink?: number): Iterable<JournalRecord> | AsyncIterable<JournalRecord>;
}

/**
 * The history beside the log, as recovery completes and checks it: its watermark may trail the
 * head after a crash (it is derived data, written after the acknowledgement).
 */
export interface RecoveryHistory {
  /** The history's watermark: the last command whose events the history holds. */
  projectedSeq(): number | Promise<number>;
  /**
   * Writes the history of commands `firstSeq ..` (their replayed events) and moves the watermark
   * past them; throws unless the watermark stood at `firstSeq - 1` (each command once, in order).
   */
  project(batch: readonly CommittedCommand[], firstSeq: number): void;
  /**
   * Where the history's recorded balances differ from `ledger` replayed up to the watermark (the
   * core no longer reproduces what clients were shown); empty when they agree.
   */
  replayDifferences(ledger: Ledger): string[];
}

/**
 * A journal with its history in the same process (the embedded default: SQLite holds both), which
 * recovery completes and checks against the replay. The distributed core recovers from a
 * `RecoveryLog` alone: its history is a separate projector's, which follows the log by itself.
 */
export interface RecoveryJournal extends RecoveryLog, RecoveryHistory {}

/** Whether recovery has a history to complete and check beside `journal`. */
export function keepsHistory(journal: RecoveryLog): journal is RecoveryJournal {
  return 'projectedSeq' in journal;
}
