/**
 * GET /options/stream/events over HTTP with a real EventSource against the real service (push
 * index feed, the real ticker every 100 ms listing the option ladders and recomputing the board,
 * a maker and a taker trading one option through POST /options/orders, two accounts quoting a
 * 50 % smile through POST /quotes/bulk on another expiry so the board has marks there).
 *
 * Covers: 401 before any stream without credentials, with a bad token or a token in the query
 * string; Bearer, a read-scope API key and the session cookie each open it; parameter bounds
 * (depth 0/251, intervalMs 49/2001, a non-boolean includeReference, unknown or missing parameters:
 * 400; an unknown instrument or a perp id: 404; a spot pair: 400) refused before any stream opens,
 * and the bounds themselves accepted; snapshot (OptionsStreamSnapshot) then deltas
 * (OptionsStreamDelta) with only the changed levels, a removed level as size "0", strictly
 * increasing eventSeq equal to the SSE id, the public trade tape { side, price, quantity,
 * liquidity, createdAt } (taker side) with no account, address, order or trade ids anywhere in the
 * stream, identical frames for two connections of one group, a late joiner's snapshot equal to
 * GET /options/orderbook; the reference overlay { markPrice, source, tradable: false } only with
 * includeReference=true (the board's mark on a fitted expiry, nulls where the board has none).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, signIn, type TestService, type Trader } from '../support/harness.ts';
import { ok, post } from '../support/clob-http.ts';
import {
  boardWithMarks,
  dvolExpiries,
  expiries,
  instruments,
  optionsService,
  optionTraders,
  quoteSurface,
  type Instrument,
} from './options-support.ts';
import {
  assertSequence, bearer, rawRead, stopService, StreamClient, type Json, type Message,
} from './support.ts';

let ts: TestService;
let url: string;
let maker: Trader;
let taker: Trader;
let watcher: Trader;
let list: Instrument[];
/** The traded option (on an expiry nobody quotes a surface on). */
let traded: string;
/** Quoted on the fitted expiry: the board has marks for these. */
let fitted: string[];

const DECIMAL = /^-?\d+(\.\d+)?$/;
const eventsUrl = (q: string) => `${url}/options/stream/events?${q}`;
const snapshotSeen = (t: string) => t.includes('event: snapshot');

before(async () => {
  ts = await optionsService();
  url = ts.url;
  list = await instruments(url);
  const [near] = dvolExpiries(list);
  const other = expiries(list).find((e) => e !== near)!;
  traded = list.find((i) => i.expiry === other && i.type === 'call' && i.strike === '100000')!.id;
  [maker, taker] = (await optionTraders(url)) as [Trader, Trader];
  watcher = await signIn(url);
  fitted = await quoteSurface(url, list, near, [maker, taker]);
  await boardWithMarks(url, fitted);
});
after(async () => {
  await stopService(ts);
});

async function order(t: Trader, marketId: string, fields: Record<string, unknown>): Promise<Json> {
  return ok(await post(url, t, '/options/orders', { marketId, quantity: '1', ...fields }), 201);
}

async function apiKey(t: Trader): Promise<string> {
  const body = { name: 'options-stream', scope: 'read' };
  const r = await call(url, '/perps/me/api-keys', { token: t.token, body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.secret;
}

/** Waits for a delta (after message index `from`) whose payload satisfies `match`. */
function delta(client: StreamClient, from: number, match: (p: Json) => boolean): Promise<Message> {
  return client.next((m) => m.event === 'delta' && match(m.data.payload), 5000, from);
}

const level = (price: string, size: string, total: string) => ({ price, size, total });

describe('authentication', () => {
  test('no credentials, a bad token or a token in the query string: 401 before any stream', async () => {
    const path = `/options/stream/events?marketId=${traded}`;
    const none = await call(url, path);
    assert.equal(none.status, 401);
    assert.deepEqual(Object.keys(none.body).sort(), ['error', 'message']);
    assert.equal(none.body.error, 'UNAUTHENTICATED');
    assert.equal((await call(url, path, { headers: { authorization: 'Bearer not.a.token' } })).status, 401);
    for (const name of ['token', 'access_token', 'apiKey']) {
      const leaked = await call(url, `${path}&${name}=${encodeURIComponent(watcher.token)}`);
      assert.equal(leaked.status, 401, name);
    }
    assert.equal(ts.service.streams.stats().connections, 0);
  });

  test('Bearer, a read-scope API key and the session cookie each open the stream', async () => {
    const q = `marketId=${traded}`;
    const credentials: Record<string, string>[] = [
      bearer(watcher),
      { 'x-api-key': await apiKey(watcher) },
      { cookie: `session=${watcher.token}`, origin: ts.settings.publicOrigin },
    ];
    for (const headers of credentials) {
      const raw = await rawRead(eventsUrl(q), headers, snapshotSeen);
      assert.equal(raw.status, 200, JSON.stringify(headers));
      assert.match(raw.text, /^retry: \d+\n\nid: \d+\nevent: snapshot\ndata: \{/);
      assert.ok(raw.text.includes('"eventType":"OptionsStreamSnapshot"'));
    }
  });
});

describe('parameters', () => {
  test('out-of-range or unknown parameters: 400; unknown instrument: 404; spot pair: 400', async () => {
    const opened = ts.service.streams.stats().opened;
    const cases: [string, number, string][] = [
      [`marketId=${traded}&depth=0`, 400, 'VALIDATION_ERROR'],
      [`marketId=${traded}&depth=251`, 400, 'VALIDATION_ERROR'],
      [`marketId=${traded}&intervalMs=49`, 400, 'VALIDATION_ERROR'],
      [`marketId=${traded}&intervalMs=2001`, 400, 'VALIDATION_ERROR'],
      [`marketId=${traded}&includeReference=maybe`, 400, 'VALIDATION_ERROR'],
      [`marketId=${traded}&openOnly=true`, 400, 'VALIDATION_ERROR'],
      ['depth=5', 400, 'VALIDATION_ERROR'],
      ['marketId=BTC-01JAN20-100000-C', 404, 'NOT_FOUND'],
      ['marketId=BTC-PERP', 404, 'NOT_FOUND'],
      ['marketId=BTC-USDC', 400, 'VALIDATION_ERROR'],
    ];
    for (const [q, status, code] of cases) {
      const r = await call(url, `/options/stream/events?${q}`, { token: watcher.token });
      assert.equal(r.status, status, q);
      assert.equal(r.body.error, code, q);
      assert.equal(typeof r.body.message, 'string', q);
    }
    assert.equal(ts.service.streams.stats().opened, opened);
    for (const q of ['depth=1&intervalMs=50', 'depth=250&intervalMs=2000&includeReference=false']) {
      const raw = await rawRead(eventsUrl(`marketId=${traded}&${q}`), bearer(watcher), snapshotSeen);
      assert.equal(raw.status, 200, q);
    }
  });
});

/** Orders on `traded` one at a time; each change must arrive as its own delta with these levels. */
async function bookSteps(client: StreamClient): Promise<{ orderIds: string[]; last: Message }> {
  const ask = await order(maker, traded, { side: 'sell', price: '2000' });
  let d = await delta(client, 0, (p) => p.orderbook.asks.length > 0);
  assert.equal(d.data.eventType, 'OptionsStreamDelta');
  const first = { bids: [], asks: [level('2000', '1', '1')] };
  assert.deepEqual(d.data.payload, { marketId: traded, orderbook: first, trades: [] });

  let seen = client.messages.length;
  const far = await order(maker, traded, { side: 'sell', price: '2100', quantity: '2' });
  d = await delta(client, seen, (p) => p.orderbook.asks.length > 0);
  assert.deepEqual(d.data.payload.orderbook, { bids: [], asks: [level('2100', '2', '3')] });

  seen = client.messages.length;
  await order(maker, traded, { side: 'buy', price: '1500' });
  d = await delta(client, seen, (p) => p.orderbook.bids.length > 0);
  assert.deepEqual(d.data.payload.orderbook.bids, [level('1500', '1', '1')]);

  seen = client.messages.length;
  await order(taker, traded, { side: 'buy', price: '2000', timeInForce: 'ioc' });
  d = await delta(client, seen, (p) => p.trades.length > 0);
  // the lifted ask leaves; the one behind it is now the top, its total down to its own size
  assert.deepEqual(d.data.payload.orderbook.asks, [level('2000', '0', '0'), level('2100', '2', '2')]);
  assert.equal(d.data.payload.trades.length, 1);
  const trade = d.data.payload.trades[0];
  assert.deepEqual(Object.keys(trade), ['side', 'price', 'quantity', 'liquidity', 'createdAt']);
  const fields = [trade.side, trade.price, trade.quantity, trade.liquidity];
  assert.deepEqual(fields, ['buy', '2000', '1', 'taker']);
  assert.match(trade.createdAt, /Z$/);

  seen = client.messages.length;
  await order(taker, traded, { side: 'sell', price: '1500', quantity: '0.5', timeInForce: 'ioc' });
  d = await delta(client, seen, (p) => p.trades.length > 0);
  assert.deepEqual(d.data.payload.orderbook.bids, [level('1500', '0.5', '0.5')]);
  const tape = d.data.payload.trades.map((t: Json) => [t.side, t.price, t.quantity]);
  assert.deepEqual(tape, [['sell', '1500', '0.5']]);

  seen = client.messages.length;
  ok(await post(url, maker, `/options/orders/${far.id}/cancel`));
  d = await delta(client, seen, (p) => p.orderbook.asks.length > 0);
  assert.deepEqual(d.data.payload.orderbook.asks, [level('2100', '0', '0')]);
  return { orderIds: [ask.id, far.id], last: d };
}

/** A late joiner's snapshot shows the book GET /options/orderbook shows, and no past trades. */
async function lateJoinerMatchesRest(q: string): Promise<void> {
  const late = new StreamClient(eventsUrl(q), bearer(watcher));
  try {
    const s = await late.next((m) => m.event === 'snapshot');
    const rest = ok(await call(url, `/options/orderbook/${traded}`));
    const asLevels = (side: [string, string][]) => {
      let total = 0;
      return side.map(([price, size]) => level(price, size, String((total += Number(size)))));
    };
    assert.deepEqual(s.data.payload.orderbook, { bids: asLevels(rest.bids), asks: asLevels(rest.asks) });
    assert.deepEqual(s.data.payload.trades, []);
  } finally {
    late.close();
  }
}

/** Nothing in the messages names an account, an order or a trade. */
function assertNoPrivateData(messages: readonly Message[], orderIds: readonly string[]): void {
  const text = JSON.stringify(messages);
  const lower = text.toLowerCase();
  for (const t of [maker, taker, watcher]) assert.ok(!lower.includes(t.lower), 'no wallet address');
  for (const id of orderIds) assert.ok(!text.includes(`"${id}"`), `order id ${id}`);
  for (const k of ['tradeId', 'orderId', 'accountId', 'address', 'maker', 'fee', 'clientOrderId']) {
    assert.ok(!text.includes(`"${k}"`), k);
  }
}

describe('book and trade tape', () => {
  test('snapshot, then deltas with changed levels, removals as "0" and the public tape', async () => {
    const q = `marketId=${traded}&depth=3&intervalMs=50`;
    const client = new StreamClient(eventsUrl(q), bearer(watcher));
    const twin = new StreamClient(eventsUrl(q), bearer(taker));
    try {
      const snap = await client.next((m) => m.event === 'snapshot');
      assert.equal(snap.data.eventType, 'OptionsStreamSnapshot');
      const empty = { marketId: traded, orderbook: { bids: [], asks: [] }, trades: [] };
      assert.deepEqual(snap.data.payload, empty);
      await twin.next((m) => m.event === 'snapshot');

      const { orderIds, last } = await bookSteps(client);
      assertSequence(client.messages);
      const deltas = client.of('delta');
      assert.ok(deltas.every((m) => m.data.eventType === 'OptionsStreamDelta'));
      assert.ok(deltas.every((m) => !('reference' in m.data.payload)));
      // one group: the twin connection received the very same frames
      const twinDelta = await twin.next((m) => m.data.eventId === last.data.eventId);
      assert.deepEqual(twinDelta.data, last.data);

      await lateJoinerMatchesRest(q);
      assertNoPrivateData([...client.messages, ...twin.messages], orderIds);
    } finally {
      client.close();
      twin.close();
    }
  });
});

describe('reference overlay', () => {
  test('only with includeReference=true: { markPrice, source, tradable: false }', async () => {
    const id = fitted[fitted.length - 1]!;
    const refUrl = eventsUrl(`marketId=${id}&includeReference=true&intervalMs=50`);
    const withRef = new StreamClient(refUrl, bearer(watcher));
    const without = new StreamClient(eventsUrl(`marketId=${id}&intervalMs=50`), bearer(watcher));
    const unfitted = new StreamClient(eventsUrl(`marketId=${traded}&includeReference=true`), bearer(watcher));
    try {
      const s = await withRef.next((m) => m.event === 'snapshot');
      const ref = s.data.payload.reference;
      assert.deepEqual(Object.keys(ref), ['markPrice', 'source', 'tradable']);
      assert.match(ref.markPrice, DECIMAL);
      assert.equal(ref.source, 'svi-fit');
      assert.equal(ref.tradable, false);
      const board = ok(await call(url, '/markets/board'));
      const row = board.options.find((o: Json) => o.id === id);
      const drift = Math.abs(Number(row.mark) - Number(ref.markPrice));
      assert.ok(drift <= Number(row.mark) * 0.01, `stream ${ref.markPrice} vs board ${row.mark}`);
      // the tradable book is the book, untouched by the overlay
      const rest = ok(await call(url, `/options/orderbook/${id}`));
      assert.equal(s.data.payload.orderbook.bids[0].price, rest.bids[0][0]);
      assert.equal(s.data.payload.orderbook.asks[0].price, rest.asks[0][0]);

      const plain = await without.next((m) => m.event === 'snapshot');
      assert.ok(!('reference' in plain.data.payload));
      assert.deepEqual(plain.data.payload.orderbook, s.data.payload.orderbook);

      const none = (await unfitted.next((m) => m.event === 'snapshot')).data.payload.reference;
      assert.deepEqual(none, { markPrice: null, source: null, tradable: false });

      // a book change: deltas carry the overlay only where it was asked for
      const seen = withRef.messages.length;
      const bid = await order(maker, id, { side: 'buy', price: '0.1' });
      const d = await delta(withRef, seen, (p) => p.orderbook.bids.length > 0);
      assert.equal(d.data.payload.reference.tradable, false);
      assert.match(d.data.payload.reference.markPrice, DECIMAL);
      await delta(without, 0, (p) => p.orderbook.bids.length > 0);
      assert.ok(without.of('delta').every((m) => !('reference' in m.data.payload)));
      assert.ok(withRef.of('delta').every((m) => m.data.payload.reference.tradable === false));
      ok(await post(url, maker, `/options/orders/${bid.id}/cancel`));
      assertSequence(withRef.messages);
    } finally {
      withRef.close();
      without.close();
      unfitted.close();
    }
  });
});
