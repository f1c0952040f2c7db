/**
 * The stream hub: the one place that connects the sequencer's published events to open SSE
 * connections. It owns what every stream shares and nothing stream-specific:
 *
 *   - the event source: one `sequencer.subscribe` listener, called in commit order after each
 *     batch is durable, handing every command's events to the registered view modules
 *     (`EventSink`s). Sinks update their mirrors, mark groups dirty or queue records; they never
 *     write to sockets inside the sequencer's delivery. Because the journal is written while the
 *     core goes on applying commands, live core state can be ahead of what is durable; views that
 *     must show only durable state (books, positions) keep event-sourced mirrors instead of
 *     reading the core, so a stream never shows what a crash could take back;
 *   - `Group`: the fan-out unit. A view is computed once per group and interval on a gateway
 *     timer, serialized once, and the same bytes are written to every member. Each group carries
 *     its own monotonically increasing `seq`, starting from the hub's `firstSeq` (the wall clock
 *     in ms, or above every seq the hub issued); a member's snapshot carries the group's current
 *     seq and every later frame of the group the next one, so each connection sees a strictly
 *     increasing, gap-free eventSeq from its snapshot on (the SSE `id:` equals it). A group's timer
 *     starts with its first member and stops with its last. Groups whose frames every member
 *     shares keep the last few seconds of them, so a client that asks to resume (`resume=true`
 *     with Last-Event-ID) gets the frames it missed instead of a snapshot (`Group.resumeFrom`);
 *   - fan-out (`broadcast`): writes go out in time slices of FANOUT_SLICE_MS, yielding to the
 *     event loop between slices, so a frame for 10,000 subscribers never holds up commands and
 *     HTTP requests for the whole write loop. Jobs run in order, so each connection receives its
 *     frames in seq order; a group whose previous frame is still going out skips its tick (its
 *     changes stay pending and go into the next frame), so a fan-out that cannot keep up lowers
 *     the frame rate instead of queueing memory;
 *   - connections: admission caps, one heartbeat timer for all connections (with the stall
 *     check), the periodic credential re-check of private streams (SSE_AUTH_RECHECK_MS; a revoked
 *     or expired key or session ends the stream with UNAUTHENTICATED, retryable false), and
 *     UPSTREAM_UNAVAILABLE for everyone when the core stops or the service shuts down.
 *
 * View modules (book-view.ts, account-view.ts, balances-view.ts, options-view.ts, board-view.ts)
 * subclass Group, register an EventSink where they follow events, and are wired to routes by
 * their route module.
 * Tested through the stream tests in test/streams/.
 */
import type { ServerResponse } from 'node:http';
import type { ExchangeEvent } from '../../core/events.ts';
import type { GatewayContext } from '../context.ts';
import { ConnectionCaps } from './admission.ts';
import type { StreamRelay, StreamRoute } from './open.ts';
import { dataChunk, eventChunk, SseConnection, type StreamConnection, type StreamErrorCode } from './sse.ts';

/** Longest stretch of socket writes before the fan-out yields to the event loop. */
export const FANOUT_SLICE_MS = 4;

interface FanOutJob {
  readonly count: number;
  readonly step: (index: number) => void;
  next: number;
  readonly done: () => void;
}

export interface StreamSettings {
  readonly heartbeatMs: number;
  readonly maxConnections: number;
  readonly maxPerIp: number;
  readonly maxPerAccount: number;
  readonly maxOptionStreamsPerAccount: number;
  readonly maxBufferBytes: number;
  readonly authRecheckMs: number;
}

export interface EventSink {
  onEvents(events: readonly ExchangeEvent[]): void;
  /** Takes the recovered core's state as its starting point (once, before any event). */
  seed?(): void;
}

/** A private stream's credential, asked again every SSE_AUTH_RECHECK_MS while the stream is open. */
export type CredentialCheck = () => boolean | Promise<boolean>;

export interface StreamStats {
  readonly connections: number;
  readonly groups: number;
  readonly opened: number;
  readonly slowConsumerDrops: number;
  /** Largest number of bytes any connection held in user space after a write. */
  readonly peakBufferedBytes: number;
}

export class StreamHub {
  readonly caps: ConnectionCaps;
  private readonly epoch = Date.now().toString(36);
  private readonly connections = new Set<SseConnection>();
  private readonly credentials = new Map<SseConnection, CredentialCheck>();
  private readonly sinks: EventSink[] = [];
  private readonly timers: NodeJS.Timeout[];
  private readonly unsubscribe: () => void;
  private readonly jobs: FanOutJob[] = [];
  private pumping = false;
  private nextGroup = 1;
  /** Highest eventSeq any group (or per-connection stream) of this hub issued. */
  private highestSeq = 0;
  private activeGroups = 0;
  private closed = false;
  /** Set as the clean shutdown starts: the streams it ends do not cancel orders (cancel-on-disconnect.ts). */
  private shuttingDown = false;
  private readonly counters = { opened: 0, slowConsumerDrops: 0, peakBufferedBytes: 0 };
  private readonly routes = new Map<string, StreamRoute<never>>();
  /** Set on a gateway whose streams a producer serves (docs/deploy.md "Streams across gateways"). */
  private streamRelay: StreamRelay | null = null;

  constructor(
    readonly ctx: GatewayContext,
    readonly settings: StreamSettings,
    private readonly report: (error: unknown, message: string) => void,
  ) {
    this.caps = new ConnectionCaps(settings);
    this.unsubscribe = ctx.sequencer.subscribe((events) => this.dispatch(events));
    this.timers = [
      setInterval(() => this.beat(), settings.heartbeatMs),
      setInterval(() => this.recheck(), settings.authRecheckMs),
    ];
    for (const t of this.timers) t.unref();
  }

  /** Registers a stream route by name, for the producer's side of the relay. */
  addRoute<I>(route: StreamRoute<I>): StreamRoute<I> {
    this.routes.set(route.name, route as StreamRoute<never>);
    return route;
  }

  /** The route a relayed opening names (undefined: no such route). */
  route(name: string): StreamRoute<unknown> | undefined {
    return this.routes.get(name) as StreamRoute<unknown> | undefined;
  }

  get relay(): StreamRelay | null {
    return this.streamRelay;
  }

  /** From now on, streams this hub admits are opened by the producer through `relay`. */
  relayTo(relay: StreamRelay | null): void {
    this.streamRelay = relay;
  }

  addSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /**
   * Seeds every mirror from the core once its state is recovered, before it takes commands: live
   * and durable state then coincide, and published events carry the mirrors on from there.
   */
  seedFromCore(): void {
    for (const sink of this.sinks) sink.seed?.();
  }

  /** Starts an SSE response on a hijacked reply; the slot from `caps.admit` is released on close. */
  connect(
    res: ServerResponse,
    headers: Record<string, string | number | string[]>,
    credential: CredentialCheck | null,
    release: () => void,
  ): SseConnection {
    const conn = SseConnection.open(res, headers, this.settings.maxBufferBytes, {
      onSlowConsumer: () => this.counters.slowConsumerDrops++,
      onBuffered: (bytes) => {
        if (bytes > this.counters.peakBufferedBytes) this.counters.peakBufferedBytes = bytes;
      },
    });
    this.connections.add(conn);
    this.counters.opened++;
    if (credential !== null) this.credentials.set(conn, credential);
    conn.onClose(() => {
      this.connections.delete(conn);
      this.credentials.delete(conn);
      release();
    });
    return conn;
  }

  /**
   * Writes `frame` to every target, in time slices; `done` runs once the last target was
   * written (or the hub closed). Jobs run in the order they were queued.
   */
  broadcast(frame: Buffer, targets: Iterable<StreamConnection>, done: () => void = () => undefined): void {
    const list = [...targets];
    this.fanOut(list.length, (i) => list[i]!.write(frame), done);
  }

  /** Runs `step(0..count-1)` in time slices, after the jobs queued before it; then `done`. */
  fanOut(count: number, step: (index: number) => void, done: () => void): void {
    this.jobs.push({ count, step, next: 0, done });
    if (!this.pumping) {
      this.pumping = true;
      this.pump();
    }
  }

  nextGroupId(): string {
    return `${this.epoch}.${this.nextGroup++}`;
  }

  /**
   * The first eventSeq of a new group (or per-connection stream): max(wall clock in ms, highest
   * seq this hub issued + 1). A group's seqs therefore never overlap those of an earlier instance
   * of the same view in this process, nor, while seqs do not run ahead of the clock, those of a
   * process before a restart; a Last-Event-ID from either falls outside the new group's range
   * (docs/architecture.md "Streams").
   */
  firstSeq(): number {
    const seq = Math.max(Date.now(), this.highestSeq + 1);
    this.highestSeq = seq;
    return seq;
  }

  /** A group or stream moved on to `seq`. */
  noteSeq(seq: number): void {
    if (seq > this.highestSeq) this.highestSeq = seq;
  }

  groupStarted(): void {
    this.activeGroups++;
  }

  groupStopped(): void {
    this.activeGroups--;
  }

  reportError(error: unknown, message: string): void {
    this.report(error, message);
  }

  stats(): StreamStats {
    return { connections: this.connections.size, groups: this.activeGroups, ...this.counters };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Ends every stream (UPSTREAM_UNAVAILABLE, retryable) and stops listening; for shutdown. */
  close(): void {
    if (this.closed) return;
    this.shuttingDown = true;
    this.failEveryone('UPSTREAM_UNAVAILABLE', 'the server is shutting down; reconnect', true);
    this.closed = true;
    this.unsubscribe();
    for (const t of this.timers) clearInterval(t);
  }

  /** The core stopped: every stream ends with UPSTREAM_UNAVAILABLE (retryable). */
  upstreamDown(): void {
    const message = 'the exchange core is unavailable; reconnect with backoff';
    this.failEveryone('UPSTREAM_UNAVAILABLE', message, true);
  }

  private failEveryone(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.connections]) conn.fail(code, message, retryable);
  }

  private pump(): void {
    const deadline = performance.now() + FANOUT_SLICE_MS;
    while (this.jobs.length > 0) {
      const job = this.jobs[0]!;
      while (job.next < job.count) {
        try {
          job.step(job.next++);
        } catch (error) {
          this.report(error, 'stream fan-out step failed');
        }
        if ((job.next & 15) === 0 && performance.now() > deadline && !this.closed) {
          setImmediate(() => this.pump());
          return;
        }
      }
      this.jobs.shift();
      job.done();
    }
    this.pumping = false;
  }

  private dispatch(events: readonly ExchangeEvent[]): void {
    for (const sink of this.sinks) {
      try {
        sink.onEvents(events);
      } catch (error) {
        this.report(error, 'stream event sink failed');
      }
    }
  }

  private beat(): void {
    const list = [...this.connections];
    this.fanOut(list.length, (i) => list[i]!.heartbeat(), () => undefined);
  }

  private recheck(): void {
    if (this.connections.size > 0 && !this.ctx.sequencer.isHealthy()) return this.upstreamDown();
    for (const [conn, check] of this.credentials) {
      const end = (ok: boolean) => {
        if (!ok) conn.fail('UNAUTHENTICATED', 'the session or API key was revoked or has expired', false);
      };
      const result = check();
      if (typeof result === 'boolean') end(result);
      else result.then(end, () => end(false));
    }
  }
}

/** How long a group keeps the frames it sent for members that resume (`Group.resumeFrom`). */
export const RESUME_WINDOW_MS = 10_000;
/** At most this many frames are kept per group for resuming. */
export const RESUME_MAX_FRAMES = 256;
/** At most this many bytes of frames are kept per group for resuming. */
export const RESUME_MAX_BYTES = 1 << 20;

/** A frame a group wrote to all its members, kept for resuming. */
interface KeptFrame {
  readonly seq: number;
  readonly frame: Buffer;
  /** performance.now() when it was kept. */
  readonly at: number;
}

/**
 * A fan-out group: members share one computed view, one timer and one seq. Subclasses add
 * members (calling `retain`/`release`), compute in `tick`, and end members in `failAll`.
 *
 * Resume: a group whose frames are shared by all members keeps each one (`keep`) in a ring bounded
 * by RESUME_WINDOW_MS, RESUME_MAX_FRAMES and RESUME_MAX_BYTES. A joiner that asked to resume after
 * seq r (`?resume=true` and `Last-Event-ID: r`) gets the kept frames after r instead of a snapshot
 * when r is one of this group's seqs (origin <= r <= seq) and every frame after it is still kept
 * (`resumeFrom`); the state it then holds is the members', exactly what a snapshot would carry.
 */
export abstract class Group {
  /** The seq this instance of the group started at (from the hub: unique, see StreamHub.firstSeq). */
  readonly origin: number;
  readonly id: string;
  private atSeq: number;
  /** Frames sent to all members, contiguous in seq, oldest first. */
  private kept: KeptFrame[] = [];
  private keptBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private retained = 0;
  /** A frame of this group is still being written to its members (see StreamHub.broadcast). */
  private sending = false;
  private flushQueued = false;

  constructor(
    protected readonly hub: StreamHub,
    readonly intervalMs: number,
    private readonly onEmpty: () => void,
  ) {
    this.id = hub.nextGroupId();
    this.origin = hub.firstSeq();
    this.atSeq = this.origin;
  }

  /** Seq of the view state members hold; a new frame increments it first (`advance`). */
  get seq(): number {
    return this.atSeq;
  }

  get memberCount(): number {
    return this.retained;
  }

  protected eventId(seq: number): string {
    return `${this.id}.${seq}`;
  }

  /**
   * A frame of this group at its current seq (sourceTs = engineTs: the engine is the source). A
   * snapshot for a member joining later carries the seq of the last delta (resume continues from
   * it), so its eventId is set apart from that delta's.
   */
  protected frame(event: string, eventType: string, engineTs: number, payload: string, type?: string) {
    const seq = this.seq;
    const eventId = event === 'snapshot' ? `${this.eventId(seq)}.snapshot` : this.eventId(seq);
    const fields = { eventId, eventType, eventSeq: seq, engineTs, sourceTs: engineTs, payload };
    return eventChunk(event, type === undefined ? fields : { ...fields, type });
  }

  /** A data-only frame (no `event:` field) of this group at its current seq. */
  protected dataFrame(eventType: string, engineTs: number, sourceTs: number, payload: string): Buffer {
    const seq = this.seq;
    return dataChunk({ eventId: this.eventId(seq), eventType, eventSeq: seq, engineTs, sourceTs, payload });
  }

  /** Moves to the next seq (before building the frame that carries it). */
  protected advance(): void {
    this.atSeq++;
    this.hub.noteSeq(this.atSeq);
  }

  /**
   * Keeps `frame`, the one written to every member at the current seq, for joiners that resume
   * (`send` keeps what it sends; a group that writes its shared frame otherwise calls it). A
   * seq the group moved past without keeping its frame breaks the run: what was kept before it is
   * dropped, and no joiner resumes from before it.
   */
  protected keep(frame: Buffer): void {
    const last = this.kept.at(-1);
    if (last !== undefined && last.seq !== this.atSeq - 1) this.forgetKept();
    this.kept.push({ seq: this.atSeq, frame, at: performance.now() });
    this.keptBytes += frame.length;
    this.pruneKept();
  }

  /**
   * Writes to a joiner that asked to resume after seq `after` the frames it missed, and returns
   * true; or returns false (the caller then writes the snapshot) when `after` is null, not one of
   * this group instance's seqs, older than what the group still keeps, or when the frames missed
   * are more bytes than a connection may leave unsent (SSE_MAX_BUFFER_BYTES).
   */
  protected resumeFrom(conn: StreamConnection, after: number | null): boolean {
    if (after === null || after < this.origin || after > this.atSeq) return false;
    if (after === this.atSeq) return true;
    this.pruneKept();
    const first = this.kept[0];
    if (first === undefined || first.seq > after + 1 || this.kept.at(-1)!.seq !== this.atSeq) return false;
    const from = after + 1 - first.seq;
    // more than a connection may hold unsent would end it as a slow consumer: a snapshot instead
    let bytes = 0;
    for (let i = from; i < this.kept.length; i++) bytes += this.kept[i]!.frame.length;
    if (bytes > this.hub.settings.maxBufferBytes) return false;
    for (let i = from; i < this.kept.length; i++) conn.write(this.kept[i]!.frame);
    return true;
  }

  private pruneKept(): void {
    const oldest = performance.now() - RESUME_WINDOW_MS;
    let drop = 0;
    let bytes = this.keptBytes;
    while (
      drop < this.kept.length &&
      (this.kept.length - drop > RESUME_MAX_FRAMES || bytes > RESUME_MAX_BYTES || this.kept[drop]!.at < oldest)
    ) {
      bytes -= this.kept[drop]!.frame.length;
      drop++;
    }
    if (drop === 0) return;
    this.kept = this.kept.slice(drop);
    this.keptBytes = bytes;
  }

  private forgetKept(): void {
    this.kept = [];
    this.keptBytes = 0;
  }

  protected retain(): void {
    if (this.retained++ > 0) return;
    this.hub.groupStarted();
    this.timer = setInterval(() => this.run(), this.intervalMs);
  }

  protected release(): void {
    if (--this.retained > 0) return;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.hub.groupStopped();
    this.forgetKept();
    this.stopped();
    this.onEmpty();
  }

  /** Called once when the last member left (detach from feeds). */
  protected stopped(): void {}

  /**
   * One tick now, for members only; skipped while the previous frame is still going out unless
   * `force`. An exception ends the members with INTERNAL.
   */
  protected run(force = false): void {
    if (this.retained === 0 || (this.sending && !force)) return;
    try {
      this.tick();
    } catch (error) {
      this.hub.reportError(error, 'stream view failed');
      this.failAll('INTERNAL', 'the stream failed; reconnect', true);
    }
  }

  protected abstract tick(): void;

  /**
   * A tick once this event-loop turn ends, even while a frame is going out: the view's pending
   * changes passed their bound and must not wait for the interval (queued once until it runs).
   */
  protected flushSoon(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.run(true);
    });
  }

  /**
   * Writes `frame`, shared by every member at the current seq, to `members` through the hub's
   * sliced fan-out, and keeps it for joiners that resume (`keep`), members or not.
   */
  protected send(frame: Buffer, members: ReadonlySet<StreamConnection>): void {
    this.keep(frame);
    if (members.size === 0) return;
    this.sending = true;
    this.hub.broadcast(frame, members, () => {
      this.sending = false;
    });
  }

  /** Runs `step` for each of `count` members through the hub's sliced fan-out. */
  protected sendEach(count: number, step: (index: number) => void): void {
    this.sending = true;
    this.hub.fanOut(count, step, () => {
      this.sending = false;
    });
  }

  abstract failAll(code: StreamErrorCode, message: string, retryable: boolean): void;
}
