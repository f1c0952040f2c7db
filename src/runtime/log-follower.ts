/**
 * A replica of the core that follows the leader's command log: each record read (in seq order,
 * chain-checked by the log) is applied to this process's own Exchange with the time the leader
 * stamped on it. The core is deterministic, so the replica holds exactly the leader's state at
 * every seq, produces the same events and the same outcomes (docs/architecture.md "Distributed
 * mode"). A standby core follows the log this way until it leads; a gateway serves its reads and
 * streams from its replica.
 *
 * It reads whenever the log says it grew (LISTEN/NOTIFY through the port), and also every
 * `pollMs`, because a notification is lost when its connection drops. A record that the replica
 * cannot apply means the replica no longer reproduces the leader (other settings, other code):
 * it stops and calls `onFatal`, rather than serve a state nobody was shown.
 */
import type { Command } from '../core/commands.ts';
import type { ExchangeEvent } from '../core/events.ts';
import type { Exchange, Outcome } from '../core/exchange.ts';
import type { CommandLogTail, LinkedRecord } from './command-log-tail.ts';
import type { EventListener } from './sequencer.ts';

export interface LogFollowerOptions {
  /** Records read per query. */
  readonly pageSize: number;
  /** How often the log is read without a notification (a lost NOTIFY costs at most this). */
  readonly pollMs: number;
  /** The replica stopped: a record did not apply, or the log could not be read for `maxReadFailures` tries. */
  readonly onFatal: (error: Error) => void;
  /** Consecutive failed reads (the database away) before the follower gives up; reads retry meanwhile. */
  readonly maxReadFailures?: number;
}

/** Where the replica starts: a fresh core (seq 0) or a restored snapshot's seq and chain link. */
export interface FollowFrom {
  readonly seq: number;
  readonly link: number;
}

interface SeqWaiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

type OutcomeListener = (outcome: Outcome<unknown>, seq: number) => void;

export class LogFollower {
  private seq: number;
  private link: number;
  private readonly listeners: EventListener[] = [];
  /** Waiters for a seq, kept in seq order (they arrive nearly in order; insertion keeps it). */
  private waiters: SeqWaiter[] = [];
  /** Submitters waiting for their command id to come through the log (a gateway's door). */
  private readonly expected = new Map<string, OutcomeListener>();
  /** The command ids applied recently, with their seq: the leader's deduplication after a takeover. */
  private readonly recentIds = new Map<string, number>();
  private reading: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private failures = 0;
  private stopped: Error | null = null;

  constructor(
    private readonly exchange: Exchange,
    private readonly tail: CommandLogTail,
    private readonly options: LogFollowerOptions,
    from: FollowFrom = { seq: 0, link: 0 },
    /** How many applied command ids are remembered (deduplication window). */
    private readonly idWindow = 100_000,
  ) {
    this.seq = from.seq;
    this.link = from.link;
  }

  /** The seq the replica's state stands at. */
  get appliedSeq(): number {
    return this.seq;
  }

  /** The chain link of the last applied record (a leader's writer goes on from it). */
  get appliedLink(): number {
    return this.link;
  }

  /** Catches up to the log's head, then follows it. */
  async start(): Promise<void> {
    this.unlisten = await this.tail.onAppended((head) => {
      if (head > this.seq) this.read();
    });
    await this.catchUp();
    this.timer = setInterval(() => this.read(), this.options.pollMs);
    this.timer.unref();
  }

  /** Reads until the replica holds the head the log had when this was called. */
  async catchUp(): Promise<number> {
    const head = await this.tail.head();
    while (this.seq < head) {
      this.read();
      await this.reading;
      if (this.stopped !== null) throw this.stopped;
    }
    return head;
  }

  /** Stops following (a standby about to lead, a gateway closing); waiters are rejected. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const unlisten = this.unlisten;
    this.unlisten = null;
    await this.reading;
    await unlisten?.();
  }

  /** Resolves once the replica has applied `seq`. */
  whenApplied(seq: number): Promise<void> {
    if (seq <= this.seq) return Promise.resolve();
    if (this.stopped !== null) return Promise.reject(this.stopped);
    return new Promise((resolve, reject) => {
      const waiter = { seq, resolve, reject };
      let i = this.waiters.length;
      while (i > 0 && this.waiters[i - 1]!.seq > seq) i--;
      this.waiters.splice(i, 0, waiter);
      this.read();
    });
  }

  /**
   * Calls `listener` with the outcome of the command that comes through the log under
   * `commandId` (set before the command is sent, so it cannot be missed); returns a function
   * that withdraws it.
   */
  expect(commandId: string, listener: OutcomeListener): () => void {
    this.expected.set(commandId, listener);
    return () => this.expected.delete(commandId);
  }

  /** The seq a command id was applied at, if it is within the remembered window. */
  seqOf(commandId: string): number | undefined {
    return this.recentIds.get(commandId);
  }

  /** Subscribers receive each applied record's events, in seq order. */
  subscribe(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  isHealthy(): boolean {
    return this.stopped === null;
  }

  /** Starts a read unless one runs; a read asked for meanwhile runs right after it. */
  private read(): void {
    if (this.stopped !== null) return;
    if (this.reading !== null) {
      this.again = true;
      return;
    }
    this.reading = this.readPages().finally(() => {
      this.reading = null;
      if (this.again && this.stopped === null) {
        this.again = false;
        this.read();
      }
    });
  }

  private async readPages(): Promise<void> {
    try {
      for (;;) {
        const records = await this.tail.readAfter(this.seq, this.link, this.options.pageSize);
        this.failures = 0;
        for (const record of records) this.apply(record);
        this.settleWaiters();
        if (records.length < this.options.pageSize) return;
      }
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      if (err instanceof ReplicaDiverged || ++this.failures >= (this.options.maxReadFailures ?? 50)) this.fail(err);
    }
  }

  private apply(record: LinkedRecord): void {
    if (record.seq !== this.seq + 1) throw new ReplicaDiverged(`the log skipped from seq ${this.seq} to ${record.seq}`);
    const outcome = this.exchange.execute(record.command, record.ts);
    if (!outcome.ok) throw new ReplicaDiverged(`the replica could not apply seq ${record.seq} (${record.command.type}): ${outcome.code} ${outcome.message}`);
    this.seq = record.seq;
    this.link = record.link;
    if (record.commandId !== null) this.remember(record.commandId, record.seq, outcome);
    this.publish(outcome.events, record.command);
  }

  private remember(commandId: string, seq: number, outcome: Outcome<unknown>): void {
    this.recentIds.set(commandId, seq);
    if (this.recentIds.size > this.idWindow) this.recentIds.delete(this.recentIds.keys().next().value!);
    const listener = this.expected.get(commandId);
    if (listener === undefined) return;
    this.expected.delete(commandId);
    listener(outcome, seq);
  }

  private publish(events: readonly ExchangeEvent[], command: Command): void {
    for (const l of this.listeners) l(events, command);
  }

  private settleWaiters(): void {
    let n = 0;
    while (n < this.waiters.length && this.waiters[n]!.seq <= this.seq) this.waiters[n++]!.resolve();
    if (n > 0) this.waiters = this.waiters.slice(n);
  }

  private fail(error: Error): void {
    if (this.stopped !== null) return;
    this.stopped = error;
    for (const w of this.waiters) w.reject(error);
    this.waiters = [];
    if (this.timer !== null) clearInterval(this.timer);
    this.options.onFatal(error);
  }
}

/** The replica no longer reproduces the leader: never retried. */
class ReplicaDiverged extends Error {}
