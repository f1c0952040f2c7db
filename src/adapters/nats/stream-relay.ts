/**
 * A gateway's end of the stream relay (docs/deploy.md "Streams across gateways"). The gateway
 * admits a stream (caps, credentials, the route's checks) and writes its head; the producer
 * (stream-producer.ts) joins it to the views and sends its frames, which this end writes to the
 * client's socket. What stays here: the socket, its buffer and slow-consumer rule, heartbeats,
 * credential re-checks and cancel-on-disconnect (the gateway's StreamHub).
 *
 * A relayed stream ends with UPSTREAM_UNAVAILABLE (retryable: the client reconnects, to any
 * gateway) when the producer answers no join, when its beacon stops for PRODUCER_SILENCE_MS, when
 * another producer took over (frames of a new epoch), or when a frames message was lost (a gap in
 * the per-gateway seq): a stream never shows a gap.
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { StreamOpening, StreamRelay } from '../../gateway/streams/open.ts';
import type { StreamConnection } from '../../gateway/streams/sse.ts';
import { BEACON_MS, STREAM_SUBJECTS, type JoinReply, type JoinRequest, type StreamRefusal } from './stream-producer.ts';
import { decodeFrames, ENTRY_FAIL } from './stream-wire.ts';

/** A producer not heard from for this long is gone: its streams end (retryable). */
export const PRODUCER_SILENCE_MS = 3_000;
/** How long a join may wait for the producer's answer. */
const JOIN_TIMEOUT_MS = 5_000;

interface Relayed {
  readonly conn: StreamConnection;
  /** The producer's epoch once it answered the join (null until then). */
  epoch: number | null;
  /** The connection ended before the producer answered: tell it once it has. */
  endedEarly: boolean;
}

export interface StreamRelayOptions {
  readonly report: (error: unknown, message: string) => void;
  /**
   * Runs `step(0..count-1)`, then `done`, in order with the jobs queued before (the hub's sliced
   * fan-out, StreamHub.fanOut: a frame for thousands of connections must not hold the event loop).
   */
  readonly fanOut: (count: number, step: (index: number) => void, done: () => void) => void;
}

export class StreamRelayClient implements StreamRelay {
  /** This gateway's name on the relay, new at each start. */
  readonly gateway = randomBytes(6).toString('hex');
  private readonly relayed = new Map<number, Relayed>();
  /** The last frames message seq of each producer epoch heard. */
  private readonly seqs = new Map<number, number>();
  /** When each producer epoch's beacon (or frames) was last heard. */
  private readonly heard = new Map<number, number>();
  private readonly subscriptions: Subscription[] = [];
  private timer: NodeJS.Timeout | null = null;
  private ended: number[] = [];
  private nextId = 1;
  private closing = false;

  constructor(private readonly nc: NatsConnection, private readonly options: StreamRelayOptions) {}

  start(): void {
    this.subscriptions.push(
      this.nc.subscribe(STREAM_SUBJECTS.frames(this.gateway), { callback: (error, msg) => (error === null ? this.frames(msg.data) : this.options.report(error, 'stream relay subscription failed')) }),
      this.nc.subscribe(STREAM_SUBJECTS.producer, { callback: (error, msg) => (error === null ? this.producerHeard(msg.json<{ epoch: number }>().epoch) : undefined) }),
    );
    this.timer = setInterval(() => this.tick(), BEACON_MS);
    this.timer.unref();
    this.beacon();
  }

  join(conn: StreamConnection, opening: StreamOpening): void {
    const id = this.nextId++;
    const entry: Relayed = { conn, epoch: null, endedEarly: false };
    this.relayed.set(id, entry);
    conn.onClose(() => {
      this.relayed.delete(id);
      if (entry.epoch === null) entry.endedEarly = true;
      else this.end(id);
    });
    const request: JoinRequest = { ...opening, gateway: this.gateway, conn: id };
    this.nc.request(STREAM_SUBJECTS.join, JSON.stringify(request), { timeout: JOIN_TIMEOUT_MS }).then(
      (msg) => this.joined(id, entry, msg.json<JoinReply>()),
      () => this.refuse(entry, { code: 'UPSTREAM_UNAVAILABLE', message: 'no stream producer is answering; reconnect', retryable: true }),
    );
  }

  /** Stops relaying (the gateway's hub ends the streams themselves). */
  close(): void {
    this.closing = true;
    if (this.timer !== null) clearInterval(this.timer);
    for (const s of this.subscriptions) s.unsubscribe();
  }

  private joined(id: number, entry: Relayed, reply: JoinReply): void {
    if ('refused' in reply) return this.refuse(entry, reply.refused);
    entry.epoch = reply.epoch;
    if (entry.endedEarly) return this.end(id);
    this.producerHeard(reply.epoch);
  }

  private refuse(entry: Relayed, refusal: StreamRefusal): void {
    entry.conn.fail(refusal.code, refusal.message, refusal.retryable);
  }

  private frames(data: Uint8Array): void {
    let message;
    try {
      message = decodeFrames(data);
    } catch (error) {
      this.options.report(error, 'a stream relay message could not be read');
      return;
    }
    const { epoch, seq } = message;
    const last = this.seqs.get(epoch) ?? 0;
    this.seqs.set(epoch, seq);
    this.producerHeard(epoch);
    if (seq !== last + 1) this.endEpoch(epoch, 'frames were lost between the stream producer and this gateway; reconnect');
    for (const e of message.entries) {
      const refusal = e.kind === ENTRY_FAIL ? (JSON.parse(e.data.toString()) as StreamRefusal) : null;
      this.options.fanOut(e.ids.length, (i) => {
        const id = e.ids[i]!;
        const entry = this.relayed.get(id);
        if (entry === undefined || !entry.conn.isOpen) this.end(id); // ended here already: the producer still holds it
        else if (refusal !== null) entry.conn.fail(refusal.code, refusal.message, refusal.retryable);
        else entry.conn.write(e.data);
      }, () => undefined);
    }
  }

  private producerHeard(epoch: number): void {
    const known = this.heard.has(epoch);
    this.heard.set(epoch, performance.now());
    if (known) return;
    // A new producer: the streams of the others end (their producer lost its lease or died).
    for (const other of [...this.heard.keys()]) {
      if (other !== epoch) {
        this.heard.delete(other);
        this.seqs.delete(other);
        this.endEpoch(other, 'the stream producer changed; reconnect');
      }
    }
  }

  /** Ends the streams of producer `epoch` here (retryable: the client reconnects). */
  private endEpoch(epoch: number, message: string): void {
    for (const entry of [...this.relayed.values()]) {
      if (entry.epoch === epoch) entry.conn.fail('UPSTREAM_UNAVAILABLE', message, true);
    }
  }

  private end(id: number): void {
    if (this.ended.length === 0) setImmediate(() => this.sendEnded());
    this.ended.push(id);
  }

  private sendEnded(): void {
    const conns = this.ended;
    this.ended = [];
    if (conns.length === 0 || this.nc.isClosed() || this.closing) return;
    this.nc.publish(STREAM_SUBJECTS.closed, JSON.stringify({ gateway: this.gateway, conns }));
  }

  private beacon(): void {
    if (this.nc.isClosed() || this.closing) return;
    this.nc.publish(STREAM_SUBJECTS.gateway, JSON.stringify({ gateway: this.gateway }));
  }

  private tick(): void {
    this.beacon();
    const now = performance.now();
    for (const [epoch, at] of this.heard) {
      if (now - at < PRODUCER_SILENCE_MS) continue;
      this.heard.delete(epoch);
      this.seqs.delete(epoch);
      this.endEpoch(epoch, 'the stream producer stopped answering; reconnect');
    }
  }
}
