/**
 * GET /perps/book-stream over HTTP with a real EventSource against the real service (push feed,
 * index fresh for an hour, two funded traders placing orders through POST /perps/orders).
 *
 * Covers: the response head (text/event-stream, no-cache, x-accel-buffering, X-Api-Version and
 * X-RateLimit-* from the app's hooks), snapshot then `update` diffs with only changed levels,
 * cumulative totals kept current by the diffs (a level whose total moved is sent), a removed level as size "0", levels leaving the depth window, strictly
 * increasing eventSeq equal to the SSE id, a late joiner's snapshot equal to the early client's
 * snapshot-plus-diffs and to GET /perps/orderbook, one shared group (identical frames) for
 * subscribers of the same (market, depth, interval), heartbeats on the raw stream, and parameter
 * bounds refused with 400 before any stream opens (404 for an unknown market; 400 for HTTP/1.0);
 * a spot pair's book, which the stream serves as it serves a perpetual's; and resume after a
 * reconnect (`resume=true` with Last-Event-ID): the missed updates instead of a snapshot, continuing
 * gap-free to the state a fresh snapshot holds, and a snapshot without `resume=true`, for an unknown
 * or too old Last-Event-ID, and for one from a previous instance of the group.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { clobTraders, ok, post } from '../support/clob-http.ts';
import { RESUME_WINDOW_MS } from '../../src/gateway/streams/hub.ts';
import { call, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';
import {
  assertSequence,
  cancel,
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
let maker: Trader;
let taker: Trader;

type Side = Map<string, { size: string; total: string }>;
interface Book {
  bids: Side;
  asks: Side;
}

function apply(book: Book, payload: { bids: Json[]; asks: Json[] }): void {
  for (const key of ['bids', 'asks'] as const) {
    for (const l of payload[key]) {
      if (l.size === '0') book[key].delete(l.price);
      else book[key].set(l.price, { size: l.size, total: l.total });
    }
  }
}

/** Levels best first with recomputed running totals (what a client shows). */
function levels(side: Side, descending: boolean): [string, string, string][] {
  const sorted = [...side.entries()].sort((a, b) => (Number(a[0]) - Number(b[0])) * (descending ? -1 : 1));
  let total = 0;
  return sorted.map(([price, l]) => {
    total = Math.round((total + Number(l.size)) * 1e8) / 1e8;
    return [price, l.size, String(total)];
  });
}

function rebuild(messages: readonly Message[]): Book {
  const book: Book = { bids: new Map(), asks: new Map() };
  for (const m of messages) if (m.event === 'snapshot' || m.event === 'update') apply(book, m.data.payload);
  return book;
}

const streamUrl = (q: string) => `${url}/perps/book-stream?${q}`;

before(async () => {
  ts = await startService(STREAM_ENV);
  url = ts.url;
  await publishIndex(url, 'BTC', '100000');
  [maker, taker] = await Promise.all([perpTrader(url), perpTrader(url)]);
});
after(async () => {
  await stopService(ts);
});

describe('GET /perps/book-stream', () => {
  test('response head carries the SSE headers and the app headers', async () => {
    const raw = await rawRead(streamUrl('marketId=BTC-PERP'), {}, (t) => t.includes('event: snapshot'));
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'text/event-stream');
    assert.equal(raw.headers.get('cache-control'), 'no-cache');
    assert.equal(raw.headers.get('x-accel-buffering'), 'no');
    assert.equal(raw.headers.get('x-api-version'), '1');
    assert.ok(raw.headers.get('x-ratelimit-limit') !== null);
    assert.ok(raw.headers.get('x-ratelimit-remaining') !== null);
    // The snapshot is the first event; through a gateway of the distributed mode it comes from the
    // stream producer a NATS round trip later, so a heartbeat comment may precede it.
    assert.match(raw.text, /^retry: \d+\n\n(?::heartbeat\n\n)*id: \d+\nevent: snapshot\ndata: \{/);
  });

  test('heartbeat comments arrive on an idle stream', async () => {
    const twoBeats = (t: string) => t.split(':heartbeat\n\n').length > 2;
    const raw = await rawRead(streamUrl('marketId=BTC-PERP'), {}, twoBeats);
    assert.ok(raw.text.includes('\n\n:heartbeat\n\n'), raw.text);
  });

  test('snapshot, then updates with only the changed levels; removed levels have size "0"', async () => {
    const client = new StreamClient(streamUrl('marketId=BTC-PERP&depth=3&intervalMs=50'));
    try {
      const snap = await client.next((m) => m.event === 'snapshot');
      assert.equal(snap.data.eventType, 'BookSnapshot');
      assert.deepEqual(snap.data.payload, { marketId: 'BTC-PERP', bids: [], asks: [] });

      const a = await limit(url, maker, 'buy', '0.01', '99000');
      let u = await client.next((m) => m.event === 'update');
      assert.equal(u.data.eventType, 'BookUpdate');
      const level = { price: '99000', size: '0.01', total: '0.01' };
      assert.deepEqual(u.data.payload, { marketId: 'BTC-PERP', bids: [level], asks: [] });

      let seen = client.messages.length;
      const b = await limit(url, maker, 'buy', '0.02', '99500');
      u = await client.next((m) => m.event === 'update', 5000, seen);
      // the new level, and 99000 below it: same size, its running total moved to 0.03
      // (before: only the new level, and a client applying the diffs kept 99000 at total 0.01)
      assert.deepEqual(u.data.payload.bids, [{ price: '99500', size: '0.02', total: '0.02' }, { price: '99000', size: '0.01', total: '0.03' }]);

      seen = client.messages.length;
      await limit(url, maker, 'sell', '0.5', '101000');
      await limit(url, maker, 'sell', '0.25', '101000');
      const full = (m: Message) =>
        m.event === 'update' && m.data.payload.asks.some((l: Json) => l.size === '0.75');
      u = await client.next(full, 5000, seen);
      assert.deepEqual(u.data.payload.asks, [{ price: '101000', size: '0.75', total: '0.75' }]);

      seen = client.messages.length;
      await cancel(url, maker, b.id);
      u = await client.next((m) => m.event === 'update', 5000, seen);
      assert.deepEqual(u.data.payload.bids, [{ price: '99500', size: '0', total: '0' }, { price: '99000', size: '0.01', total: '0.01' }]);

      // depth window: four bids with depth 3 -> the worst is outside; a better one pushes 99000 out
      seen = client.messages.length;
      await limit(url, maker, 'buy', '0.01', '99100');
      await limit(url, maker, 'buy', '0.01', '99200');
      await waitFor(() => rebuild(client.messages).bids.size === 3);
      seen = client.messages.length;
      await limit(url, maker, 'buy', '0.01', '99300');
      u = await client.next((m) => m.event === 'update', 5000, seen);
      const bids = u.data.payload.bids as Json[];
      assert.ok(bids.some((l) => l.price === '99300' && l.size === '0.01'), JSON.stringify(bids));
      assert.ok(bids.some((l) => l.price === '99000' && l.size === '0'), JSON.stringify(bids));

      // a trade reduces a level: the taker sells 0.004 into the best bid
      seen = client.messages.length;
      await limit(url, taker, 'sell', '0.004', '99300');
      u = await client.next((m) => m.event === 'update' && m.data.payload.bids.length > 0, 5000, seen);
      assert.deepEqual(u.data.payload.bids, [
        { price: '99300', size: '0.006', total: '0.006' },
        { price: '99200', size: '0.01', total: '0.016' },
        { price: '99100', size: '0.01', total: '0.026' },
      ]);
      assert.ok(a.id !== undefined);
      assertSequence(client.messages);
    } finally {
      client.close();
    }
  });

  test('a late joiner\'s snapshot equals an early client\'s snapshot plus diffs, and REST', async () => {
    const early = new StreamClient(streamUrl('marketId=BTC-PERP&depth=10&intervalMs=50'));
    try {
      await early.next((m) => m.event === 'snapshot');
      const placed = [];
      for (let i = 0; i < 6; i++) {
        placed.push(await limit(url, maker, 'buy', `0.00${i + 1}`, String(98000 + i * 10)));
      }
      await cancel(url, maker, placed[2].id);
      await limit(url, taker, 'sell', '0.003', '98050');
      await new Promise((r) => setTimeout(r, 200));
      const late = new StreamClient(streamUrl('marketId=BTC-PERP&depth=10&intervalMs=50'));
      try {
        const snap = await late.next((m) => m.event === 'snapshot');
        await waitFor(() => early.messages.some((m) => m.data.eventSeq === snap.data.eventSeq));
        const upTo = early.messages.filter((m) => m.data.eventSeq <= snap.data.eventSeq);
        const rebuilt = rebuild(upTo);
        const fresh = rebuild([snap]);
        // the totals the early client holds from applying the diffs are the running sums
        const held = (side: Side, descending: boolean) => levels(side, descending).map(([p]) => [p, side.get(p)!.size, side.get(p)!.total]);
        assert.deepEqual(held(rebuilt.bids, true), levels(rebuilt.bids, true));
        assert.deepEqual(levels(rebuilt.bids, true), levels(fresh.bids, true));
        assert.deepEqual(levels(rebuilt.asks, false), levels(fresh.asks, false));
        // the snapshot's totals are the running sums
        const sent = snap.data.payload.bids.map((l: Json) => [l.price, l.size, l.total]);
        assert.deepEqual(sent, levels(fresh.bids, true));
        const rest = await call(url, '/perps/orderbook/BTC-PERP?depth=10');
        assert.deepEqual(rest.body.bids, levels(fresh.bids, true).map(([p, s]) => [p, s]));
        assert.deepEqual(rest.body.asks, levels(fresh.asks, false).map(([p, s]) => [p, s]));
        // both now see the same frames of one group
        const seenEarly = early.messages.length;
        const seenLate = late.messages.length;
        await limit(url, maker, 'buy', '0.001', '97000');
        const e = await early.next((m) => m.event === 'update', 5000, seenEarly);
        const l = await late.next((m) => m.event === 'update', 5000, seenLate);
        assert.deepEqual(e.data, l.data);
        assert.equal(e.data.eventSeq, snap.data.eventSeq + (e.data.eventSeq - snap.data.eventSeq));
        assertSequence(early.messages);
        assertSequence(late.messages);
      } finally {
        late.close();
      }
    } finally {
      early.close();
    }
  });

  test('subscribers of one (market, depth, interval) share a group; it stops with the last', async () => {
    await waitFor(() => ts.service.streams.stats().connections === 0);
    const before = ts.service.streams.stats().groups;
    const same = streamUrl('marketId=BTC-PERP&depth=7&intervalMs=60');
    const clients = [1, 2, 3].map(() => new StreamClient(same));
    const other = new StreamClient(streamUrl('marketId=BTC-PERP&depth=8&intervalMs=60'));
    try {
      for (const c of [...clients, other]) await c.next((m) => m.event === 'snapshot');
      assert.equal(ts.service.streams.stats().groups, before + 2);
    } finally {
      for (const c of [...clients, other]) c.close();
    }
    await waitFor(() => {
      const stats = ts.service.streams.stats();
      return stats.groups === before && stats.connections === 0;
    });
  });

  test('out-of-range and unknown parameters are refused with 400 before any stream opens', async () => {
    const cases = [
      'marketId=BTC-PERP&depth=0',
      'marketId=BTC-PERP&depth=101',
      'marketId=BTC-PERP&depth=2.5',
      'marketId=BTC-PERP&depth=abc',
      'marketId=BTC-PERP&intervalMs=49',
      'marketId=BTC-PERP&intervalMs=2001',
      'marketId=BTC-PERP&intervalMs=',
      'marketId=BTC-PERP&foo=1',
      'depth=10',
    ];
    for (const q of cases) {
      const r = await call(url, `/perps/book-stream?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'VALIDATION_ERROR', q);
      assert.equal(typeof r.body.message, 'string');
      assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    }
    const edges = ['marketId=BTC-PERP&depth=100&intervalMs=50', 'marketId=BTC-PERP&depth=1&intervalMs=2000'];
    for (const q of edges) {
      const raw = await rawRead(`${url}/perps/book-stream?${q}`, {}, (t) => t.includes('event: snapshot'));
      assert.equal(raw.status, 200, q);
    }
    const unknown = await call(url, '/perps/book-stream?marketId=NOPE-PERP');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'NOT_FOUND');
    await waitFor(() => ts.service.streams.stats().connections === 0);
  });

  test('a spot pair /perps/markets lists streams its book too; an option instrument is not a perps market', async () => {
    const [seller] = await clobTraders(url, 1, { btc: '1' });
    const client = new StreamClient(streamUrl('marketId=BTC-USDC&intervalMs=50'));
    try {
      // Before: 404 "market BTC-USDC not found", though GET /perps/orderbook/BTC-USDC served it.
      const snap = await client.next((m) => m.event === 'snapshot');
      assert.deepEqual(snap.data.payload, { marketId: 'BTC-USDC', bids: [], asks: [] });
      ok(await post(url, seller!, '/orders', { marketId: 'BTC-USDC', side: 'sell', quantity: '0.2', price: '100000' }), 201);
      const u = await client.next((m) => m.event === 'update');
      assert.deepEqual(u.data.payload, { marketId: 'BTC-USDC', bids: [], asks: [{ price: '100000', size: '0.2', total: '0.2' }] });
      const book = (await call(url, '/perps/orderbook/BTC-USDC')).body as { asks: string[][] };
      assert.deepEqual(book.asks, [['100000', '0.2']]);
    } finally {
      client.close();
    }
    const option = [...ts.service.exchange.clob.markets.values()].find((m) => m.isOption)!.spec.id;
    const refused = await call(url, `/perps/book-stream?marketId=${option}`);
    assert.equal(refused.status, 404, 'options stream on /options/stream/events');
  });

  test('an HTTP/1.0 request is refused with 400 (streams are chunked HTTP/1.1)', async () => {
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.write('GET /perps/book-stream?marketId=BTC-PERP HTTP/1.0\r\n\r\n');
    const head = await new Promise<string>((resolve) => {
      socket.once('data', (d: Buffer) => resolve(d.toString()));
    });
    socket.destroy();
    assert.match(head, /^HTTP\/1\.[01] 400 /);
    assert.ok(head.includes('"error":"VALIDATION_ERROR"'));
  });

  test('the stream is documented in OpenAPI under the streams tag with its bounds', async () => {
    const doc = (await call(url, '/openapi.json')).body;
    const op = doc.paths['/perps/book-stream'].get;
    assert.deepEqual(op.tags, ['streams']);
    const depth = op.parameters.find((p: Json) => p.name === 'depth');
    assert.equal(depth.schema.maximum, 100);
    assert.ok(op.responses['200'].content['text/event-stream'] !== undefined);
    assert.equal(doc.paths['/perps/book-stream'].head, undefined);
  });
});

describe('resume after a reconnect', () => {
  const query = 'marketId=BTC-PERP&depth=6&intervalMs=50';
  const opened: StreamClient[] = [];
  /** Opens the stream, with `resume=true` and a Last-Event-ID header when `lastEventId` is given. */
  const open = (lastEventId?: string, extra = '&resume=true') => {
    const c = lastEventId === undefined
      ? new StreamClient(streamUrl(query))
      : new StreamClient(streamUrl(query + extra), { 'last-event-id': lastEventId });
    opened.push(c);
    return c;
  };
  const seqOf = (c: StreamClient) => c.messages.at(-1)!.data.eventSeq as number;
  const isSnapshot = (m: Message) => m.event === 'snapshot';
  /** A change of the group's book: a new best bid (above the earlier tests' bids, below their asks). */
  let price = 100100;
  const change = () => limit(url, maker, 'buy', '0.001', String(price++));
  /** Places `n` changes, each in a frame of its own, and waits until `c` has seen them. */
  async function changes(c: StreamClient, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const seen = c.messages.length;
      await change();
      await c.next((m) => m.event === 'update', 5000, seen);
    }
  }
  /** A seq of the running group whose next frame was sent at `at`, for the too-old case. */
  let old: { seq: number; at: number };
  let keeper: StreamClient;

  after(() => {
    for (const c of opened) c.close();
  });

  test('resume=true with the last eventSeq: no snapshot, the missed updates, then on; the state of a snapshot', async () => {
    keeper = open(); // keeps the group while the client is away
    await keeper.next(isSnapshot);
    const a = open();
    await a.next(isSnapshot);
    await changes(a, 1);
    old = { seq: seqOf(a) - 1, at: Date.now() };
    await changes(a, 2);
    a.close();
    const last = seqOf(a);
    // missed while away: new levels, one removed, one reduced by a trade
    const missed = await limit(url, maker, 'buy', '0.002', String(price++));
    await changes(keeper, 2);
    await cancel(url, maker, missed.id);
    await limit(url, taker, 'sell', '0.0005', '99000');
    await keeper.next((m) => m.event === 'update' && m.data.payload.bids.some((l: Json) => l.size === '0.0005'));
    const upTo = seqOf(keeper);
    assert.ok(upTo >= last + 3, `${upTo} after ${last}`);

    const b = open(String(last));
    await waitFor(() => b.messages.length > 0 && seqOf(b) >= upTo);
    assert.equal(b.of('snapshot').length, 0, 'no snapshot');
    assert.deepEqual(b.messages.map((m) => m.data.eventSeq), Array.from({ length: b.messages.length }, (_, i) => last + 1 + i));
    for (const m of b.messages) {
      assert.deepEqual(m.data, keeper.messages.find((k) => k.data.eventSeq === m.data.eventSeq)!.data, 'the frames the members got');
    }
    // then on as any member
    const seen = b.messages.length;
    await change();
    const next = await b.next((m) => m.event === 'update', 5000, seen);
    assert.equal(next.data.eventSeq, upTo + 1);
    const both = [...a.messages, ...b.messages];
    assertSequence(both);
    assert.deepEqual(both.map((m) => m.data.eventSeq), Array.from({ length: both.length }, (_, i) => both[0]!.data.eventSeq + i), 'gap-free');

    // what the resumed client holds is what a fresh snapshot holds
    const fresh = open();
    const snap = await fresh.next(isSnapshot);
    await waitFor(() => seqOf(b) >= snap.data.eventSeq);
    const held = rebuild([...a.messages, ...b.messages].filter((m) => m.data.eventSeq <= snap.data.eventSeq));
    assert.deepEqual(held, rebuild([snap]));
    assert.ok(held.bids.size >= 4);
    b.close();
    fresh.close();
  });

  test('a snapshot without resume=true, for an unknown Last-Event-ID; none for the latest eventSeq', async () => {
    const current = seqOf(keeper);
    for (const [id, extra] of [
      [String(current - 1), ''], // EventSource's own reconnect: the header alone
      [String(current - 1), '&resume=false'],
      [String(current + 1000), '&resume=true'], // not issued yet
      [String(keeper.messages[0]!.data.eventSeq - 1), '&resume=true'], // before this group began
      ['abc', '&resume=true'],
    ] as const) {
      const c = open(id, extra);
      const first = await c.next(() => true);
      assert.equal(first.event, 'snapshot', `${id} ${extra}`);
      assert.equal(first.data.eventSeq, seqOf(keeper));
      c.close();
    }
    const refused = await call(url, `/perps/book-stream?${query}&resume=yes`);
    assert.equal(refused.status, 400);

    // at the latest eventSeq: nothing to catch up, the next update continues it
    const c = open(String(seqOf(keeper)));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(c.messages.length, 0, 'no snapshot');
    await change();
    const next = await c.next(() => true);
    assert.equal(next.event, 'update');
    assert.equal(next.data.eventSeq, current + 1);
    c.close();
  });

  test('a Last-Event-ID older than the kept frames gives a snapshot', async () => {
    const wait = old.at + RESUME_WINDOW_MS + 300 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await changes(keeper, 1);
    const c = open(String(old.seq));
    const first = await c.next(() => true);
    assert.equal(first.event, 'snapshot');
    assert.equal(first.data.eventSeq, seqOf(keeper));
    // one frame later it still resumes
    const recent = open(String(seqOf(keeper) - 1));
    const resumed = await recent.next(() => true);
    assert.equal(resumed.event, 'update');
    assert.deepEqual(resumed.data, keeper.messages.at(-1)!.data);
    c.close();
    recent.close();
  });

  test('an eventSeq from a previous instance of the group gives a snapshot, numbered above it', async () => {
    const previous = seqOf(keeper);
    for (const c of opened) c.close();
    await waitFor(() => ts.service.streams.stats().connections === 0);
    // the group is gone; a new one takes its seqs from above every seq used before
    const renewed = open();
    const snap = await renewed.next(isSnapshot);
    assert.ok(snap.data.eventSeq > previous, `${snap.data.eventSeq} after ${previous}`);
    await changes(renewed, 1);
    const c = open(String(previous));
    const first = await c.next(() => true);
    assert.equal(first.event, 'snapshot');
    assert.equal(first.data.eventSeq, seqOf(renewed));
    assert.deepEqual(rebuild([first]), rebuild(renewed.messages));
  });
});
