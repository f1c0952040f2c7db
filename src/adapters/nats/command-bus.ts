/**
 * The command bus between the gateways and the leader core (docs/architecture.md "Distributed
 * mode: the command bus"): NATS request/reply on `exchange.commands`, the leader alone subscribed
 * in queue group `core`.
 *
 * A gateway names each client request with a command id and sends the same id on every retry, so
 * a command retried after a timeout or across a failover is applied once: the leader looks the id
 * up in its log before appending (the log's command_id is unique). A request nobody answers (no
 * leader subscribed at that instant, or a leader that died holding it) is retried with a short
 * backoff until the deadline; then the gateway answers 503 UNAVAILABLE with a Retry-After hint.
 */
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Command } from '../../core/commands.ts';
import { reject, type Rejection } from '../../core/errors.ts';
import { decodeReply, decodeRequest, encodeReply, encodeRequest, type BusReply } from './command-wire.ts';

export type { BusReply } from './command-wire.ts';

export const COMMAND_SUBJECT = 'exchange.commands';
export const CORE_QUEUE = 'core';

/** What the leader does with a command: append it (once per id), apply it, answer once durable. */
export type CommandHandler = (commandId: string, command: Command) => Promise<BusReply>;

export interface CommandBusServerOptions {
  readonly subject?: string;
  /** A request that could not be read or a handler that threw (the requester got a rejection). */
  readonly onError?: (error: unknown) => void;
}

/**
 * The leader core's end. Deliveries of an id still being handled share that handling, so a retry
 * that overtakes a slow commit neither runs the handler twice nor waits for a second commit.
 * A handler that throws (a deposed leader's append is fenced) answers UNAVAILABLE, which the
 * gateway retries: another core may be leading by then.
 */
export class CommandBusServer {
  private subscription: Subscription | null = null;
  private readonly handling = new Map<string, Promise<BusReply>>();
  private readonly answering = new Set<Promise<void>>();

  constructor(private readonly nc: NatsConnection, private readonly options: CommandBusServerOptions = {}) {}

  start(handler: CommandHandler): void {
    if (this.subscription !== null) throw new Error('the command bus server is already started');
    this.subscription = this.nc.subscribe(this.options.subject ?? COMMAND_SUBJECT, {
      queue: CORE_QUEUE,
      callback: (error, msg) => {
        if (error !== null) return this.report(error);
        const answered = this.answer(msg, handler).finally(() => this.answering.delete(answered));
        this.answering.add(answered);
      },
    });
  }

  /** Stops taking commands; resolves once every command taken has been answered. */
  async stop(): Promise<void> {
    const subscription = this.subscription;
    if (subscription === null) return;
    this.subscription = null;
    if (!subscription.isClosed() && !this.nc.isClosed()) await subscription.drain().catch((error: unknown) => this.report(error));
    while (this.answering.size > 0) await Promise.allSettled([...this.answering]);
    if (!this.nc.isClosed()) await this.nc.flush().catch((error: unknown) => this.report(error));
  }

  private async answer(msg: Msg, handler: CommandHandler): Promise<void> {
    let reply: BusReply;
    try {
      const { commandId, command } = decodeRequest(msg.data);
      reply = await this.handleOnce(commandId, command, handler);
    } catch (error) {
      this.report(error);
      reply = reject('INTERNAL', `malformed command request: ${(error as Error).message}`);
    }
    if (msg.reply === undefined || msg.reply === '') return this.report(new Error('a command request without a reply subject'));
    try {
      msg.respond(encodeReply(reply));
    } catch (error) {
      this.report(error); // the connection closed meanwhile: the gateway times out and retries
    }
  }

  private handleOnce(commandId: string, command: Command, handler: CommandHandler): Promise<BusReply> {
    const running = this.handling.get(commandId);
    if (running !== undefined) return running;
    const handled = call(handler, commandId, command)
      .catch((error: unknown): BusReply => {
        this.report(error);
        return reject('UNAVAILABLE', `the core could not take the command: ${(error as Error)?.message ?? String(error)}`);
      })
      .finally(() => this.handling.delete(commandId));
    this.handling.set(commandId, handled);
    return handled;
  }

  private report(error: unknown): void {
    this.options.onError?.(error);
  }
}

export interface CommandBusClientOptions {
  readonly subject?: string;
  /** How long `submit` keeps trying by default, in ms. */
  readonly deadlineMs?: number;
  /** How long one sending waits for a reply before the command is sent again, in ms. */
  readonly attemptTimeoutMs?: number;
  /** The first and the longest pause after a "no responders" or a core's UNAVAILABLE, in ms (doubling, jittered). */
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** The Retry-After an UNAVAILABLE carries, in seconds: a standby leads within a few. */
  readonly retryAfterSeconds?: number;
}

/** What `submit` resolves when no leader answered in time: the gateway's 503 with Retry-After. */
export type BusUnavailable = Rejection & { readonly code: 'UNAVAILABLE'; readonly retryAfterSeconds: number };

/** Why the last sending got no answer, for the UNAVAILABLE's message. */
type Silence = 'no responders' | 'timeout' | 'disconnected' | 'closed' | 'refused';

const SILENCE: Readonly<Record<Silence, string>> = {
  'no responders': 'no leader core was subscribed',
  timeout: 'no leader core answered',
  disconnected: 'the NATS server was unreachable',
  closed: 'the connection to NATS is closed',
  refused: 'the core could not take the command',
};

/** One submission in flight: what came back on its reply subject since the loop last looked. */
interface Pending {
  reply: BusReply | null;
  /** NATS's "no responders" or a core's UNAVAILABLE: send again after a backoff. */
  bounced: Silence | null;
  /** The connection came back: send again now. */
  reconnected: boolean;
  wake(): void;
}

export const DEFAULT_DEADLINE_MS = 6_000;

/**
 * A gateway's end. Every sending of one submission asks for its reply on the same subject (the
 * client's inbox and a token of the submission), so a reply to any of them answers it: a slow
 * commit that outlasts one attempt's timeout still answers, through the copy the core coalesced.
 */
export class CommandBusClient {
  private readonly subject: string;
  private readonly deadlineMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly retryAfterSeconds: number;
  private readonly inbox = createInbox();
  private readonly pending = new Map<string, Pending>();
  private tokens = 0;
  private connected = true;

  constructor(private readonly nc: NatsConnection, options: CommandBusClientOptions = {}) {
    this.subject = options.subject ?? COMMAND_SUBJECT;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 1_000;
    this.minBackoffMs = options.minBackoffMs ?? 50;
    this.maxBackoffMs = options.maxBackoffMs ?? 250;
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
    nc.subscribe(`${this.inbox}.*`, {
      callback: (error, msg) => {
        if (error === null) this.received(msg);
      },
    });
    void this.followConnection();
  }

  /**
   * Sends `command` under `commandId` until the leader answers or `deadlineMs` has passed. Never
   * rejects: resolves the leader's reply, or UNAVAILABLE (with `retryAfterSeconds`) when no leader
   * answered in time, the NATS server is unreachable, or the connection is closed.
   */
  async submit(commandId: string, command: Command, deadlineMs = this.deadlineMs): Promise<BusReply | BusUnavailable> {
    const deadline = performance.now() + deadlineMs;
    const request = encodeRequest(commandId, command);
    const token = (++this.tokens).toString(36);
    const pending: Pending = { reply: null, bounced: null, reconnected: false, wake: () => undefined };
    this.pending.set(token, pending);
    let silence: Silence = 'timeout';
    let nextSend = 0;
    try {
      for (let retry = 0; ; ) {
        if (pending.reply !== null) return pending.reply;
        const now = performance.now();
        if (this.nc.isClosed()) silence = 'closed';
        if (now >= deadline || silence === 'closed') break;
        if (pending.bounced !== null) {
          silence = pending.bounced;
          nextSend = now + this.backoff(retry++);
        } else if (pending.reconnected) nextSend = now;
        pending.bounced = null;
        pending.reconnected = false;
        if (now >= nextSend) {
          if (!this.connected) {
            silence = 'disconnected';
            nextSend = now + this.backoff(retry++);
          } else if (this.send(request, `${this.inbox}.${token}`)) {
            silence = 'timeout';
            nextSend = now + this.attemptTimeoutMs;
          } else silence = 'closed';
        }
        if (silence !== 'closed') await this.waitFor(pending, Math.min(nextSend, deadline) - now);
      }
    } finally {
      this.pending.delete(token);
    }
    return this.unavailable(silence, deadlineMs);
  }

  private send(request: Uint8Array, replyTo: string): boolean {
    try {
      this.nc.publish(this.subject, request, { reply: replyTo });
      return true;
    } catch {
      return false; // closed or draining
    }
  }

  private received(msg: Msg): void {
    const pending = this.pending.get(msg.subject.slice(this.inbox.length + 1));
    if (pending === undefined) return; // answered already, or given up
    if (msg.data.length === 0 && msg.headers?.code === 503) pending.bounced = 'no responders';
    else {
      const reply = decodeReply(msg.data);
      // A core's own UNAVAILABLE (fenced, stopping) is retried: another core may lead by then.
      if (!reply.ok && reply.code === 'UNAVAILABLE') pending.bounced = 'refused';
      else pending.reply = reply;
    }
    pending.wake();
  }

  /** Waits up to `ms`, or until something arrives for `pending` or the connection changes. */
  private async waitFor(pending: Pending, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      pending.wake = resolve;
      timer = setTimeout(resolve, Math.max(0, ms));
    });
    clearTimeout(timer);
    pending.wake = () => undefined;
  }

  private backoff(retry: number): number {
    const ceiling = Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** retry);
    return Math.max(this.minBackoffMs, ceiling * (0.5 + Math.random() / 2));
  }

  private unavailable(silence: Silence, deadlineMs: number): BusUnavailable {
    const message = silence === 'closed'
      ? 'no leader core can be reached: the connection to NATS is closed'
      : `no leader core answered within ${deadlineMs} ms (${SILENCE[silence]}); retry shortly`;
    return { ...reject('UNAVAILABLE', message), code: 'UNAVAILABLE', retryAfterSeconds: this.retryAfterSeconds };
  }

  /** A disconnect stops the sending until the reconnect, which sends every pending submission again at once. */
  private async followConnection(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect' || status.type === 'close') this.connected = false;
      else if (status.type === 'reconnect') this.connected = true;
      else continue;
      for (const pending of this.pending.values()) {
        pending.reconnected = this.connected;
        pending.wake();
      }
    }
  }
}

/** The handler's promise, rejected rather than thrown if the handler throws before it returns one. */
function call(handler: CommandHandler, commandId: string, command: Command): Promise<BusReply> {
  try {
    return handler(commandId, command);
  } catch (error) {
    return Promise.reject(error);
  }
}
