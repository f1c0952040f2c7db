/**
 * The SDK's typed SSE subscriptions against the real service: all six streams open with a snapshot
 * and carry gap-free eventSeqs; a connection dropped in the middle of a stream — its socket
 * destroyed on the server's side, or the client's side cut by a loopback proxy — is reconnected,
 * the new connection starts with a fresh snapshot, and what the SDK holds afterwards (a local book
 * kept from the frames, the positions of the private stream) equals what REST answers; a frame left
 * out (a gap in eventSeq) makes the SDK resnapshot at once; a refused stream (404) ends the
 * subscription with the ApiError instead of retrying forever.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { generatePrivateKey } from 'viem/accounts';
import {
  ApiError, ExchangeClient, LocalBook, type StreamEvent, type StreamPath, type StreamStatus, type Subscription,
} from '../../sdk/src/index.ts';
import { ADMIN_TOKEN, admin, call, startService, waitFor, type TestService } from '../support/harness.ts';
import { faultProxy } from './support.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '250',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};
const BTC = 'BTC-PERP';

let svc: TestService;
let maker: ExchangeClient;
let taker: ExchangeClient;
/** Server-side sockets, as the service accepted them. */
const sockets: Socket[] = [];

async function funded(): Promise<ExchangeClient> {
  const client = new ExchangeClient({ baseUrl: svc.url, signer: generatePrivateKey() });
  await client.signIn();
  await client.post('/admin/chain/deposits', { body: { walletAddress: client.address!, amount: '500000' } }, {
    anonymous: true, headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  await waitFor(async () => (await client.balance()).walletBalance === '500000', 5000);
  await client.transfer({ from: 'wallet', to: 'perps', amount: '400000' });
  return client;
}

before(async () => {
  svc = await startService(ENV);
  svc.service.app.server.on('connection', (s: Socket) => sockets.push(s));
  for (const underlying of ['BTC', 'ETH']) {
    const r = await call(svc.url, '/admin/index', { body: { underlying, price: underlying === 'BTC' ? '100000' : '3000' }, headers: admin });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  [maker, taker] = await Promise.all([funded(), funded()]);
  await waitFor(async () => (await taker.instruments({ underlying: 'BTC' })).length > 0, 10_000, 50);
});

after(async () => {
  await svc.close();
});

/** Collects a subscription's events and statuses; `until` waits for a condition on them. */
function collect<P extends StreamPath>(sub: (onEvent: (e: StreamEvent<P>) => void, onStatus: (s: StreamStatus) => void) => Subscription<P>) {
  const events: StreamEvent<P>[] = [];
  const statuses: StreamStatus[] = [];
  const subscription = sub((e) => events.push(e), (s) => statuses.push(s));
  return {
    events,
    statuses,
    subscription,
    until: (check: () => boolean, ms = 5000) => waitFor(check, ms, 10),
  };
}

/** Within each connection: a snapshot first, then every delta/update exactly one eventSeq after the frame before. */
function assertGapFree(events: readonly { kind: string; seq: number; connection: number }[]): void {
  let connection = 0;
  let last = 0;
  for (const e of events) {
    if (e.connection !== connection) {
      assert.equal(e.kind, 'snapshot', `connection ${e.connection} opens with a snapshot`);
      assert.ok(e.connection > connection);
      connection = e.connection;
    } else if (e.kind !== 'snapshot') {
      assert.equal(e.seq, last + 1, `eventSeq ${e.seq} follows ${last} on connection ${connection}`);
    }
    last = e.seq;
  }
}

const levels = (rows: readonly (readonly string[])[]) => rows.map(([price, size]) => [price!, size!]);

describe('the streams, typed', () => {
  test('each opens with a snapshot whose payload has the documented shape', async () => {
    const instrument = (await taker.instruments({ underlying: 'BTC' }))[0];
    assert.ok(instrument !== undefined, 'an option instrument is listed');
    const subs = [
      taker.stream('/perps/book-stream', { query: { marketId: BTC } }),
      taker.stream('/perps/stream/events', { query: { marketId: BTC } }),
      taker.stream('/perps/stream/user'),
      taker.stream('/portfolio/balances/stream'),
      taker.stream('/markets/board/stream', { query: { underlying: 'BTC' } }),
      taker.stream('/options/stream/events', { query: { marketId: instrument.id, includeReference: true } }),
      taker.stream('/markets/{marketId}/trades/stream', { params: { marketId: BTC } }),
    ] as const;
    try {
      const firsts = await Promise.all(subs.map(async (s) => {
        for await (const e of s as Subscription<StreamPath>) return e;
        throw new Error(`${s.path} ended`);
      }));
      for (const e of firsts) assert.equal(e.kind, 'snapshot');
      const [book, events, user, balances, board, options, tape] = firsts.map((e) => e.message) as [
        StreamEvent<'/perps/book-stream'>['message'], StreamEvent<'/perps/stream/events'>['message'],
        StreamEvent<'/perps/stream/user'>['message'], StreamEvent<'/portfolio/balances/stream'>['message'],
        StreamEvent<'/markets/board/stream'>['message'], StreamEvent<'/options/stream/events'>['message'],
        StreamEvent<'/markets/{marketId}/trades/stream'>['message'],
      ];
      assert.equal(book.payload.marketId, BTC);
      assert.ok(Array.isArray(book.payload.bids));
      assert.equal(events.payload.marketId, BTC);
      assert.deepEqual(events.payload.trades, []);
      assert.deepEqual(user.payload.trades, []);
      assert.equal(balances.type, 'snapshot');
      assert.equal(balances.payload.perps.total, '400000');
      assert.equal(balances.payload.wallet.total, '100000');
      assert.equal(board.eventType, 'OptionsBoardSnapshot');
      assert.equal(board.payload.underlyingSymbol, 'BTC');
      assert.equal(options.payload.marketId, instrument.id);
      assert.equal(options.payload.reference?.tradable, false);
      assert.ok(tape.eventSeq >= 1, 'the trade tape stream (a seventh, added beside the six) is typed too');
    } finally {
      for (const s of subs) s.close();
    }
  });
});

describe('reconnects and resnapshots', () => {
  test('the server drops the stream\'s socket mid-stream: a new connection, a fresh snapshot, the book right', async () => {
    const book = new LocalBook();
    const c = collect<'/perps/book-stream'>((onEvent, onStatus) => taker.stream('/perps/book-stream', {
      query: { marketId: BTC, intervalMs: 50 },
      initialDelayMs: 20,
      onEvent: (e) => {
        book.apply(e.kind, e.message.payload, e.seq);
        onEvent(e);
      },
      onStatus,
    }));
    try {
      await c.until(() => c.events.length >= 1);
      for (const price of ['100100', '100200', '100300']) {
        await maker.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.1', price, postOnly: true });
      }
      await c.until(() => book.levels().asks.length === 3);
      assert.ok(c.events.filter((e) => e.kind === 'update').length >= 1);

      // Destroy every socket the server holds (the stream's among them).
      const held = sockets.filter((s) => !s.destroyed);
      assert.ok(held.length >= 1);
      for (const s of held) s.destroy();
      await c.until(() => c.events.some((e) => e.connection === 2));
      const reconnect = c.statuses.find((s) => s.state === 'reconnecting');
      assert.ok(reconnect !== undefined && reconnect.state === 'reconnecting');
      assert.match(reconnect.reason, /disconnected|ended/);

      // Changes after the reconnect arrive as updates on the new connection.
      await maker.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.2', price: '99900', postOnly: true });
      await c.until(() => c.events.some((e) => e.connection === 2 && e.kind === 'update'));
      assertGapFree(c.events);
      const rest = await taker.book(BTC);
      await c.until(() => JSON.stringify(levels(rest.bids)) === JSON.stringify(book.levels().bids.map((l) => [l.price, l.size])));
      assert.deepEqual(book.levels().asks.map((l) => [l.price, l.size]), levels(rest.asks));
    } finally {
      c.subscription.close();
      await maker.cancelAll(BTC);
    }
  });

  test('the client side is cut by a proxy: the private stream resnapshots with the position, then fills arrive in order', async () => {
    const proxy = await faultProxy(svc.url);
    const viaProxy = new ExchangeClient({ baseUrl: proxy.url, token: taker.currentSession!.token });
    const c = collect<'/perps/stream/events'>((onEvent, onStatus) => viaProxy.stream('/perps/stream/events', {
      query: { marketId: BTC, intervalMs: 100 }, initialDelayMs: 20, onEvent, onStatus,
    }));
    try {
      await c.until(() => c.events.length >= 1);
      await maker.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.5', price: '100000', postOnly: true });
      await taker.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.2', price: '100000', timeInForce: 'ioc' });
      await c.until(() => c.events.some((e) => e.kind === 'delta' && e.message.payload.trades.length > 0));

      assert.equal(proxy.cutStreams(), 1);
      await c.until(() => c.events.some((e) => e.connection === 2));
      const snap = c.events.find((e) => e.connection === 2)!;
      assert.equal(snap.kind, 'snapshot');
      const positions = snap.message.payload.positions as { marketId: string; side: string; quantity: string }[];
      assert.deepEqual(positions.map((p) => [p.marketId, p.side, p.quantity]), [[BTC, 'long', '0.2']]);

      await taker.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.1', price: '100000', timeInForce: 'ioc' });
      await c.until(() => c.events.some((e) => e.connection === 2 && e.kind === 'delta' && e.message.payload.trades.length > 0));
      assertGapFree(c.events);
      const rest = (await taker.positions()).perps.find((p) => p.marketId === BTC)!;
      assert.equal(rest.size, '0.3');
    } finally {
      c.subscription.close();
      await maker.cancelAll(BTC);
      await taker.closePosition({ marketId: BTC, orderType: 'limit', price: '100000', timeInForce: 'ioc' }).catch(() => undefined);
      await proxy.close();
    }
  });

  test('a frame left out (a gap in eventSeq) makes the SDK resnapshot at once', async () => {
    const proxy = await faultProxy(svc.url);
    const client = new ExchangeClient({ baseUrl: proxy.url });
    const book = new LocalBook();
    const c = collect<'/perps/book-stream'>((onEvent, onStatus) => client.stream('/perps/book-stream', {
      query: { marketId: BTC, intervalMs: 50 },
      onEvent: (e) => {
        book.apply(e.kind, e.message.payload, e.seq);
        onEvent(e);
      },
      onStatus,
    }));
    try {
      await c.until(() => c.events.length >= 1);
      proxy.dropNextFrame((frame) => frame.includes('event: update'));
      await maker.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.1', price: '100700', postOnly: true });
      await waitFor(() => proxy.dropped() === 1, 5000, 10); // its update never reaches the SDK
      await maker.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.1', price: '100800', postOnly: true });
      await c.until(() => c.events.some((e) => e.connection === 2)).catch((e: unknown) => {
        throw new Error(`${String(e)}: ${JSON.stringify(c.statuses)} ${JSON.stringify(c.events.map((x) => [x.connection, x.kind, x.seq]))}`);
      });
      const reconnect = c.statuses.find((s) => s.state === 'reconnecting');
      assert.ok(reconnect?.state === 'reconnecting');
      assert.match(reconnect.reason, /^gap: eventSeq \d+ after \d+$/);
      assert.equal(reconnect.delayMs, 0, 'at once');
      assertGapFree(c.events);
      await c.until(() => book.levels().asks.length === 2);
      assert.deepEqual(book.levels().asks.map((l) => l.price), ['100700', '100800']);
    } finally {
      c.subscription.close();
      await maker.cancelAll(BTC);
      await proxy.close();
    }
  });

  test('a refused stream (unknown market: 404) ends the subscription with the error', async () => {
    const sub = taker.stream('/perps/book-stream', { query: { marketId: 'NOPE-PERP' } });
    await assert.rejects(sub.done, (e: unknown) => e instanceof ApiError && e.status === 404);
    await assert.rejects(async () => {
      for await (const _ of sub) assert.fail('no event');
    }, ApiError);
  });
});
