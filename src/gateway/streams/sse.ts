/**
 * Server-Sent Events written by hand (research/stack.md 2.2 and recommendation 2): after
 * `reply.hijack()` the response head is written once with the headers the app's onRequest hooks
 * already set (X-Api-Version, X-RateLimit-*), then every frame goes straight to the socket as one
 * pre-built HTTP/1.1 chunk. A frame is built once per group and the same Buffer is written to
 * every subscriber, so fan-out costs one socket write per connection and no copy while the
 * kernel accepts the bytes. Headers: `content-type: text/event-stream`, `cache-control: no-cache`,
 * `x-accel-buffering: no` (no proxy buffering) and `connection: close` (the stream ends with its
 * connection, so no client queues a request behind it). A `retry:` line opens the stream;
 * `:heartbeat` comments follow every SSE_HEARTBEAT_MS. Liveness belongs to the heartbeat (Node's
 * idle timeout is switched off for streams; TCP keep-alive finds vanished peers).
 *
 * Backpressure: each connection has a byte budget (SSE_MAX_BUFFER_BYTES) for what Node holds in
 * user space because the kernel would not take it. A frame that would push the unflushed bytes
 * past the budget is not written; the connection gets `event: error` SLOW_CONSUMER (retryable)
 * and is closed, so memory per connection stays below max(budget, one frame) plus the error
 * frame. A client that has not taken a single byte for a whole heartbeat period while data
 * waits is dropped the same way. After an error frame the socket is half-closed and destroyed
 * CLOSE_GRACE_MS later if the peer never drains it.
 *
 * Assumptions: HTTP/1.1 (chunked transfer encoding); the request is not pipelined behind another
 * response (the caller checks `res.socket`). Tested by test/streams/sse.test.ts (a stalled
 * Writable, frame formats) and over real sockets by the other test/streams tests.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type StreamErrorCode =
  | 'INVALID_PARAMS'
  | 'UNAUTHENTICATED'
  | 'SLOW_CONSUMER'
  | 'UPSTREAM_UNAVAILABLE'
  | 'INTERNAL';

/** How long a closed stream's socket may take to drain its last bytes before it is destroyed. */
export const CLOSE_GRACE_MS = 2000;
/** Reconnection delay suggested to EventSource clients (`retry:` field). */
export const RETRY_MS = 1000;
/** Idle time before TCP keep-alive probes a stream's peer. */
const KEEPALIVE_MS = 60_000;

const CRLF = '\r\n';
const LAST_CHUNK = Buffer.from(`0${CRLF}${CRLF}`);

/** One SSE message as text: `id:`, `event:` and a single-line `data:` (JSON never has raw newlines). */
export function sseMessage(event: string, id: number | null, data: string): string {
  return `${id === null ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`;
}

/** Wraps SSE text as one HTTP/1.1 chunk, ready to be written to any number of sockets. */
export function chunk(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from(body.length.toString(16) + CRLF, 'latin1'), body, Buffer.from(CRLF)]);
}

export const HEARTBEAT_CHUNK = chunk(':heartbeat\n\n');

export function errorMessage(code: StreamErrorCode, message: string, retryable: boolean): string {
  return sseMessage('error', null, JSON.stringify({ code, message, retryable }));
}

export interface EnvelopeFields {
  readonly eventId: string;
  readonly eventType: string;
  readonly eventSeq: number;
  readonly engineTs: number;
  readonly sourceTs: number;
  /** JSON text of the payload, embedded as is. */
  readonly payload: string;
  /** Optional leading `type` field (the balances stream's `{ type, payload }`). */
  readonly type?: string;
}

/** The envelope `{ eventId, eventType, eventSeq, engineTs, sourceTs, payload }` around JSON text. */
export function envelope(e: EnvelopeFields): string {
  const type = e.type === undefined ? '' : `"type":${JSON.stringify(e.type)},`;
  return (
    `{${type}"eventId":${JSON.stringify(e.eventId)},"eventType":${JSON.stringify(e.eventType)},` +
    `"eventSeq":${e.eventSeq},"engineTs":${e.engineTs},"sourceTs":${e.sourceTs},"payload":${e.payload}}`
  );
}

/** A named event with the envelope as data and `id:` = eventSeq, as one chunk. */
export function eventChunk(event: string, e: EnvelopeFields): Buffer {
  return chunk(sseMessage(event, e.eventSeq, envelope(e)));
}

/**
 * A data-only message (no `event:` field, so EventSource delivers it as `message`) with the
 * envelope as data and `id:` = eventSeq, as one chunk.
 */
export function dataChunk(e: EnvelopeFields): Buffer {
  return chunk(`id: ${e.eventSeq}\ndata: ${envelope(e)}\n\n`);
}

/** The slice of a socket the connection needs (a net.Socket in production, a fake in tests). */

export type SinkSocket = Pick<Socket, 'write' | 'end' | 'destroy' | 'writableLength' | 'destroyed'> & {
  once(event: 'close', listener: () => void): unknown;
};

export interface ConnectionEvents {
  /** The connection was dropped as a slow consumer (counted by the hub). */
  onSlowConsumer(): void;
  /** Bytes held in user space after a write (the hub keeps the peak for its stats). */
  onBuffered(bytes: number): void;
}

/**
 * What a stream view writes to: an SSE connection of this process (SseConnection), or one a
 * gateway holds for the stream producer (docs/deploy.md "Streams across gateways").
 */
export interface StreamConnection {
  readonly isOpen: boolean;
  /** Writes one pre-built chunk; returns false when the connection is (now) closed. */
  write(data: Buffer): boolean;
  /** Registers work to undo when the connection ends. */
  onClose(fn: () => void): void;
  /** Sends `event: error` and closes. */
  fail(code: StreamErrorCode, message: string, retryable: boolean): void;
}

export class SseConnection implements StreamConnection {
  private closed = false;
  private readonly cleanups: (() => void)[] = [];
  private killTimer: NodeJS.Timeout | null = null;
  /** Bytes handed to write() so far; minus writableLength, the bytes the kernel has taken. */
  private written = 0;
  private stalledAt = -1;

  constructor(
    private readonly socket: SinkSocket,
    private readonly maxBufferBytes: number,
    private readonly events: ConnectionEvents,
  ) {
    socket.once('close', () => this.finish());
  }

  /**
   * Writes the response head through Node's own serializer (so the app's headers reach the
   * client) and returns the connection writing to the response's socket.
   */
  static open(
    res: ServerResponse,
    headers: Record<string, string | number | string[]>,
    maxBufferBytes: number,
    events: ConnectionEvents,
  ): SseConnection {
    const socket = res.socket as Socket;
    socket.setNoDelay(true);
    socket.setTimeout(0);
    socket.setKeepAlive(true, KEEPALIVE_MS);
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'transfer-encoding': 'chunked',
      // the stream ends with the connection: no client may queue a request behind it
      connection: 'close',
    });
    res.flushHeaders();
    const connection = new SseConnection(socket, maxBufferBytes, events);
    connection.write(chunk(`retry: ${RETRY_MS}\n\n`));
    return connection;
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Bytes accepted by write() that the socket has not yet handed to the kernel. */
  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  /** Registers work to undo when the connection ends (unsubscribe, release a cap slot). */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.cleanups.push(fn);
  }

  /** Writes one pre-built chunk; returns false when the connection is (now) closed. */
  write(data: Buffer): boolean {
    if (this.closed) return false;
    const pending = this.socket.writableLength;
    if (pending > 0 && pending + data.length > this.maxBufferBytes) {
      this.events.onSlowConsumer();
      const message = `the client did not read fast enough (more than ${this.maxBufferBytes} bytes waiting)`;
      this.fail('SLOW_CONSUMER', message, true);
      return false;
    }
    this.socket.write(data);
    this.written += data.length;
    const after = this.socket.writableLength;
    if (after > 0) this.events.onBuffered(after);
    return true;
  }

  /** Heartbeat, and the stall check: data waiting and no byte taken since the previous beat. */
  heartbeat(): void {
    if (this.closed) return;
    const waiting = this.socket.writableLength;
    const taken = this.written - waiting;
    if (waiting > 0 && taken === this.stalledAt) {
      this.events.onSlowConsumer();
      this.fail('SLOW_CONSUMER', 'the client stopped reading', true);
      return;
    }
    this.stalledAt = waiting > 0 ? taken : -1;
    this.write(HEARTBEAT_CHUNK);
  }

  /** Sends `event: error` and closes; the error frame is written even past the budget. */
  fail(code: StreamErrorCode, message: string, retryable: boolean): void {
    if (this.closed) return;
    this.socket.write(chunk(errorMessage(code, message, retryable)));
    this.end();
  }

  /** Ends the stream (last chunk), frees everything now, destroys the socket after the grace. */
  end(): void {
    if (this.closed) return;
    this.socket.end(LAST_CHUNK);
    this.killTimer = setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
    this.killTimer.unref();
    this.finish();
  }

  private finish(): void {
    if (this.socket.destroyed && this.killTimer !== null) {
      clearTimeout(this.killTimer);
      this.killTimer = null;
    }
    if (this.closed) return;
    this.closed = true;
    const cleanups = this.cleanups.splice(0);
    for (const fn of cleanups) fn();
  }
}
