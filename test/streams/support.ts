/**
 * Helpers for the stream tests: a real `EventSource` (the eventsource package, with a custom
 * fetch that adds credentials) that records every message, a raw reader of the byte stream (to
 * see comment lines and headers), and the trading helpers shared by the tests (index from the
 * push feed, funded traders, orders over HTTP). Everything talks HTTP to the real service.
 */
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import { admin, call, fund, signIn, waitFor, type TestService, type Trader } from '../support/harness.ts';

/** Parsed JSON as the tests read it (its shape is what they assert, field by field). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Message {
  readonly event: string;
  readonly id: string;
  readonly data: Json;
}

const STREAM_EVENTS = ['snapshot', 'update', 'delta', 'error'];

/** An EventSource that records messages; `error` messages with data are the server's. */
export class StreamClient {
  readonly messages: Message[] = [];
  readonly es: EventSource;
  /** Set when the client's connection failed or was closed (EventSource `error` without data). */
  failures = 0;

  constructor(url: string, headers: Record<string, string> = {}, events = STREAM_EVENTS) {
    this.es = new EventSource(url, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, ...headers } }),
    });
    for (const name of events) {
      this.es.addEventListener(name, (e) => {
        const m = e as MessageEvent;
        if (name === 'error' && m.data === undefined) {
          this.failures++;
          return;
        }
        this.messages.push({ event: name, id: m.lastEventId, data: JSON.parse(m.data as string) });
      });
    }
  }

  of(event: string): Message[] {
    return this.messages.filter((m) => m.event === event);
  }

  /** Waits until a message satisfies `match` (searching from index `from`) and returns it. */
  async next(match: (m: Message) => boolean, timeoutMs = 5000, from = 0): Promise<Message> {
    let found: Message | undefined;
    await waitFor(() => (found = this.messages.slice(from).find(match)) !== undefined, timeoutMs, 10);
    return found!;
  }

  close(): void {
    this.es.close();
  }
}

/** Reads a stream's raw text (headers and all bytes) for `ms` or until `until` sees enough. */
export async function rawRead(
  url: string,
  headers: Record<string, string>,
  until: (text: string) => boolean,
  timeoutMs = 5000,
): Promise<{ status: number; headers: Headers; text: string }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  let text = '';
  if (res.body !== null && res.status === 200) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const deadline = Date.now() + timeoutMs;
    let pending = reader.read();
    while (!until(text) && Date.now() < deadline) {
      const tick = new Promise<null>((resolve) => setTimeout(() => resolve(null), 50));
      const r = await Promise.race([pending, tick]);
      if (r === null) continue;
      if (r.done) break;
      text += decoder.decode(r.value, { stream: true });
      pending = reader.read();
    }
    pending.catch(() => undefined);
    await reader.cancel().catch(() => undefined);
  } else {
    text = await res.text();
  }
  return { status: res.status, headers: res.headers, text };
}

export async function publishIndex(base: string, underlying: string, price: string): Promise<void> {
  const r = await call(base, '/admin/index', { body: { underlying, price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

/** A signed-in trader with `amount` USDC in the perps bucket. */
export async function perpTrader(base: string, amount = '100000'): Promise<Trader> {
  const t = await signIn(base);
  await fund(base, t, amount);
  const body = { from: 'wallet', to: 'perps', amount };
  const r = await call(base, '/wallet/transfer', { token: t.token, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return t;
}

export async function limit(base: string, t: Trader, side: Side, quantity: string, price: string) {
  const r = await call(base, '/perps/orders', {
    token: t.token,
    body: { marketId: 'BTC-PERP', side, quantity, price, type: 'limit' },
  });
  assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
  return r.body as Json;
}

export async function cancel(base: string, t: Trader, id: string): Promise<void> {
  const r = await call(base, `/perps/orders/${id}/cancel`, { method: 'POST', token: t.token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

/** Checks the envelope and that eventSeq is strictly increasing (and equals the SSE id). */
export function assertSequence(messages: readonly Message[]): void {
  let last = -Infinity;
  for (const m of messages) {
    if (m.event === 'error') continue;
    const d = m.data;
    for (const k of ['eventId', 'eventType', 'eventSeq', 'engineTs', 'sourceTs', 'payload']) {
      assert.ok(k in d, `${k} in ${JSON.stringify(d)}`);
    }
    assert.equal(typeof d.engineTs, 'number');
    assert.equal(m.id, String(d.eventSeq));
    assert.ok(d.eventSeq > last, `eventSeq ${d.eventSeq} after ${last}`);
    last = d.eventSeq;
  }
}

export type Side = 'buy' | 'sell';

export const bearer = (t: Trader) => ({ authorization: `Bearer ${t.token}` });

export const STREAM_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  SSE_HEARTBEAT_MS: '100',
  SSE_AUTH_RECHECK_MS: '100',
  RATE_LIMIT_ANONYMOUS: '100000',
  RATE_LIMIT_ACCOUNT: '100000',
  RATE_LIMIT_ORDERS: '100000',
};

/**
 * Closes the service; connections that never sent a request (undici opens a spare one after an
 * aborted fetch) would otherwise hold Node's server.close() for its 60 s connection timeout.
 */
export async function stopService(ts: TestService): Promise<void> {
  const closing = ts.close();
  setTimeout(() => ts.service.app.server.closeAllConnections(), 200).unref();
  await closing;
}
