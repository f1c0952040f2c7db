/**
 * The sequencer: the single entrance to the core. Every state change is submitted here, applied
 * to the in-memory exchange at once (commands never await I/O mid-way), and answered only after it
 * is durable.
 *
 * Group commit: applied commands collect in a batch; at the end of the event-loop turn, or at once
 * when `earlyFlushAt` commands are waiting, the batch goes to the journal writer, which appends it
 * to the journal in one commit (shared with the batches queued behind it) — off the event loop
 * (the SQLite writer works in a worker thread), so the event loop keeps applying commands while
 * the batch is fsynced. The journal is a port the sequencer owns (journal-port.ts), so this file
 * knows no store; the composition root chooses the implementation. At most `maxInFlight` batches
 * are in flight; commands keep collecting meanwhile (the next batch takes all of them), so batches
 * grow under load. The writer projects the events into the history tables after the commit;
 * `historyBarrier` lets a history read wait until everything acknowledged before it is there
 * (read-your-writes), and `recover` projects what a crash left unprojected.
 *
 * Why flush early: requests arrive in bursts (every client answered by one commit sends its next
 * order at about the same time), and one event-loop turn can parse and apply dozens of them. Sent
 * only at the end of the turn, the whole burst would reach the worker together and the event loop
 * would then sit idle until its commit; sent in slices, the worker commits the first slice while
 * the event loop still applies the rest (measured: event-loop utilisation 68 % -> 88 %, order
 * entry +25-40 %; docs/performance.md). Replies and event
 * publication (streams) happen strictly in commit order, each only after its batch is durable, so
 * nothing a client or a stream saw can be lost by `kill -9`. Rejections change nothing; they are
 * answered in order with the batch they arrived in.
 *
 * The distributed core keeps no history in its process (a projector of its own writes it from the
 * command log): its recovery journal is a `RecoveryLog` without the history side, and recovery then
 * replays the log only, with nothing to project or check against (journal-port.ts).
 *
 * Fail-stop: if the journal or the history cannot be written, or the core throws (an invariant broke), everything
 * in flight is answered UNAVAILABLE/INTERNAL, further commands are refused, and `onFatal` runs
 * (main.ts exits the process; restart replays the journal).
 */
import type { Command, CommandOf, CommandType } from '../core/commands.ts';
import type { ExchangeEvent } from '../core/events.ts';
import { reject, type RejectCode, type Rejection } from '../core/errors.ts';
import type { Exchange, Outcome, ResultOf } from '../core/exchange.ts';
import { keepsHistory, type CommittedCommand, type JournalRecord, type JournalWriter, type RecoveryHistory, type RecoveryLog } from './journal-port.ts';

export interface Clock {
  now(): number;
}

export type EventListener = (events: readonly ExchangeEvent[], command: Command) => void;

/**
 * What the sequencer tells an observer (the service's metrics, gateway/metrics.ts): each command
 * as the core applies or rejects it, and each batch once durable. Both run on the hot path, so an
 * observer only counts (a property increment); nothing is kept here.
 */
export interface SequencerObserver {
  /** A command the core ran: `rejected` is its rejection's code, or null when it was applied. */
  command(type: CommandType, rejected: RejectCode | null): void;
  /** A batch of `commands` made durable `ms` after it was sent to the journal writer. */
  batch(commands: number, ms: number): void;
}

/** A snapshot recovery started from (adapters/store/snapshot-store.ts). */
export interface RestoredSnapshot {
  /** The last journal seq the snapshot includes. */
  readonly seq: number;
  /** The journal's chain link at `seq`, where the replay after it goes on from. */
  readonly link: number;
}

/** Recovery's port to the core's snapshots (docs/architecture.md "Snapshots"). */
export interface SnapshotSource {
  /**
   * Restores the newest usable snapshot at or below `maxSeq` into `exchange` (a freshly built
   * core), or returns null and leaves it untouched when there is none (full replay).
   */
  restoreNewest(exchange: Exchange, maxSeq: number): RestoredSnapshot | null;
}

export interface RecoveryProgress {
  readonly phase: 'snapshot' | 'journal';
  /** Journal commands replayed so far, of `total` (those after the snapshot). */
  readonly done: number;
  readonly total: number;
  readonly snapshotSeq: number | null;
}

export interface RecoveryOptions {
  readonly snapshots?: SnapshotSource;
  /**
   * The journal from a seq on, its chain going on from `previousLink` when given (default: the
   * journal's own `replay`; the service reads archived segments too, adapters/store/journal-reader.ts).
   */
  readonly records?: (fromSeq: number, previousLink?: number) => Iterable<JournalRecord> | AsyncIterable<JournalRecord>;
  readonly onProgress?: (progress: RecoveryProgress) => void;
  /** How long a slice of replay may hold the event loop before yielding. */
  readonly sliceMs?: number;
}

export interface RecoveryResult {
  readonly replayed: number;
  readonly snapshotSeq: number | null;
  readonly journalSeq: number;
  readonly ms: number;
}

export interface SequencerOptions {
  /** Commands waiting that send a batch at once instead of at the end of the event-loop turn. */
  readonly earlyFlushAt: number;
  /** Batches written and not yet durable, at most (the worker may commit several in one transaction). */
  readonly maxInFlight: number;
  readonly onFatal: (error: unknown) => void;
  /** A replay that does not reproduce the recorded balances: stop the start, or go on (see `replayDivergence`). */
  readonly replayCheck?: 'strict' | 'warn';
}

interface Pending {
  readonly outcome: Outcome<unknown>;
  readonly resolve: (outcome: Outcome<unknown>) => void;
}

export class Sequencer {
  private batch: CommittedCommand[] = [];
  private replies: Pending[] = [];
  private flushScheduled = false;
  private fatal: unknown = null;
  private readonly listeners: EventListener[] = [];
  private observer: SequencerObserver | null = null;
  private commitCount = 0;
  /** The durable watermark: the journal's head, read by `recover`, plus every batch acknowledged since. */
  private committedSeq = 0;
  private inFlight = 0;
  /** What recovery found different under `replayCheck: 'warn'` (null when the replay agreed). */
  replayDivergence: string | null = null;
  /** True while `recover` runs: nothing may be submitted until the state is whole. */
  private recovering = false;
  /** Resolves when every batch sent so far is durable and answered (keeps replies in order). */
  private tail: Promise<void> = Promise.resolve();

  constructor(
    readonly exchange: Exchange,
    private readonly journal: RecoveryLog,
    private readonly writer: JournalWriter,
    private readonly clock: Clock,
    private readonly options: SequencerOptions,
  ) {
    writer.onFailure((error) => this.stop(error));
  }

  /**
   * Rebuilds the exchange: the newest usable snapshot (when a `snapshots` source is given and has
   * one), then the journal after it, and writes the history of the commands a crash left
   * unprojected from the replay's own events (the core is deterministic: they are the events the
   * live core produced). A snapshot never covers more than the history does (the projection
   * watermark), so the history past the snapshot is always replayed. Runs in slices of about
   * `sliceMs`, yielding to the event loop between them so that `/health` can report progress. Call
   * once, before the first submit; submits meanwhile are refused. It reads the journal's head here,
   * not in the constructor, because the port's reads may be asynchronous (journal-port.ts). A
   * journal without a history (the distributed core's) is replayed up to its head, and that is all.
   */
  async recover(options: RecoveryOptions = {}): Promise<RecoveryResult> {
    const started = performance.now();
    // Set before the first await, so that a submit while the journal is read is refused.
    this.recovering = true;
    try {
      const history = keepsHistory(this.journal) ? this.journal : null;
      const projected = history === null ? null : await history.projectedSeq();
      const head = await this.journal.head();
      this.committedSeq = head;
      const report = options.onProgress ?? (() => undefined);
      report({ phase: 'snapshot', done: 0, total: head, snapshotSeq: null });
      const snapshot = options.snapshots?.restoreNewest(this.exchange, Math.min(head, projected ?? head)) ?? null;
      const snapshotSeq = snapshot?.seq ?? null;
      if (history !== null && snapshot !== null && snapshot.seq === projected) this.checkReplay(history, projected);
      const records = options.records ?? ((f: number, l?: number) => this.journal.replay(f, l));
      const from = (snapshot?.seq ?? 0) + 1;
      const total = head - from + 1;
      const tail = history === null || projected === null ? null : { history, projected };
      const replayed = await this.replayFrom(records(from, snapshot?.link), tail, options.sliceMs ?? 25,
        (done) => report({ phase: 'journal', done, total, snapshotSeq }));
      const projectedAfter = history === null ? head : await history.projectedSeq();
      if (projectedAfter !== head) throw new Error(`history at seq ${projectedAfter} after recovery, journal at ${head}`);
      report({ phase: 'journal', done: replayed, total, snapshotSeq });
      return { replayed, snapshotSeq, journalSeq: head, ms: performance.now() - started };
    } finally {
      this.recovering = false;
    }
  }

  /**
   * Applies `records`, checks the replay against the history at its watermark (`projected`) and
   * projects the history of the records past it (when the process keeps one: `tail` is null
   * otherwise); yields to the event loop every `sliceMs`.
   */
  private async replayFrom(records: Iterable<JournalRecord> | AsyncIterable<JournalRecord>, tail: { readonly history: RecoveryHistory; readonly projected: number } | null, sliceMs: number, progress: (done: number) => void): Promise<number> {
    const history = tail === null ? null : new TailProjection(tail.history, tail.projected + 1);
    let count = 0;
    let sliceStart = performance.now();
    /** Applies one record; true when the slice is used up. */
    const apply = (record: JournalRecord): boolean => {
      const outcome = this.exchange.execute(record.command, record.ts);
      if (!outcome.ok) throw new Error(`journal replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
      count++;
      if (tail !== null && record.seq === tail.projected) this.checkReplay(tail.history, tail.projected);
      if (tail !== null && record.seq > tail.projected) history?.add({ ts: record.ts, command: record.command, events: outcome.events });
      return (count & 255) === 0 && performance.now() - sliceStart >= sliceMs;
    };
    const yieldSlice = async (): Promise<void> => {
      progress(count);
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    };
    // A synchronous store's records (SQLite's) are read without a promise per record: awaiting
    // each one made recovery about 10 % slower (bench/store/recovery.ts, 205,009 commands).
    if (Symbol.asyncIterator in records) {
      for await (const record of records) if (apply(record)) await yieldSlice();
    } else {
      for (const record of records) if (apply(record)) await yieldSlice();
    }
    history?.finish();
    return count;
  }

  /**
   * The replayed core must hold what the history recorded when it was live: the balance after
   * every account's last projected ledger line. A difference means the core's behaviour changed
   * since the journal was written (replay runs today's code), or a file was altered; serving from
   * that state would show clients balances other than those they were acknowledged, so recovery
   * stops and says where.
   */
  private checkReplay(history: RecoveryHistory, seq: number): void {
    const differences = history.replayDifferences(this.exchange.ledger);
    if (differences.length === 0) return;
    const shown = differences.slice(0, 5).join('; ');
    const more = differences.length > 5 ? ` (and ${differences.length - 5} more)` : '';
    const what = `journal replay diverged from the recorded history at seq ${seq}: ${shown}${more}`;
    if (this.options.replayCheck === 'warn') {
      this.replayDivergence = what;
      return;
    }
    throw new Error(`${what}. The core's behaviour changed since this journal was written, or a file was altered; refusing to serve a state clients were not shown (JOURNAL_REPLAY_CHECK=warn serves it)`);
  }

  /** Subscribers receive each command's events after the batch holding it is durable. */
  subscribe(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Sets the observer of commands and batches (one; the service's metrics). */
  observe(observer: SequencerObserver): void {
    this.observer = observer;
  }

  /**
   * Applies `command` and answers once its batch is durable. `commandId` is the submitter's id for
   * it (a distributed gateway's), kept with the record so that the log applies an id once.
   */
  submit<T extends CommandType>(command: CommandOf<T>, commandId?: string): Promise<Outcome<ResultOf<T>>> {
    if (this.fatal !== null) return Promise.resolve(STOPPED);
    if (this.recovering) return Promise.resolve(RECOVERING);
    let outcome: Outcome<ResultOf<T>>;
    try {
      outcome = this.exchange.execute(command, this.clock.now());
    } catch (error) {
      this.stop(error);
      return Promise.resolve(reject('INTERNAL', 'internal error'));
    }
    if (outcome.ok) this.batch.push({ commandId, ts: this.exchange.now(), command, events: outcome.events });
    this.observer?.command(command.type, outcome.ok ? null : outcome.code);
    return new Promise((resolve) => {
      this.replies.push({ outcome, resolve: resolve as (o: Outcome<unknown>) => void });
      if (this.batch.length >= this.options.earlyFlushAt) this.flush();
      else this.scheduleFlush();
    });
  }

  /**
   * Resolves once everything submitted so far is durable (reads that must not run ahead); rejects
   * if it never will be (the journal could not be written, the core has stopped).
   */
  barrier(): Promise<void> {
    if (this.fatal !== null) return Promise.reject(new Error('the exchange core has stopped'));
    if (this.replies.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve, rejectBarrier) => {
      const settle = (o: Outcome<unknown>) => (o === BARRIER ? resolve() : rejectBarrier(new Error('the journal could not be written')));
      this.replies.push({ outcome: BARRIER, resolve: settle });
      this.scheduleFlush();
    });
  }

  /**
   * Resolves once the history tables hold every command acknowledged so far: a history read
   * awaits it first, so a client always reads back what it was told is done. Rejects if the
   * history can no longer follow the journal (the writer failed; the core stops with it), or the
   * process keeps no history (the distributed core: history reads wait on its projector instead).
   */
  historyBarrier(): Promise<void> {
    return this.writer.whenProjected(this.committedSeq);
  }

  isHealthy(): boolean {
    return this.fatal === null;
  }

  stats(): { commits: number; journalHead: number } {
    return { commits: this.commitCount, journalHead: this.committedSeq };
  }

  /** Sends the pending batch to the writer (unless the pipeline is full; an ack sends it then). */
  flush(): void {
    if (this.fatal !== null) return;
    if (this.inFlight >= this.options.maxInFlight && this.batch.length > 0) return;
    const batch = this.batch;
    const replies = this.replies;
    this.batch = [];
    this.replies = [];
    if (batch.length === 0 && replies.length === 0) return;
    const written = batch.length === 0 ? Promise.resolve() : this.write(batch);
    this.tail = this.tail.then(() => written).then(
      () => this.deliver(batch, replies),
      (error: unknown) => {
        for (const r of replies) r.resolve(reject('UNAVAILABLE', 'the journal could not be written'));
        this.stop(error);
      },
    );
  }

  /** Resolves when everything submitted so far is durable and answered (shutdown, tests). */
  async drain(): Promise<void> {
    this.flush();
    while (this.fatal === null && (this.batch.length > 0 || this.replies.length > 0 || this.inFlight > 0)) {
      await this.tail;
      this.flush();
    }
    await this.tail;
  }

  private write(batch: CommittedCommand[]): Promise<void> {
    this.inFlight++;
    const observer = this.observer;
    const sent = observer === null ? 0 : performance.now();
    const written = this.writer.append(batch);
    if (observer !== null) written.then(() => observer.batch(batch.length, performance.now() - sent), () => undefined);
    return written.finally(() => {
      this.inFlight--;
      if (this.batch.length > 0 || this.replies.length > 0) this.scheduleFlush();
    });
  }

  private deliver(batch: readonly CommittedCommand[], replies: readonly Pending[]): void {
    if (batch.length > 0) {
      this.commitCount++;
      this.committedSeq += batch.length;
    }
    // A barrier covers every command applied before it, including those of a batch ahead of it that
    // failed: once the core has stopped, no barrier can vouch for what the read it guards shows.
    const stopped = this.fatal !== null;
    for (const r of replies) r.resolve(stopped && r.outcome === BARRIER ? STOPPED : r.outcome);
    for (const item of batch) for (const l of this.listeners) l(item.events, item.command);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private stop(error: unknown): void {
    if (this.fatal !== null) return;
    // Commands applied before the failure are intact: send them, so their callers are answered
    // truthfully; the failing command was never added to the batch. Then refuse everything.
    if (this.batch.length > 0 || this.replies.length > 0) this.flush();
    this.fatal = error ?? new Error('fatal');
    // What the flush could not send (the pipeline was full) will never be written: answer it now
    // (reads waiting on a barrier reject), rather than leave its callers waiting forever.
    for (const r of this.replies) r.resolve(STOPPED);
    this.replies = [];
    this.batch = [];
    void this.tail.finally(() => this.options.onFatal(error));
  }
}

const BARRIER: Rejection = reject('INTERNAL', 'barrier');
/** The answer to every command (and barrier) once the core has stopped. */
const STOPPED: Rejection = reject('UNAVAILABLE', 'the exchange core has stopped');
const RECOVERING: Rejection = reject('UNAVAILABLE', 'the exchange core is recovering its state');

/** The history of the commands a crash left unprojected, written in batches as recovery replays them. */
class TailProjection {
  private batch: CommittedCommand[] = [];

  constructor(private readonly journal: RecoveryHistory, private nextSeq: number) {}

  add(command: CommittedCommand): void {
    this.batch.push(command);
    if (this.batch.length === RECOVERY_PROJECTION_BATCH) this.finish();
  }

  finish(): void {
    this.journal.project(this.batch, this.nextSeq);
    this.nextSeq += this.batch.length;
    this.batch = [];
  }
}
/** Commands per history transaction when recovery projects what a crash left unprojected. */
const RECOVERY_PROJECTION_BATCH = 1024;
