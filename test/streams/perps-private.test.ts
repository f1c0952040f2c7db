/**
 * The private perp streams, GET /perps/stream/user and GET /perps/stream/events, over HTTP with
 * a real EventSource against the real service (push feed, two funded traders trading BTC-PERP
 * through POST /perps/orders).
 *
 * Covers: 401 before any stream without credentials, with a bad token, or with a token only in the
 * query string; the session cookie (same Origin; a foreign Origin is 403), Bearer and a read-scope
 * API key each open a stream; a fill reaching each side as a trade plus a position upsert, with
 * neither account ever seeing the other's orders, trades or positions; snapshots listing open
 * positions, openOnly turning a closed position into removedIds (an upsert with status closed
 * otherwise); the events stream's book part; a revoked API key and a logged-out session ending
 * their open streams with UNAUTHENTICATED (retryable false) within the re-check period; strictly
 * increasing eventSeq; parameter bounds refused with 400 before any stream opens.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, signIn, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';
import {
  assertSequence,
  bearer,
  limit,
  perpTrader,
  publishIndex,
  rawRead,
  stopService,
  STREAM_ENV,
  StreamClient,
  type Json,
  type Message,
} from './support.ts';

let ts: TestService;
let url: string;
let a: Trader;
let b: Trader;

before(async () => {
  ts = await startService(STREAM_ENV);
  url = ts.url;
  await publishIndex(url, 'BTC', '100000');
  [a, b] = await Promise.all([perpTrader(url), perpTrader(url)]);
});
after(async () => {
  await stopService(ts);
});

const userUrl = (q = '') => `${url}/perps/stream/user${q}`;
const eventsUrl = (q = '') => `${url}/perps/stream/events?marketId=BTC-PERP${q}`;
const snapshotSeen = (t: string) => t.includes('event: snapshot');

async function apiKey(t: Trader, scope: 'read' | 'trade'): Promise<{ id: string; secret: string }> {
  const body = { name: `stream-${scope}`, scope };
  const r = await call(url, '/perps/me/api-keys', { token: t.token, body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.id, secret: r.body.secret };
}

/** All trades and position upserts/removals a client received in deltas. */
function collected(messages: readonly Message[]) {
  const deltas = messages.filter((m) => m.event === 'delta').map((m) => m.data.payload);
  return {
    trades: deltas.flatMap((p) => p.trades),
    upserts: deltas.flatMap((p) => p.positions.upserts),
    removed: deltas.flatMap((p) => p.positions.removedIds),
  };
}

describe('authentication of private streams', () => {
  test('no credentials, a bad token, or a token in the query string: 401 before any stream', async () => {
    const paths = [
      '/perps/stream/user',
      '/perps/stream/events?marketId=BTC-PERP',
      '/portfolio/balances/stream',
    ];
    for (const path of paths) {
      const none = await call(url, path);
      assert.equal(none.status, 401, path);
      assert.deepEqual(Object.keys(none.body).sort(), ['error', 'message']);
      assert.equal(none.body.error, 'UNAUTHENTICATED');
      const bad = await call(url, path, { headers: { authorization: 'Bearer not.a.token' } });
      assert.equal(bad.status, 401, path);
      const sep = path.includes('?') ? '&' : '?';
      for (const name of ['token', 'access_token', 'session', 'apiKey', 'x-api-key']) {
        const leaked = await call(url, `${path}${sep}${name}=${encodeURIComponent(a.token)}`);
        assert.equal(leaked.status, 401, `${path} ${name}`);
      }
    }
    // with real credentials, a token parameter is still an unknown parameter
    const extra = await call(url, '/perps/stream/user?token=abc', { token: a.token });
    assert.equal(extra.status, 400);
    assert.equal(ts.service.streams.stats().connections, 0);
  });

  test('the session cookie, Bearer and a read-scope API key each open the stream', async () => {
    const cookie = { cookie: `session=${a.token}` };
    const viaCookie = await rawRead(userUrl(), cookie, snapshotSeen);
    assert.equal(viaCookie.status, 200);
    assert.ok(viaCookie.text.includes('PerpsUserSnapshot'));
    const origin = ts.settings.publicOrigin;
    const sameOrigin = await rawRead(userUrl(), { ...cookie, origin }, snapshotSeen);
    assert.equal(sameOrigin.status, 200);
    const evil = { ...cookie, origin: 'http://evil.test' };
    const foreign = await call(url, '/perps/stream/user', { headers: evil });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.error, 'FORBIDDEN');
    const viaBearer = await rawRead(eventsUrl(), bearer(a), snapshotSeen);
    assert.equal(viaBearer.status, 200);
    assert.ok(viaBearer.text.includes('PerpsStreamSnapshot'));
    const key = await apiKey(a, 'read');
    const balances = `${url}/portfolio/balances/stream`;
    const viaKey = await rawRead(balances, { 'x-api-key': key.secret }, snapshotSeen);
    assert.equal(viaKey.status, 200);
    assert.ok(viaKey.text.includes('BalancesSnapshot'));
  });

  test('a revoked API key\'s open stream ends with UNAUTHENTICATED, retryable false', async () => {
    const key = await apiKey(a, 'read');
    const client = new StreamClient(userUrl(), { 'x-api-key': key.secret });
    try {
      await client.next((m) => m.event === 'snapshot');
      const revokedAt = Date.now();
      const r = await call(url, `/perps/me/api-keys/${key.id}`, { method: 'DELETE', token: a.token });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const err = await client.next((m) => m.event === 'error', 3000);
      assert.equal(err.data.code, 'UNAUTHENTICATED');
      assert.equal(err.data.retryable, false);
      assert.ok(Date.now() - revokedAt < 1000, 'closed within the re-check period (100 ms here)');
      // EventSource reconnects once and is refused (401): it gives up
      await waitFor(() => client.es.readyState === client.es.CLOSED, 5000);
    } finally {
      client.close();
    }
  });

  test('signing out ends a session\'s open stream with UNAUTHENTICATED', async () => {
    const session = await signIn(url, a.privateKey);
    const client = new StreamClient(eventsUrl(), bearer(session));
    try {
      await client.next((m) => m.event === 'snapshot');
      const out = await call(url, '/auth/logout', { method: 'POST', token: session.token });
      assert.equal(out.status, 200);
      const err = await client.next((m) => m.event === 'error', 3000);
      assert.equal(err.data.code, 'UNAUTHENTICATED');
      assert.equal(err.data.retryable, false);
    } finally {
      client.close();
    }
  });
});

describe('fills and positions', () => {
  test('a member joining a running group gets a snapshot with an eventId of its own', async () => {
    const [c, d] = await Promise.all([perpTrader(url), perpTrader(url)]);
    const first = new StreamClient(userUrl('?intervalMs=50'), bearer(c));
    let late: StreamClient | null = null;
    try {
      await first.next((m) => m.event === 'snapshot');
      await limit(url, c, 'sell', '0.01', '100000');
      await limit(url, d, 'buy', '0.01', '100000');
      const delta = await first.next((m) => m.event === 'delta');
      late = new StreamClient(userUrl('?intervalMs=50'), bearer(c));
      const snapshot = await late.next((m) => m.event === 'snapshot');
      assert.ok(snapshot.data.eventSeq >= delta.data.eventSeq, 'the joiner resumes from the group seq');
      const ids = first.messages.map((m) => m.data.eventId);
      assert.ok(!ids.includes(snapshot.data.eventId), `${snapshot.data.eventId} is not one of ${ids.join(', ')}`);
    } finally {
      first.close();
      late?.close();
    }
  });

  test('a fill reaches each side as a trade plus a position upsert; nothing crosses accounts', async () => {
    const aUser = new StreamClient(userUrl('?intervalMs=50'), bearer(a));
    const bUser = new StreamClient(userUrl('?intervalMs=50'), bearer(b));
    const aEvents = new StreamClient(eventsUrl('&intervalMs=100'), bearer(a));
    try {
      for (const c of [aUser, bUser, aEvents]) await c.next((m) => m.event === 'snapshot');
      const sell = await limit(url, a, 'sell', '0.01', '100000');
      const buy = await limit(url, b, 'buy', '0.01', '100000');
      assert.equal(buy.fills.length, 1);

      const tradeAndPosition = (c: StreamClient) => () => {
        const got = collected(c.messages);
        return got.trades.length === 1 && got.upserts.length >= 1;
      };
      await waitFor(tradeAndPosition(aUser));
      const mine = collected(aUser.messages);
      const { createdAt, tradeId, fee, ...trade } = mine.trades[0];
      assert.deepEqual(trade, {
        orderId: sell.id,
        marketId: 'BTC-PERP',
        side: 'sell',
        price: '100000',
        quantity: '0.01',
        liquidity: 'maker',
      });
      assert.match(createdAt, /Z$/);
      assert.equal(typeof tradeId, 'string');
      assert.equal(typeof fee, 'string');
      const { id: aPositionId, entryPrice, realizedPnl, ...position } = mine.upserts.at(-1);
      assert.deepEqual(position, {
        marketId: 'BTC-PERP',
        marginMode: 'cross',
        side: 'short',
        quantity: '0.01',
        status: 'open',
      });
      assert.equal(entryPrice, '100000');
      assert.equal(typeof realizedPnl, 'string');

      await waitFor(tradeAndPosition(bUser));
      const theirs = collected(bUser.messages);
      assert.equal(theirs.trades[0].liquidity, 'taker');
      assert.equal(theirs.trades[0].side, 'buy');
      assert.equal(theirs.trades[0].orderId, buy.id);
      assert.equal(theirs.trades[0].tradeId, tradeId);
      assert.equal(theirs.upserts.at(-1).side, 'long');
      const bPositionId = theirs.upserts.at(-1).id;
      assert.notEqual(bPositionId, aPositionId);

      await waitFor(tradeAndPosition(aEvents));
      const inMarket = collected(aEvents.messages);
      assert.equal(inMarket.trades[0].orderId, sell.id);
      assert.equal(inMarket.upserts.at(-1).id, aPositionId);

      // privacy: neither account's streams carry the other's orders or positions
      const aSaw = [collected(aUser.messages), collected(aEvents.messages)];
      for (const seen of aSaw) {
        assert.ok(seen.trades.every((t) => t.orderId === sell.id));
        assert.ok(seen.upserts.every((p) => p.id === aPositionId));
      }
      assert.ok(theirs.trades.every((t) => t.orderId === buy.id));
      assert.ok(theirs.upserts.every((p) => p.id === bPositionId));
      const aText = JSON.stringify([...aUser.messages, ...aEvents.messages]);
      assert.ok(!aText.includes(bPositionId) && !JSON.stringify(bUser.messages).includes(aPositionId));
      for (const c of [aUser, bUser, aEvents]) assertSequence(c.messages);
    } finally {
      for (const c of [aUser, bUser, aEvents]) c.close();
    }
  });

  test('snapshots list open positions; openOnly turns a closed position into removedIds', async () => {
    const all = new StreamClient(userUrl('?intervalMs=50'), bearer(a));
    const openOnly = new StreamClient(userUrl('?intervalMs=50&openOnly=true'), bearer(a));
    const inMarket = new StreamClient(eventsUrl('&openOnly=true&intervalMs=100'), bearer(a));
    try {
      const clients = [all, openOnly, inMarket];
      const snaps = await Promise.all(clients.map((c) => c.next((m) => m.event === 'snapshot')));
      for (const s of snaps) {
        assert.deepEqual(s.data.payload.trades, []);
        assert.equal(s.data.payload.positions.length, 1);
        assert.equal(s.data.payload.positions[0].side, 'short');
      }
      const id = snaps[0]!.data.payload.positions[0].id;
      assert.equal(snaps[1]!.data.payload.positions[0].id, id);
      // A buys back its short: the position closes
      await limit(url, b, 'sell', '0.01', '100000');
      await limit(url, a, 'buy', '0.01', '100000');
      await waitFor(() => collected(openOnly.messages).removed.includes(id));
      assert.ok(!collected(openOnly.messages).upserts.some((p) => p.id === id));
      await waitFor(() => collected(all.messages).upserts.some((p) => p.id === id && p.status === 'closed'));
      const closed = collected(all.messages).upserts.filter((p) => p.id === id).at(-1);
      assert.equal(closed.quantity, '0');
      assert.deepEqual(collected(all.messages).removed, []);
      await waitFor(() => collected(inMarket.messages).removed.includes(id));
      const fresh = new StreamClient(userUrl(), bearer(a));
      try {
        const s = await fresh.next((m) => m.event === 'snapshot');
        assert.deepEqual(s.data.payload.positions, []);
      } finally {
        fresh.close();
      }
      for (const c of [all, openOnly, inMarket]) assertSequence(c.messages);
    } finally {
      for (const c of [all, openOnly, inMarket]) c.close();
    }
  });

  test('the events stream carries the market\'s book: snapshot levels, then changed levels', async () => {
    const client = new StreamClient(eventsUrl('&depth=5&intervalMs=100'), bearer(a));
    try {
      const snap = await client.next((m) => m.event === 'snapshot');
      assert.equal(snap.data.eventType, 'PerpsStreamSnapshot');
      const keys = ['marketId', 'orderbook', 'positions', 'trades'];
      assert.deepEqual(Object.keys(snap.data.payload).sort(), keys);
      const seen = client.messages.length;
      const bid = await limit(url, b, 'buy', '0.003', '95000');
      const withBids = (m: Message) => m.event === 'delta' && m.data.payload.orderbook.bids.length > 0;
      const d = await client.next(withBids, 5000, seen);
      assert.equal(d.data.eventType, 'PerpsStreamDelta');
      assert.deepEqual(d.data.payload.orderbook.bids, [{ price: '95000', size: '0.003', total: '0.003' }]);
      assert.deepEqual(d.data.payload.trades, []);
      assert.deepEqual(d.data.payload.positions, { upserts: [], removedIds: [] });
      const r = await call(url, `/perps/orders/${bid.id}/cancel`, { method: 'POST', token: b.token });
      assert.equal(r.status, 200);
      const removed = (m: Message) =>
        m.event === 'delta' && m.data.payload.orderbook.bids.some((l: Json) => l.size === '0');
      const gone = await client.next(removed);
      assert.deepEqual(gone.data.payload.orderbook.bids, [{ price: '95000', size: '0', total: '0' }]);
      assertSequence(client.messages);
    } finally {
      client.close();
    }
  });
});

describe('parameters', () => {
  test('out-of-range and unknown parameters are 400 before any stream opens', async () => {
    const cases = [
      '/perps/stream/events?marketId=BTC-PERP&depth=0',
      '/perps/stream/events?marketId=BTC-PERP&depth=251',
      '/perps/stream/events?marketId=BTC-PERP&intervalMs=99',
      '/perps/stream/events?marketId=BTC-PERP&intervalMs=5001',
      '/perps/stream/events?marketId=BTC-PERP&openOnly=yes',
      '/perps/stream/events',
      '/perps/stream/user?intervalMs=49',
      '/perps/stream/user?intervalMs=5001',
      '/perps/stream/user?marketId=BTC-PERP',
      '/portfolio/balances/stream?intervalMs=100',
    ];
    for (const path of cases) {
      const r = await call(url, path, { token: a.token });
      assert.equal(r.status, 400, path);
      assert.equal(r.body.error, 'VALIDATION_ERROR', path);
    }
    const unknown = await call(url, '/perps/stream/events?marketId=DOGE-PERP', { token: a.token });
    assert.equal(unknown.status, 404);
    for (const q of ['&depth=250&intervalMs=100', '&depth=1&intervalMs=5000&openOnly=false']) {
      const ok = await rawRead(eventsUrl(q), bearer(a), snapshotSeen);
      assert.equal(ok.status, 200, q);
    }
    for (const q of ['?intervalMs=50', '?intervalMs=5000&openOnly=true']) {
      const ok = await rawRead(userUrl(q), bearer(a), snapshotSeen);
      assert.equal(ok.status, 200, q);
    }
  });
});
