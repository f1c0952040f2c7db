/**
 * GET /markets/{marketId}/trades/stream over HTTP with a real EventSource against the real service
 * (push index feed, a fast ticker so the option ladders list, SIWE traders funded through the
 * simulated chain, orders over HTTP).
 *
 * Covers: the snapshot on connect (the newest trades, oldest first, equal to the REST tape read
 * backwards, capped at 100), then an `update` per interval with each new trade once, the envelope
 * with a strictly increasing eventSeq equal to the SSE id and engineTs the newest trade's time; a
 * late joiner's snapshot equal to an early client's snapshot-plus-updates; clients connecting while
 * a burst of orders trades seeing, each, a gap-free run of the tape with no trade twice; the four
 * kinds of market (perpetual, dated future, spot pair, option); the head and heartbeats on the raw
 * stream; refusals before a stream opens (404 unknown market, 400 parameters); the per-address
 * stream cap (429), the refused stream opening once a slot is free; and resume after a reconnect
 * (`resume=true` with Last-Event-ID): the missed updates instead of a snapshot, each trade once, up
 * to what a fresh snapshot holds, and a snapshot without `resume=true`, for an unknown Last-Event-ID
 * and for one from a previous instance of the group.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ok, refused } from '../support/clob-http.ts';
import { admin, call, fund, signIn, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';
import { assertSequence, publishIndex, rawRead, stopService, STREAM_ENV, StreamClient, type Message } from './support.ts';

const ENV = { ...STREAM_ENV, TICK_MS: '100' };
let ts: TestService;
let url: string;
let alice: Trader;
let bob: Trader;
let future: string;
let option: string;
const clients: StreamClient[] = [];

interface TapeTrade { tradeId: string; marketId: string; price: string; quantity: string; takerSide: string; createdAt: string }

async function trader(base: string): Promise<Trader> {
  const t = await signIn(base);
  await fund(base, t, '300000', 15_000);
  for (const to of ['perps', 'spot', 'options']) {
    ok(await call(base, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to, amount: '100000' } }));
  }
  for (const asset of ['BTC', 'ETH']) {
    ok(await call(base, '/admin/treasury/grant', { headers: admin, body: { walletAddress: t.address, asset, amount: '5' } }));
  }
  return t;
}

async function order(base: string, t: Trader, marketId: string, side: string, quantity: string, price: string, extra = {}) {
  const path = marketId === 'BTC-PERP' || marketId === future ? '/perps/orders' : '/orders';
  const body = { marketId, side, quantity, price, type: 'limit', ...extra };
  return ok(await call(base, path, { token: t.token, body }), 201);
}

/** One trade: alice rests, bob takes it in full. */
async function trade(marketId: string, takerSide: 'buy' | 'sell', quantity: string, price: string, base = url): Promise<void> {
  await order(base, alice, marketId, takerSide === 'buy' ? 'sell' : 'buy', quantity, price);
  const taken = await order(base, bob, marketId, takerSide, quantity, price);
  assert.equal(taken.status, 'filled', JSON.stringify(taken));
}

const tape = async (marketId: string, base = url): Promise<TapeTrade[]> => ok(await call(base, `/markets/${marketId}/trades?limit=500`));
const streamUrl = (marketId: string, query = 'intervalMs=50', base = url) => `${base}/markets/${marketId}/trades/stream?${query}`;

function open(marketId: string, query?: string, base?: string): StreamClient {
  const c = new StreamClient(streamUrl(marketId, query, base));
  clients.push(c);
  return c;
}

/** Every trade a client received (snapshot, then updates), in order. */
const received = (c: StreamClient): TapeTrade[] =>
  c.messages.filter((m) => m.event === 'snapshot' || m.event === 'update').flatMap((m) => m.data.payload.trades as TapeTrade[]);

/** Waits until the client received the trade `tradeId`. */
const until = (c: StreamClient, tradeId: string) =>
  waitFor(() => received(c).some((t) => t.tradeId === tradeId), 5000, 10);

before(async () => {
  ts = await startService(ENV);
  url = ts.url;
  await publishIndex(url, 'BTC', '100000');
  await publishIndex(url, 'ETH', '3000');
  await waitFor(async () => (await call(url, '/options/instruments?underlying=BTC')).body.length > 0, 10_000, 50);
  const markets = ok(await call(url, '/perps/markets')) as { id: string; marketType: string; underlying: string }[];
  future = markets.find((m) => m.marketType === 'future' && m.underlying === 'BTC')!.id;
  const list = ok(await call(url, '/options/instruments?underlying=BTC')) as { id: string; type: string; strike: string; expiry: string }[];
  const last = list.map((i) => i.expiry).sort().at(-1);
  option = list.find((i) => i.expiry === last && i.type === 'call' && i.strike === '100000')!.id;
  [alice, bob] = await Promise.all([trader(url), trader(url)]);
});
after(async () => {
  for (const c of clients) c.close();
  await stopService(ts);
});

describe('snapshot, then every new trade', () => {
  test('the snapshot is the REST tape read backwards; updates carry each new trade once', async () => {
    await trade('BTC-PERP', 'buy', '0.01', '100000');
    await trade('BTC-PERP', 'sell', '0.002', '99990');
    await trade('BTC-PERP', 'buy', '0.003', '100010');
    const a = open('BTC-PERP');
    const snapshot = await a.next((m) => m.event === 'snapshot');
    assert.equal(snapshot.data.eventType, 'TradesSnapshot');
    assert.equal(snapshot.data.payload.marketId, 'BTC-PERP');
    const rest = await tape('BTC-PERP');
    assert.equal(rest.length, 3);
    assert.deepEqual(snapshot.data.payload.trades, [...rest].reverse());
    assert.equal(snapshot.data.engineTs, Date.parse(rest[0]!.createdAt));

    await trade('BTC-PERP', 'sell', '0.004', '99980');
    await trade('BTC-PERP', 'buy', '0.005', '100020');
    const now = await tape('BTC-PERP');
    await until(a, now[0]!.tradeId);
    assert.deepEqual(received(a), [...now].reverse(), 'each trade once, oldest first, as the REST tape holds it');
    const updates = a.of('update');
    assert.ok(updates.length >= 1 && updates.length <= 2);
    for (const u of updates) {
      assert.equal(u.data.eventType, 'TradesUpdate');
      const trades = u.data.payload.trades as TapeTrade[];
      assert.equal(u.data.engineTs, Date.parse(trades.at(-1)!.createdAt));
      assert.equal(u.data.sourceTs, u.data.engineTs);
    }
    assertSequence(a.messages);
    assert.deepEqual(a.messages.map((m) => m.data.eventSeq),
      Array.from({ length: a.messages.length }, (_, i) => snapshot.data.eventSeq + i), 'gap-free');

    // A late joiner's snapshot is what the first client holds; both then see the next trade alike.
    const b = open('BTC-PERP');
    const late = await b.next((m) => m.event === 'snapshot');
    assert.deepEqual(late.data.payload.trades, received(a));
    assert.equal(late.data.eventSeq, a.messages.at(-1)!.data.eventSeq);
    await trade('BTC-PERP', 'buy', '0.006', '100030');
    const newest = (await tape('BTC-PERP'))[0]!;
    await until(a, newest.tradeId);
    await until(b, newest.tradeId);
    const lastOf = (c: StreamClient): Message => c.messages.at(-1)!;
    assert.deepEqual(lastOf(b).data, lastOf(a).data, 'one shared frame');
    assert.deepEqual(lastOf(b).data.payload.trades, [newest]);
    a.close();
    b.close();
  });

  test('streams opened during a burst of trades each see a gap-free run of the tape', async () => {
    await order(url, alice, 'BTC-PERP', 'sell', '0.03', '100000');
    const streams: StreamClient[] = [];
    const burst: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      burst.push(order(url, bob, 'BTC-PERP', 'buy', '0.001', '100000', { timeInForce: 'ioc' }));
      if (i % 10 === 5) streams.push(open('BTC-PERP', i === 15 ? 'intervalMs=100' : 'intervalMs=50'));
    }
    await Promise.all(burst);
    const rest = [...(await tape('BTC-PERP'))].reverse(); // oldest first
    for (const c of streams) await until(c, rest.at(-1)!.tradeId);
    for (const c of streams) {
      // Per connection: an EventSource that lost its connection under load reconnects and starts again
      // from a new snapshot, so the run to check is the last connection's.
      const last = c.messages.findLastIndex((m) => m.event === 'snapshot');
      const seen = c.messages.slice(last).filter((m) => m.event === 'snapshot' || m.event === 'update')
        .flatMap((m) => m.data.payload.trades as TapeTrade[]);
      const first = rest.findIndex((t) => t.tradeId === seen[0]!.tradeId);
      assert.ok(first >= 0);
      assert.deepEqual(seen, rest.slice(first), 'a contiguous run of the tape up to its newest trade');
      assertSequence(c.messages.slice(last));
      c.close();
    }
  });

  test('the snapshot holds the newest 100 trades', async () => {
    const asks = Array.from({ length: 110 }, (_, i) => order(url, alice, 'BTC-USDC', 'sell', '0.001', String(100_000 + i)));
    await Promise.all(asks);
    const sweep = await order(url, bob, 'BTC-USDC', 'buy', '0.11', '100109');
    assert.equal(sweep.status, 'filled');
    const c = open('BTC-USDC');
    const snapshot = await c.next((m) => m.event === 'snapshot');
    const rest = await tape('BTC-USDC');
    assert.equal(rest.length, 110);
    assert.deepEqual(snapshot.data.payload.trades, rest.slice(0, 100).reverse());
    c.close();
  });
});

describe('every kind of market', () => {
  test('a dated future, a spot pair and an option stream their trades', async () => {
    const cases: [string, 'buy' | 'sell', string, string][] = [
      [future, 'sell', '0.05', '100000'],
      ['ETH-USDC', 'buy', '0.5', '3000'],
      [option, 'buy', '1', '5000'],
    ];
    for (const [marketId, side, quantity, price] of cases) {
      const c = open(marketId);
      const snapshot = await c.next((m) => m.event === 'snapshot');
      assert.deepEqual(snapshot.data.payload, { marketId, trades: [] });
      await trade(marketId, side, quantity, price);
      const [newest] = await tape(marketId);
      assert.deepEqual([newest!.marketId, newest!.takerSide, newest!.quantity, newest!.price], [marketId, side, quantity, price]);
      const update = await c.next((m) => m.event === 'update');
      assert.deepEqual(update.data.payload, { marketId, trades: [newest] });
      assert.equal(update.data.eventSeq, snapshot.data.eventSeq + 1);
      c.close();
    }
  });
});

describe('opening', () => {
  test('the head and heartbeats on the raw stream', async () => {
    const twoBeats = (t: string) => t.split(':heartbeat\n\n').length > 2;
    const raw = await rawRead(streamUrl('BTC-PERP'), {}, twoBeats);
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'text/event-stream');
    assert.equal(raw.headers.get('cache-control'), 'no-cache');
    assert.ok(raw.text.includes('event: snapshot'), raw.text);
    assert.ok(raw.text.includes('\n\n:heartbeat\n\n'), raw.text);
  });

  test('refused before the stream opens: 404 unknown market, 400 parameters', async () => {
    refused(await call(url, '/markets/DOGE-PERP/trades/stream'), 404, 'NOT_FOUND');
    for (const q of ['intervalMs=10', 'intervalMs=5000', 'intervalMs=abc', 'depth=5', 'marketId=BTC-PERP']) {
      refused(await call(url, `/markets/BTC-PERP/trades/stream?${q}`), 400, 'VALIDATION_ERROR');
    }
  });

  test('the per-address stream cap applies; the refused stream opens once a slot is free', async () => {
    const capped = await startService({ ...STREAM_ENV, SSE_MAX_PER_IP: '1' });
    try {
      const first = open('BTC-PERP', 'intervalMs=50', capped.url);
      await first.next((m) => m.event === 'snapshot');
      refused(await call(capped.url, '/markets/BTC-PERP/trades/stream?intervalMs=200'), 429, 'RATE_LIMITED');
      first.close();
      await waitFor(() => capped.service.streams.stats().connections === 0, 5000, 10);
      assert.equal(capped.service.streams.stats().groups, 0);
      const second = open('BTC-PERP', 'intervalMs=200', capped.url);
      const snapshot = await second.next((m) => m.event === 'snapshot');
      assert.deepEqual(snapshot.data.payload, { marketId: 'BTC-PERP', trades: [] });
      second.close();
    } finally {
      await stopService(capped);
    }
  });
});

describe('resume after a reconnect', () => {
  const query = 'intervalMs=70';
  /** Opens BTC-PERP's tape, with `resume=true` and a Last-Event-ID header when `lastEventId` is given. */
  const resumed = (lastEventId: string, extra = '&resume=true') => {
    const c = new StreamClient(streamUrl('BTC-PERP', query + extra), { 'last-event-id': lastEventId });
    clients.push(c);
    return c;
  };
  const seqOf = (c: StreamClient) => c.messages.at(-1)!.data.eventSeq as number;
  const isSnapshot = (m: Message) => m.event === 'snapshot';
  /** Trades once, and waits until `c` has it. */
  async function traded(c: StreamClient): Promise<void> {
    await trade('BTC-PERP', 'buy', '0.001', '100000');
    await until(c, (await tape('BTC-PERP'))[0]!.tradeId);
  }

  test('resume=true with the last eventSeq: the missed trades once, no snapshot, then on', async () => {
    const keeper = open('BTC-PERP', query); // keeps the group while the client is away
    await keeper.next(isSnapshot);
    const a = open('BTC-PERP', query);
    await a.next(isSnapshot);
    await traded(a);
    a.close();
    const last = seqOf(a);
    for (let i = 0; i < 3; i++) await traded(keeper);
    const upTo = seqOf(keeper);
    assert.ok(upTo >= last + 3);

    const b = resumed(String(last));
    await waitFor(() => b.messages.length > 0 && seqOf(b) >= upTo, 5000, 10);
    assert.equal(b.of('snapshot').length, 0, 'no snapshot');
    for (const m of b.messages) {
      assert.deepEqual(m.data, keeper.messages.find((k) => k.data.eventSeq === m.data.eventSeq)!.data, 'the members\' frames');
    }
    await traded(b);
    const both = [...a.messages, ...b.messages];
    assertSequence(both);
    assert.deepEqual(both.map((m) => m.data.eventSeq), Array.from({ length: both.length }, (_, i) => both[0]!.data.eventSeq + i), 'gap-free');

    // each trade once, and what a fresh snapshot holds
    const fresh = open('BTC-PERP', query);
    const snap = await fresh.next(isSnapshot);
    await waitFor(() => seqOf(b) >= snap.data.eventSeq);
    const held = [...received(a), ...received(b)];
    const upToSnap = [...a.messages, ...b.messages].filter((m) => m.data.eventSeq <= snap.data.eventSeq)
      .flatMap((m) => m.data.payload.trades as TapeTrade[]);
    assert.equal(new Set(held.map((t) => t.tradeId)).size, held.length, 'no trade twice');
    const trades = snap.data.payload.trades as TapeTrade[];
    assert.deepEqual(upToSnap.slice(-trades.length), trades);
    assert.deepEqual(upToSnap.slice(-trades.length).map((t) => t.tradeId), (await tape('BTC-PERP')).slice(0, trades.length).map((t) => t.tradeId).reverse());
    for (const c of [keeper, b, fresh]) c.close();
  });

  test('a snapshot without resume=true, for an unknown Last-Event-ID, and from a previous instance of the group', async () => {
    await waitFor(() => ts.service.streams.stats().connections === 0, 5000, 10); // a group of its own
    const keeper = open('BTC-PERP', query);
    const first = await keeper.next(isSnapshot);
    await traded(keeper);
    await traded(keeper);
    const current = seqOf(keeper);
    for (const [id, extra] of [
      [String(current - 1), ''], // EventSource's own reconnect: the header alone
      [String(current - 1), '&resume=false'],
      [String(current + 1000), '&resume=true'], // not issued yet
      [String(first.data.eventSeq - 1), '&resume=true'], // before this group began
      ['-1', '&resume=true'],
    ] as const) {
      const c = resumed(id, extra);
      const m = await c.next(() => true);
      assert.equal(m.event, 'snapshot', `${id} ${extra}`);
      assert.equal(m.data.eventSeq, current);
      c.close();
    }
    refused(await call(url, `/markets/BTC-PERP/trades/stream?${query}&resume=1`), 400, 'VALIDATION_ERROR');

    // the group goes with its last member; a new one numbers its frames above every seq used before
    for (const c of clients) c.close();
    await waitFor(() => ts.service.streams.stats().connections === 0, 5000, 10);
    const renewed = open('BTC-PERP', query);
    const snap = await renewed.next(isSnapshot);
    assert.ok(snap.data.eventSeq > current, `${snap.data.eventSeq} after ${current}`);
    await traded(renewed);
    const c = resumed(String(current));
    const m = await c.next(() => true);
    assert.equal(m.event, 'snapshot');
    assert.equal(m.data.eventSeq, seqOf(renewed));
    assert.deepEqual(m.data.payload.trades, received(renewed).slice(-m.data.payload.trades.length));
  });
});
