/**
 * Stream limits against the real service over real sockets.
 *
 * Covers: the per-account cap (429 RATE_LIMITED, shared by a session and an API key of one
 * account; option instrument streams on a budget of their own), the per-IP cap (429, public and
 * private streams together; a slot frees when a stream
 * closes), the global cap (503 UNAVAILABLE), all refused before a stream opens with the error
 * envelope; and the slow consumer: a raw TCP client that never reads its /perps/stream/user
 * stream while its account trades heavily is dropped with `event: error` SLOW_CONSUMER
 * (retryable), while the server held at most a bounded number of bytes for it (SSE_MAX_BUFFER_BYTES
 * is tiny here) and freed the connection; a healthy EventSource on the same stream keeps going.
 *
 * Loopback TCP lets the kernel absorb about 4 MB per connection before Node buffers anything,
 * so the slow-consumer test trades until that much has been pushed (a few seconds).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { call, signIn, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';
import { bearer, perpTrader, publishIndex, rawRead, stopService } from './support.ts';
import { STREAM_ENV, StreamClient } from './support.ts';

describe('connection caps', () => {
  let ts: TestService;
  before(async () => {
    ts = await startService({ ...STREAM_ENV, SSE_MAX_PER_IP: '3', SSE_MAX_PER_ACCOUNT: '2' });
  });
  after(async () => {
    await stopService(ts);
  });

  test('per account and per IP caps: 429 RATE_LIMITED before the stream; closing frees a slot', async () => {
    const t = await signIn(ts.url);
    const body = { name: 'k', scope: 'read' };
    const key = await call(ts.url, '/perps/me/api-keys', { token: t.token, body });
    assert.equal(key.status, 201);
    const first = new StreamClient(`${ts.url}/perps/stream/user`, bearer(t));
    const second = new StreamClient(`${ts.url}/portfolio/balances/stream`, { 'x-api-key': key.body.secret });
    const open: StreamClient[] = [first, second];
    try {
      for (const c of open) await c.next((m) => m.event === 'snapshot');
      const cookie = { cookie: `session=${t.token}` };
      const third = await call(ts.url, '/perps/stream/events?marketId=BTC-PERP', { headers: cookie });
      assert.equal(third.status, 429);
      assert.deepEqual(Object.keys(third.body).sort(), ['error', 'message']);
      assert.equal(third.body.error, 'RATE_LIMITED');
      assert.match(third.body.message, /per account/);

      // the IP holds two private streams; one public stream fits, the next does not
      const pub = new StreamClient(`${ts.url}/perps/book-stream?marketId=BTC-PERP`);
      open.push(pub);
      await pub.next((m) => m.event === 'snapshot');
      const over = await call(ts.url, '/perps/book-stream?marketId=BTC-PERP');
      assert.equal(over.status, 429);
      assert.match(over.body.message, /per IP/);
      assert.equal(ts.service.streams.stats().connections, 3);

      pub.close();
      await waitFor(() => ts.service.streams.stats().connections === 2);
      const book = `${ts.url}/perps/book-stream?marketId=BTC-PERP`;
      const again = await rawRead(book, {}, (s) => s.includes('event: snapshot'));
      assert.equal(again.status, 200);
    } finally {
      for (const c of open) c.close();
    }
  });

  test('option instrument streams have a per-account budget of their own', async () => {
    const svc = await startService({ ...STREAM_ENV, SSE_MAX_PER_ACCOUNT: '1', SSE_MAX_OPTION_STREAMS_PER_ACCOUNT: '2' });
    const t = await signIn(svc.url);
    await publishIndex(svc.url, 'BTC', '100000');
    const listed = () => [...svc.service.exchange.clob.markets.values()].filter((m) => m.isOption && m.status === 'open');
    await waitFor(() => listed().length >= 3);
    const options = listed().slice(0, 3).map((m) => m.spec.id);
    const user = new StreamClient(`${svc.url}/perps/stream/user`, bearer(t));
    const books = options.slice(0, 2).map((id) => new StreamClient(`${svc.url}/options/stream/events?marketId=${id}`, bearer(t)));
    try {
      // Before: one budget for both, and the option books were refused once the user stream held it.
      for (const c of [user, ...books]) await c.next((m) => m.event === 'snapshot');
      const third = await call(svc.url, `/options/stream/events?marketId=${options[2]}`, { token: t.token });
      assert.equal(third.status, 429, JSON.stringify(third.body));
      assert.match(third.body.message, /option instrument streams per account/);
    } finally {
      for (const c of [user, ...books]) c.close();
      await stopService(svc);
    }
  });

  test('the global cap answers 503 UNAVAILABLE', async () => {
    const svc = await startService({ ...STREAM_ENV, SSE_MAX_CONNECTIONS: '2' });
    const open = [1, 2].map(() => new StreamClient(`${svc.url}/perps/book-stream?marketId=BTC-PERP`));
    try {
      for (const c of open) await c.next((m) => m.event === 'snapshot');
      const full = await call(svc.url, '/perps/book-stream?marketId=ETH-PERP');
      assert.equal(full.status, 503);
      assert.equal(full.body.error, 'UNAVAILABLE');
    } finally {
      for (const c of open) c.close();
      await stopService(svc);
    }
  });
});

describe('slow consumer', () => {
  const BUDGET = 16_384;
  let ts: TestService;
  let taker: Trader;
  let maker: Trader;
  before(async () => {
    // a long heartbeat, so the byte budget (not the stall check) is what drops the client
    ts = await startService({
      ...STREAM_ENV,
      SSE_MAX_BUFFER_BYTES: String(BUDGET),
      SSE_HEARTBEAT_MS: '60000',
    });
    await publishIndex(ts.url, 'BTC', '100000');
    [taker, maker] = await Promise.all([perpTrader(ts.url, '1000000'), perpTrader(ts.url, '1000000')]);
  });
  after(async () => {
    await stopService(ts);
  });

  /** One round: the maker rests 50 small levels, the taker sweeps them (50 fills for the taker). */
  async function sweep(side: 'buy' | 'sell'): Promise<void> {
    const makerSide = side === 'buy' ? 'sell' : 'buy';
    const quotes = Array.from({ length: 50 }, (_, i) => ({
      side: makerSide,
      price: (side === 'buy' ? 100_000 + i / 10 : 99_999.9 - i / 10).toFixed(1),
      quantity: '0.001',
    }));
    const ladder = { marketId: 'BTC-PERP', cancelAll: true, quotes };
    const q = await call(ts.url, '/perps/quotes/bulk', { token: maker.token, body: ladder });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    const body = { marketId: 'BTC-PERP', side, quantity: '0.05', type: 'market' };
    const o = await call(ts.url, '/perps/orders', { token: taker.token, body });
    assert.equal(o.status, 201, JSON.stringify(o.body));
  }

  test('a client that never reads is dropped with SLOW_CONSUMER; the server held little', async (t) => {
    const { port } = new URL(ts.url);
    const socket: Socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const head = [
      'GET /perps/stream/user?intervalMs=50 HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${taker.token}`,
    ];
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
    socket.pause(); // never read
    const healthy = new StreamClient(`${ts.url}/perps/stream/user?intervalMs=50`, bearer(taker));
    try {
      await healthy.next((m) => m.event === 'snapshot');
      await waitFor(() => ts.service.streams.stats().connections === 2);
      const deadline = Date.now() + 90_000;
      let rounds = 0;
      while (ts.service.streams.stats().slowConsumerDrops === 0 && Date.now() < deadline) {
        await sweep(rounds % 2 === 0 ? 'buy' : 'sell');
        rounds++;
      }
      const stats = ts.service.streams.stats();
      assert.equal(stats.slowConsumerDrops, 1, `no drop after ${rounds} rounds`);
      assert.equal(stats.connections, 1, 'the slow connection was freed at once; the healthy one stays');

      // now read what the kernel and Node held: the stream ends with the error frame
      const received: Buffer[] = [];
      socket.on('data', (d: Buffer) => received.push(d));
      socket.resume();
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const text = Buffer.concat(received).toString('utf8');
      const errors = [...text.matchAll(/event: error\ndata: (\{[^\n]*\})/g)].map((m) => JSON.parse(m[1]!));
      assert.equal(errors.length, 1);
      assert.equal(errors[0].code, 'SLOW_CONSUMER');
      assert.equal(errors[0].retryable, true);
      assert.ok(text.trimEnd().endsWith('0'), 'the chunked body was terminated');
      // bounded: Node held at most the budget or one frame (one chunk: its size line, SSE text,
      // CRLF), far below what was pushed
      const largest = Math.max(...text.split('\n\n').map((m) => Buffer.byteLength(m) + 16));
      const peak = ts.service.streams.stats().peakBufferedBytes;
      assert.ok(peak <= Math.max(BUDGET, largest), `peak ${peak}, largest frame ${largest}`);
      assert.ok(text.length > 4 * peak, `received ${text.length}, peak ${peak}`);
      t.diagnostic(`${rounds} rounds; ${text.length} bytes pushed; peak held ${peak}; largest ${largest}`);

      // the healthy consumer kept receiving and was never told to go away
      assert.ok(healthy.of('delta').length > 0);
      assert.equal(healthy.of('error').length, 0);
      assert.equal(healthy.failures, 0);
    } finally {
      healthy.close();
      socket.destroy();
    }
  });
});
