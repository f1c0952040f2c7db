/**
 * The gateway's one door to the core: how a route submits a command and how reads and streams
 * keep in step with what was acknowledged. The gateway owns this port; the embedded default passes
 * the in-process Sequencer (runtime/sequencer.ts), and a gateway of the distributed mode a door
 * that sends commands to the leader core and answers from its replica of the core once the
 * replica has applied them (docs/architecture.md "Distributed mode").
 */
import type { CommandOf, CommandType } from '../core/commands.ts';
import type { Outcome, ResultOf } from '../core/exchange.ts';
import type { EventListener } from '../runtime/sequencer.ts';

export interface CommandDoor {
  /** Applies `command` in the core's order; resolves once it is durable, with its outcome. */
  submit<T extends CommandType>(command: CommandOf<T>): Promise<Outcome<ResultOf<T>>>;
  /**
   * Resolves once everything the core state has shown so far is durable (a read waits for it
   * before answering); rejects if it never will be. A replica of the leader's log is durable as it
   * stands; the embedded sequencer waits for the batches in flight.
   */
  barrier(): Promise<void>;
  /** Resolves once the history tables hold everything acknowledged before this call. */
  historyBarrier(): Promise<void>;
  /** Each applied command's events, in the core's order, once durable. */
  subscribe(listener: EventListener): () => void;
  /** False once the core behind this door has stopped (reads answer 503). */
  isHealthy(): boolean;
  /** Commits seen, and the journal seq the state read here stands at. */
  stats(): { commits: number; journalHead: number };
}
