/**
 * The sequencer: the single entrance to the core. Every state change is submitted here, applied
 * to the in-memory exchange at once (commands never await I/O mid-way), and answered only after it
 * is durable.
 *
 * Group commit: applied commands collect in a batch; the batch is written to the journal (with its
 * history projections) in one SQLite transaction on the next turn of the event loop, or at once
 * when it reaches `maxBatch`. Only then are the submitters' promises resolved and the events
 * published to subscribers (streams). So nothing a client or a stream saw can be lost by `kill -9`.
 * Rejections change nothing; they are answered with the same batch so that replies keep order.
 *
 * Fail-stop: if the journal write fails, or the core throws (an invariant broke), the sequencer
 * answers everything in flight with UNAVAILABLE/INTERNAL, refuses all further commands, and calls
 * `onFatal` (main.ts exits the process; restart replays the journal).
 */
import type { Command, CommandOf, CommandType } from '../core/commands.ts';
import type { ExchangeEvent } from '../core/events.ts';
import { reject, type Rejection } from '../core/errors.ts';
import type { Exchange, Outcome, ResultOf } from '../core/exchange.ts';
import type { CommittedCommand, Journal } from '../adapters/store/journal.ts';

export interface Clock {
  now(): number;
}

export type EventListener = (events: readonly ExchangeEvent[], command: Command) => void;

export interface SequencerOptions {
  readonly maxBatch: number;
  readonly onFatal: (error: unknown) => void;
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
  private commitCount = 0;

  constructor(
    readonly exchange: Exchange,
    private readonly journal: Journal,
    private readonly clock: Clock,
    private readonly options: SequencerOptions,
  ) {}

  /** Rebuilds the exchange from the journal. Call once, before the first submit. */
  recover(): number {
    let count = 0;
    for (const record of this.journal.replay()) {
      const outcome = this.exchange.execute(record.command, record.ts);
      if (!outcome.ok) {
        throw new Error(`journal replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
      }
      count++;
    }
    return count;
  }

  /** Subscribers receive each command's events after the batch holding it is durable. */
  subscribe(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  submit<T extends CommandType>(command: CommandOf<T>): Promise<Outcome<ResultOf<T>>> {
    if (this.fatal !== null) return Promise.resolve(reject('UNAVAILABLE', 'the exchange core has stopped'));
    let outcome: Outcome<ResultOf<T>>;
    try {
      outcome = this.exchange.execute(command, this.clock.now());
    } catch (error) {
      this.stop(error);
      return Promise.resolve(reject('INTERNAL', 'internal error'));
    }
    if (outcome.ok) this.batch.push({ ts: this.exchange.now(), command, events: outcome.events });
    return new Promise((resolve) => {
      this.replies.push({ outcome, resolve: resolve as (o: Outcome<unknown>) => void });
      if (this.batch.length >= this.options.maxBatch) this.flush();
      else this.scheduleFlush();
    });
  }

  /** Resolves once everything submitted so far is durable (reads that must not run ahead). */
  barrier(): Promise<void> {
    if (this.replies.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.replies.push({ outcome: BARRIER, resolve: () => resolve() });
      this.scheduleFlush();
    });
  }

  isHealthy(): boolean {
    return this.fatal === null;
  }

  stats(): { commits: number; journalHead: number } {
    return { commits: this.commitCount, journalHead: this.journal.head() };
  }

  /** Writes the pending batch now (tests and shutdown). */
  flush(): void {
    const batch = this.batch;
    const replies = this.replies;
    this.batch = [];
    this.replies = [];
    if (batch.length > 0) {
      try {
        this.journal.append(batch);
        this.commitCount++;
      } catch (error) {
        for (const r of replies) r.resolve(reject('UNAVAILABLE', 'the journal could not be written'));
        this.stop(error);
        return;
      }
    }
    for (const r of replies) r.resolve(r.outcome);
    for (const item of batch) for (const l of this.listeners) l(item.events, item.command);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.fatal === null) this.flush();
    });
  }

  private stop(error: unknown): void {
    if (this.fatal !== null) return;
    this.fatal = error ?? new Error('fatal');
    // Commands applied before the failure are intact and may still be made durable; the failing
    // one was never added to the batch. Anything later is refused by submit().
    if (this.batch.length > 0 || this.replies.length > 0) {
      const batch = this.batch;
      const replies = this.replies;
      this.batch = [];
      this.replies = [];
      try {
        if (batch.length > 0) this.journal.append(batch);
        for (const r of replies) r.resolve(r.outcome);
      } catch {
        for (const r of replies) r.resolve(reject('UNAVAILABLE', 'the journal could not be written'));
      }
    }
    this.options.onFatal(error);
  }
}

const BARRIER: Rejection = reject('INTERNAL', 'barrier');
