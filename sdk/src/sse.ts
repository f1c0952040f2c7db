/**
 * Typed Server-Sent Events subscriptions that follow the contract's client rule: a stream opens
 * with a snapshot, then each `delta`/`update` must carry the next `eventSeq` (equal to the SSE `id:`);
 * on a gap, a frame before the snapshot, a dropped connection, a silent one (no byte, not even a
 * `:heartbeat`, for `idleTimeoutMs`) or a retryable `event: error`, the SDK reconnects and the new
 * connection's snapshot replaces the state (it sends no Last-Event-ID, so the service's opt-in
 * resume, `resume=true`, never applies: every connection starts with a snapshot). eventSeq is
 * checked only within a connection; its values start wherever the service's group is (from its
 * clock in ms), never assumed to be 1.
 *
 * Reconnects back off exponentially with jitter (`initialDelayMs` doubling to `maxDelayMs`; a
 * first reconnect after a gap is immediate), honour `Retry-After` on 429/503, sign in again on
 * 401 (or an `UNAUTHENTICATED` stream error) when the client can, and stop with an error on any
 * other refusal (400, 403, 404) or a non-retryable stream error. `GET /markets/board/stream`
 * sends data-only messages, each a full snapshot: every one is delivered as a snapshot.
 *
 * Frames are parsed with eventsource-parser over fetch's streaming body. Consume a subscription
 * with `for await`, or pass `onEvent` (then nothing is queued for iteration).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ApiError, parseRetryAfter, sleep, type Credentials } from './http.ts';
import type { StreamMessage, StreamPath, StreamQuery } from './types.ts';

export type StreamKind = 'snapshot' | 'delta' | 'update';

export interface StreamEvent<P extends StreamPath> {
  /** `snapshot` replaces everything held for this stream; `delta`/`update` apply on top. */
  readonly kind: StreamKind;
  readonly seq: number;
  /** 1 for the first connection, one more after each reconnect. */
  readonly connection: number;
  readonly message: StreamMessage<P>;
}

export type StreamStatus =
  | { readonly state: 'connecting'; readonly connection: number }
  | { readonly state: 'open'; readonly connection: number }
  | { readonly state: 'reconnecting'; readonly connection: number; readonly delayMs: number; readonly reason: string }
  | { readonly state: 'closed'; readonly error?: Error };

export interface StreamOptions<P extends StreamPath> {
  /** Path parameters, e.g. `{ marketId }` for /markets/{marketId}/trades/stream. */
  readonly params?: Record<string, string>;
  readonly query?: StreamQuery<P>;
  readonly onEvent?: (event: StreamEvent<P>) => void;
  readonly onStatus?: (status: StreamStatus) => void;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Reconnect attempts in a row without a snapshot before giving up (default: never give up). */
  readonly maxReconnects?: number;
  /** A connection silent this long is taken as dead (default 45 s: three heartbeat periods). */
  readonly idleTimeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** `event: error` as the service sends it. */
export class StreamError extends Error {
  constructor(readonly code: string, message: string, readonly retryable: boolean) {
    super(`${code}: ${message}`);
    this.name = 'StreamError';
  }
}

interface Ended {
  readonly reason: string;
  readonly delayMs?: number;
}

export interface StreamTransport {
  readonly baseUrl: string;
  readonly fetch: typeof fetch;
  credentials(): Credentials;
  url(path: string, params?: Record<string, string>, query?: object): string;
}

export class Subscription<P extends StreamPath> implements AsyncIterable<StreamEvent<P>> {
  private readonly queue: StreamEvent<P>[] = [];
  private waiting: ((r: IteratorResult<StreamEvent<P>>) => void) | null = null;
  private failed: Error | null = null;
  private closed = false;
  private readonly stop = new AbortController();
  /** Resolves when the subscription ends: closed by the caller, or rejects on a fatal error. */
  readonly done: Promise<void>;

  constructor(
    private readonly transport: StreamTransport,
    readonly path: P,
    private readonly options: StreamOptions<P> = {},
  ) {
    options.signal?.addEventListener('abort', () => this.close(), { once: true });
    this.done = this.run();
    this.done.catch(() => undefined); // reported through iteration, onStatus and `done`
  }

  /** Ends the subscription and its connection. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent<P>> {
    for (;;) {
      const next = this.queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.failed !== null) throw this.failed;
      if (this.closed) return;
      await new Promise<IteratorResult<StreamEvent<P>>>((resolve) => (this.waiting = resolve));
    }
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.({ done: false, value: undefined as never });
  }

  private emit(event: StreamEvent<P>): void {
    if (this.options.onEvent !== undefined) this.options.onEvent(event);
    else {
      this.queue.push(event);
      this.wake();
    }
  }

  private status(s: StreamStatus): void {
    this.options.onStatus?.(s);
  }

  private async run(): Promise<void> {
    const initial = this.options.initialDelayMs ?? 250;
    const max = this.options.maxDelayMs ?? 30_000;
    let failures = 0;
    let connection = 0;
    try {
      while (!this.closed) {
        connection++;
        this.status({ state: 'connecting', connection });
        const { ended, snapshot } = await this.connect(connection);
        if (this.closed) break;
        failures = snapshot ? 1 : failures + 1;
        if (this.options.maxReconnects !== undefined && failures > this.options.maxReconnects) {
          throw new Error(`${this.path}: gave up after ${failures - 1} reconnects without a snapshot (${ended.reason})`);
        }
        const backoff = Math.min(initial * 2 ** (failures - 1), max) * (0.5 + Math.random() / 2);
        const delayMs = Math.round(ended.delayMs ?? backoff);
        this.status({ state: 'reconnecting', connection, delayMs, reason: ended.reason });
        await sleep(delayMs, this.stop.signal);
      }
      this.status({ state: 'closed' });
    } catch (error) {
      this.failed = error instanceof Error ? error : new Error(String(error));
      this.closed = true;
      this.wake();
      this.status({ state: 'closed', error: this.failed });
      throw this.failed;
    }
  }

  /** One connection, until it ends; returns why, or throws when the stream must not be retried. */
  private async connect(connection: number): Promise<{ ended: Ended; snapshot: boolean }> {
    const abort = new AbortController();
    const onStop = () => abort.abort();
    this.stop.signal.addEventListener('abort', onStop, { once: true });
    // Written by the parser's callbacks: one object, so that the reads after them are not narrowed away.
    const st: { snapshot: boolean; ended: Ended | null; fatal: Error | null; renewing: Promise<boolean> | null } = {
      snapshot: false, ended: null, fatal: null, renewing: null,
    };
    let idle: ReturnType<typeof setTimeout> | undefined;
    const idleMs = this.options.idleTimeoutMs ?? 45_000;
    const end = (e: Ended) => {
      st.ended ??= e;
      abort.abort();
    };
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => end({ reason: `no data for ${idleMs} ms` }), idleMs);
    };
    try {
      const credentials = this.transport.credentials();
      const headers = { accept: 'text/event-stream', ...(await credentials.headers()) };
      const url = this.transport.url(this.path, this.options.params, this.options.query as object | undefined);
      touch();
      let res: Response;
      try {
        res = await this.transport.fetch(url, { headers, signal: abort.signal });
      } catch (error) {
        return { ended: st.ended ?? { reason: `connect failed: ${causeOf(error)}` }, snapshot: false };
      }
      if (res.status !== 200) {
        const text = await res.text().catch(() => '');
        let body: { error?: string; message?: string } = {};
        try {
          body = JSON.parse(text);
        } catch {
          // not the JSON envelope
        }
        const code = body.error ?? `HTTP_${res.status}`;
        const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
        if (res.status === 401 && credentials.renew !== undefined && (await credentials.renew())) {
          return { ended: { reason: '401: signed in again', delayMs: 0 }, snapshot: false };
        }
        if (res.status === 429 || res.status >= 500) {
          return { ended: { reason: `${res.status} ${code}`, ...(retryAfterMs === null ? {} : { delayMs: retryAfterMs }) }, snapshot: false };
        }
        throw new ApiError(res.status, code, body.message ?? text.slice(0, 200), body, retryAfterMs, false);
      }
      this.status({ state: 'open', connection });
      let lastSeq: number | null = null;
      const parser = createParser({
        onEvent: (m: EventSourceMessage) => {
          if (st.ended !== null || st.fatal !== null) return;
          if (m.event === 'error') {
            const e = parseJson(m.data) as { code?: string; message?: string; retryable?: boolean } | null;
            const err = new StreamError(e?.code ?? 'INTERNAL', e?.message ?? m.data, e?.retryable === true);
            if (err.retryable) return end({ reason: `stream error ${err.code}` });
            if (err.code === 'UNAUTHENTICATED' && credentials.renew !== undefined) {
              st.renewing = credentials.renew();
              return end({ reason: 'stream error UNAUTHENTICATED: signing in again', delayMs: 0 });
            }
            st.fatal = err;
            return abort.abort();
          }
          const message = parseJson(m.data) as { eventSeq?: unknown } | null;
          const seq = message?.eventSeq;
          if (typeof seq !== 'number' || !Number.isInteger(seq)) return end({ reason: 'a frame without an integer eventSeq' });
          if (m.id !== undefined && m.id !== String(seq)) return end({ reason: `SSE id ${m.id} differs from eventSeq ${seq}` });
          const kind: StreamKind = m.event === undefined || m.event === 'message' ? 'snapshot' : (m.event as StreamKind);
          if (kind === 'snapshot') {
            if (lastSeq !== null && seq <= lastSeq) return end({ reason: `snapshot eventSeq ${seq} after ${lastSeq}` });
            st.snapshot = true;
          } else if (lastSeq === null) {
            return end({ reason: `a ${kind} before the snapshot` });
          } else if (seq !== lastSeq + 1) {
            return end({ reason: `gap: eventSeq ${seq} after ${lastSeq}`, delayMs: 0 });
          }
          lastSeq = seq;
          this.emit({ kind, seq, connection, message: message as StreamMessage<P> });
        },
        onComment: () => undefined,
      });
      const decoder = new TextDecoder();
      try {
        for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
          touch();
          parser.feed(decoder.decode(bytes, { stream: true }));
          if (st.ended !== null || st.fatal !== null) break;
        }
      } catch (error) {
        if (st.fatal === null && st.ended === null) st.ended = { reason: `disconnected: ${causeOf(error)}` };
      }
      if (st.fatal !== null) throw st.fatal;
      if (st.renewing !== null && !(await st.renewing)) throw new StreamError('UNAUTHENTICATED', 'the stream\'s credentials ended and signing in again failed', false);
      return { ended: st.ended ?? { reason: 'the server ended the stream' }, snapshot: st.snapshot };
    } finally {
      clearTimeout(idle);
      abort.abort();
      this.stop.signal.removeEventListener('abort', onStop);
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function causeOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
