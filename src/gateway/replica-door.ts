/**
 * The command door of a distributed gateway (docs/architecture.md "Distributed mode"): commands go
 * to the leader core (over NATS, through the `CommandSender` port), and are answered from this
 * gateway's replica of the core once it has applied them from the durable log. The leader's reply
 * says only "durable at seq n" or "rejected"; the result a client sees is the replica's own outcome
 * for the command (the core is deterministic, so it is the leader's), which also means a client
 * that is answered can read its change back from this gateway at once.
 *
 * Reads are linearizable across gateways: `caughtUp()` (run before each request's handler, see
 * roles/gateway.ts) reads the log's head from the database and waits until the replica has applied
 * it, so whatever any gateway acknowledged before a read began is in what the read shows.
 * Concurrent calls share one head query (the one in flight when they arrive would miss what was
 * acknowledged just before them, so they join the next). `barrier()`, the durability barrier that
 * reads and stream snapshots take after reading, costs nothing here: a replica applies only
 * records already committed, so everything it shows is durable.
 */
import { randomUUID } from 'node:crypto';
import type { Command, CommandOf, CommandType } from '../core/commands.ts';
import { reject, type Rejection } from '../core/errors.ts';
import type { Outcome, ResultOf } from '../core/exchange.ts';
import type { LogFollower } from '../runtime/log-follower.ts';
import type { EventListener } from '../runtime/sequencer.ts';
import { coalesced } from './coalesced.ts';
import type { CommandDoor } from './command-door.ts';

/** What the leader answered: durable at `seq`, or rejected (with a retry hint when no leader answered). */
export type SendReply = { readonly ok: true; readonly seq: number } | (Rejection & { readonly retryAfterSeconds?: number });

/** The gateway's port to the leader core (the NATS command bus implements it). */
export interface CommandSender {
  /** Sends `command` under `commandId` (reused on every retry, so the leader applies it once). */
  send(commandId: string, command: Command): Promise<SendReply>;
}

/** The log's durable head, read from the database (not from the leader). */
export type HeadReader = () => Promise<number>;

/** How far the history in the database has been projected. */
export type HistoryWatermark = () => Promise<number>;

export class ReplicaDoor implements CommandDoor {
  private commits = 0;
  /** The log's head as of a moment after the call (one query in flight; later callers join the next). */
  private readonly currentHead: () => Promise<number>;
  /** The history's watermark as last read, and the reads waiting for it to pass their seq. */
  private projected = 0;
  private historyWaiters: { target: number; deadline: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private historyPolling: Promise<void> | null = null;

  constructor(
    private readonly replica: LogFollower,
    private readonly sender: CommandSender,
    readHead: HeadReader,
    private readonly historyWatermark: HistoryWatermark,
    private readonly options: { readonly historyWaitMs: number; readonly historyPollMs: number } = { historyWaitMs: 5_000, historyPollMs: 5 },
  ) {
    replica.subscribe(() => this.commits++);
    this.currentHead = coalesced(readHead);
  }

  submit<T extends CommandType>(command: CommandOf<T>): Promise<Outcome<ResultOf<T>>> {
    if (!this.replica.isHealthy()) return Promise.resolve(REPLICA_STOPPED);
    const commandId = randomUUID();
    return new Promise((resolve) => {
      let answered = false;
      const answer = (outcome: Outcome<unknown>) => {
        if (answered) return;
        answered = true;
        resolve(outcome as Outcome<ResultOf<T>>);
      };
      // Registered before sending: the replica may apply the record before the reply arrives.
      const withdraw = this.replica.expect(commandId, (outcome) => answer(outcome));
      this.sender.send(commandId, command).then(
        (reply) => {
          if (!reply.ok) {
            withdraw();
            answer(reply);
            return;
          }
          this.replica.whenApplied(reply.seq).then(
            // Applied up to the seq the leader named, yet the id never came through: the logs disagree.
            () => answer(reject('INTERNAL', `command ${commandId} was acknowledged at seq ${reply.seq} but is not in the log`)),
            () => answer(REPLICA_STOPPED),
          );
        },
        () => {
          withdraw();
          answer(reject('UNAVAILABLE', 'the exchange core could not be reached'));
        },
      );
    });
  }

  /** Resolves once the replica has applied the log's head as of this call. */
  async caughtUp(): Promise<void> {
    if (!this.replica.isHealthy()) throw new Error('the replica of the core has stopped');
    await this.replica.whenApplied(await this.currentHead());
  }

  /** What the replica shows is durable already (it applies committed records only). */
  async barrier(): Promise<void> {
    if (!this.replica.isHealthy()) throw new Error('the replica of the core has stopped');
  }

  /**
   * Resolves once the history (written by the projector) holds the log's head as of this call.
   * Every waiting read shares one watermark query at a time.
   */
  async historyBarrier(): Promise<void> {
    const target = await this.currentHead();
    if (target <= this.projected) return;
    await new Promise<void>((resolve, reject) => {
      this.historyWaiters.push({ target, resolve, reject, deadline: performance.now() + this.options.historyWaitMs });
      this.historyPolling ??= this.pollHistory().finally(() => (this.historyPolling = null));
    });
  }

  private async pollHistory(): Promise<void> {
    while (this.historyWaiters.length > 0) {
      try {
        this.projected = Math.max(this.projected, await this.historyWatermark());
      } catch {
        // The database is away for a moment: the waiters' deadlines bound the wait.
      }
      const now = performance.now();
      this.historyWaiters = this.historyWaiters.filter((w) => {
        if (w.target <= this.projected) w.resolve();
        else if (now > w.deadline) w.reject(new Error(`the history has not reached seq ${w.target}`));
        else return true;
        return false;
      });
      if (this.historyWaiters.length > 0) await new Promise((resolve) => setTimeout(resolve, this.options.historyPollMs));
    }
  }

  subscribe(listener: EventListener): () => void {
    return this.replica.subscribe(listener);
  }

  isHealthy(): boolean {
    return this.replica.isHealthy();
  }

  stats(): { commits: number; journalHead: number } {
    return { commits: this.commits, journalHead: this.replica.appliedSeq };
  }
}

const REPLICA_STOPPED: Rejection = reject('UNAVAILABLE', 'this gateway\'s replica of the core has stopped');
