/**
 * The stream producer's end of the relay (docs/deploy.md "Streams across gateways"): the one
 * gateway holding the producer lease runs every stream view of the deployment, for the
 * connections all gateways admitted, so each group's frames and eventSeqs are made once and are
 * the same on every gateway.
 *
 *   exchange.streams.join          request (queue `streams`): open a route for a gateway's connection
 *   exchange.streams.frames.<gw>   the producer's frames for one gateway (stream-wire.ts)
 *   exchange.streams.closed        a gateway's connections that ended
 *   exchange.streams.gateway       a gateway's beacon, every second
 *   exchange.streams.producer      the producer's beacon, every second, with its epoch
 *
 * A connection here is a RemoteConnection: the views write to it as to a socket, and its writes
 * collect per gateway until the end of the event-loop turn, a frame shared by many of them
 * travelling once. A gateway silent for GATEWAY_SILENCE_MS is taken for gone: its connections
 * leave their groups.
 */
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ApiError } from '../../gateway/errors.ts';
import type { StreamHub } from '../../gateway/streams/hub.ts';
import type { StreamOpening } from '../../gateway/streams/open.ts';
import type { StreamConnection, StreamErrorCode } from '../../gateway/streams/sse.ts';
import { encodeFrames, ENTRY_FAIL, ENTRY_WRITE, entryBytes, type RelayEntry } from './stream-wire.ts';

export const STREAM_SUBJECTS = {
  join: 'exchange.streams.join',
  frames: (gateway: string) => `exchange.streams.frames.${gateway}`,
  closed: 'exchange.streams.closed',
  gateway: 'exchange.streams.gateway',
  producer: 'exchange.streams.producer',
} as const;
export const STREAM_QUEUE = 'streams';
/** Between beacons, either way. */
export const BEACON_MS = 1_000;
/** A gateway not heard from for this long is gone; its connections are dropped. */
export const GATEWAY_SILENCE_MS = 5_000;
/** Bytes per frames message (below NATS's default max_payload of 1 MiB). */
const MESSAGE_BYTES = 512 * 1024;

/** A relayed stream's opening, as the gateway sends it. */
export interface JoinRequest extends StreamOpening {
  readonly gateway: string;
  readonly conn: number;
}

export interface StreamRefusal {
  readonly code: StreamErrorCode;
  readonly message: string;
  readonly retryable: boolean;
}

export type JoinReply = { readonly epoch: number } | { readonly refused: StreamRefusal };

/** A refusal of the route (thrown by its check or open) as the stream's error event. */
export function refusalOf(error: unknown): StreamRefusal {
  if (error instanceof ApiError) {
    if (error.status === 503) return { code: 'UPSTREAM_UNAVAILABLE', message: error.message, retryable: true };
    if (error.status < 500) return { code: 'INVALID_PARAMS', message: error.message, retryable: false };
  }
  return { code: 'INTERNAL', message: 'the stream could not start; reconnect', retryable: true };
}

class RemoteConnection implements StreamConnection {
  private closed = false;
  private readonly cleanups: (() => void)[] = [];

  constructor(private readonly link: GatewayLink, readonly id: number) {}

  get isOpen(): boolean {
    return !this.closed;
  }

  write(data: Buffer): boolean {
    if (this.closed) return false;
    this.link.push(ENTRY_WRITE, this.id, data);
    return true;
  }

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.cleanups.push(fn);
  }

  fail(code: StreamErrorCode, message: string, retryable: boolean): void {
    if (this.closed) return;
    this.link.push(ENTRY_FAIL, this.id, Buffer.from(JSON.stringify({ code, message, retryable })));
    this.end();
  }

  /** Leaves every group (the gateway's connection ended, or the gateway is gone). */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.link.conns.delete(this.id);
    for (const fn of this.cleanups.splice(0)) fn();
  }
}

/** One gateway's connections here, and the frames waiting for it. */
class GatewayLink {
  readonly conns = new Map<number, RemoteConnection>();
  lastHeard = performance.now();
  private seq = 0;
  private entries: RelayEntry[] = [];
  private flushing = false;

  constructor(private readonly producer: StreamProducer, readonly gateway: string) {}

  push(kind: RelayEntry['kind'], id: number, data: Buffer): void {
    const last = this.entries.at(-1);
    if (last !== undefined && last.kind === kind && last.data === data) last.ids.push(id);
    else this.entries.push({ kind, ids: [id], data });
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.flushing = false;
    const entries = this.entries;
    this.entries = [];
    let batch: RelayEntry[] = [];
    let bytes = 0;
    for (const e of entries) {
      const size = entryBytes(e);
      if (batch.length > 0 && bytes + size > MESSAGE_BYTES) {
        this.send(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(e);
      bytes += size;
    }
    if (batch.length > 0) this.send(batch);
  }

  private send(entries: RelayEntry[]): void {
    try {
      this.producer.publish(STREAM_SUBJECTS.frames(this.gateway), encodeFrames(this.producer.epoch, this.seq + 1, entries));
      this.seq++;
    } catch (error) {
      // A frame past the server's max_payload: the streams it was for end rather than skip it.
      this.producer.report(error, `a stream relay message to gateway ${this.gateway} could not be sent`);
      for (const e of entries) for (const id of e.ids) this.conns.get(id)?.fail('INTERNAL', 'a frame could not be relayed; reconnect', true);
    }
  }
}

export interface StreamProducerOptions {
  /** This producer's epoch: a u32 no earlier producer used (a random one). */
  readonly epoch: number;
  readonly report: (error: unknown, message: string) => void;
}

export class StreamProducer {
  readonly epoch: number;
  private readonly links = new Map<string, GatewayLink>();
  private readonly subscriptions: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;

  constructor(private readonly nc: NatsConnection, private readonly hub: StreamHub, private readonly options: StreamProducerOptions) {
    this.epoch = options.epoch;
  }

  start(): void {
    const on = (subject: string, handle: (msg: Msg) => void, queue?: string) => {
      this.subscriptions.push(this.nc.subscribe(subject, {
        ...(queue === undefined ? {} : { queue }),
        callback: (error, msg) => {
          if (error !== null) return this.options.report(error, 'stream relay subscription failed');
          try {
            handle(msg);
          } catch (e) {
            this.options.report(e, 'stream relay message could not be handled');
          }
        },
      }));
    };
    on(STREAM_SUBJECTS.join, (msg) => void this.join(msg), STREAM_QUEUE);
    on(STREAM_SUBJECTS.closed, (msg) => this.closed(msg));
    on(STREAM_SUBJECTS.gateway, (msg) => this.heard(String(msg.json<{ gateway: string }>().gateway)));
    this.timers.push(setInterval(() => this.beacon(), BEACON_MS), setInterval(() => this.sweep(), BEACON_MS));
    for (const t of this.timers) t.unref();
    this.beacon();
  }

  /** Ends every relayed stream (UPSTREAM_UNAVAILABLE, retryable: reconnect) and stops producing. */
  async stop(message = 'the stream producer stopped; reconnect'): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const s of this.subscriptions) s.unsubscribe();
    for (const link of this.links.values()) {
      for (const conn of [...link.conns.values()]) conn.fail('UPSTREAM_UNAVAILABLE', message, true);
      link.flush();
    }
    this.links.clear();
    if (!this.nc.isClosed()) await this.nc.flush().catch(() => undefined);
  }

  report(error: unknown, message: string): void {
    this.options.report(error, message);
  }

  publish(subject: string, data: Uint8Array): void {
    if (this.nc.isClosed()) return;
    this.nc.publish(subject, data);
  }

  private async join(msg: Msg): Promise<void> {
    let reply: JoinReply;
    try {
      const request = msg.json<JoinRequest>();
      const link = this.heard(String(request.gateway));
      const route = this.hub.route(request.route);
      if (route === undefined) throw new Error(`unknown stream route ${request.route}`);
      const join = await route.open(request.input);
      if (this.stopped) throw new ApiError('UNAVAILABLE', 'the stream producer stopped; reconnect');
      const conn = new RemoteConnection(link, request.conn);
      link.conns.get(request.conn)?.end();
      link.conns.set(request.conn, conn);
      join(conn, request.address, request.resumeAfter);
      reply = { epoch: this.epoch };
    } catch (error) {
      if (!(error instanceof ApiError)) this.options.report(error, 'a relayed stream could not be opened');
      reply = { refused: refusalOf(error) };
    }
    try {
      msg.respond(JSON.stringify(reply));
    } catch (error) {
      this.options.report(error, 'a stream join could not be answered');
    }
  }

  private closed(msg: Msg): void {
    const { gateway, conns } = msg.json<{ gateway: string; conns: number[] }>();
    const link = this.heard(String(gateway));
    for (const id of conns) link.conns.get(id)?.end();
  }

  private heard(gateway: string): GatewayLink {
    let link = this.links.get(gateway);
    if (link === undefined) this.links.set(gateway, (link = new GatewayLink(this, gateway)));
    link.lastHeard = performance.now();
    return link;
  }

  private beacon(): void {
    this.publish(STREAM_SUBJECTS.producer, Buffer.from(JSON.stringify({ epoch: this.epoch })));
  }

  private sweep(): void {
    const now = performance.now();
    for (const [gateway, link] of this.links) {
      if (now - link.lastHeard < GATEWAY_SILENCE_MS) continue;
      for (const conn of [...link.conns.values()]) conn.end();
      this.links.delete(gateway);
    }
  }
}
