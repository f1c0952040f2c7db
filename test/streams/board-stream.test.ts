/**
 * GET /markets/board/stream over HTTP with a real EventSource against the real service (push
 * index feed for BTC and ETH, the real ticker every 100 ms listing the option ladders and
 * recomputing the board, two funded accounts quoting a 50 % smile through POST /quotes/bulk on
 * the two expiries around 30 days, so the board has marks and a DVOL).
 *
 * Covers: data-only messages (no `event:` line; EventSource `message`) with `id:` = eventSeq, the
 * envelope with eventType OptionsBoardSnapshot, strictly increasing eventSeq, the first message on
 * connect and then about one a second; the payload against GET /markets/board (same keys, expiries,
 * forwards, option ids and terms, top of book, marks on the quoted rows, the volatility-index
 * block { underlying, dvol, tenorDays, computedAt }); sourceTs = the index source time; ETH by
 * parameter; one shared group (identical bytes for the same eventSeq on two connections);
 * heartbeats; refusals before any stream opens (400 for a malformed underlying or an unknown
 * parameter, 404 for an unknown underlying); both option streams in the OpenAPI document; and a
 * top of book that only durable orders move (an order whose journal batch is held is not shown).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { post } from '../support/clob-http.ts';
import { call, holdJournal, waitFor, type TestService } from '../support/harness.ts';
import {
  boardWithMarks, dvolExpiries, instruments, optionsService, optionTraders, quoteSurface,
} from './options-support.ts';
import { assertSequence, rawRead, stopService, StreamClient, type Json, type Message } from './support.ts';

let ts: TestService;
let url: string;
let quoted: string[];

const DECIMAL = /^-?\d+(\.\d+)?$/;
const streamUrl = (q = '') => `${url}/markets/board/stream${q}`;

before(async () => {
  ts = await optionsService();
  url = ts.url;
  const list = await instruments(url);
  const [near, far] = dvolExpiries(list);
  const [a, b] = await optionTraders(url);
  quoted = [
    ...(await quoteSurface(url, list, near, [a!, b!])),
    ...(await quoteSurface(url, list, far, [a!, b!])),
  ];
  const board = await boardWithMarks(url, quoted);
  assert.equal(typeof board.volatilityIndex.dvol, 'string', JSON.stringify(board.volatilityIndex));
});
after(async () => {
  await stopService(ts);
});

/** A board client recording when each message arrived. */
function boardClient(q = ''): { client: StreamClient; arrivals: number[] } {
  const client = new StreamClient(streamUrl(q), {}, ['message', 'error']);
  const arrivals: number[] = [];
  client.es.addEventListener('message', () => arrivals.push(Date.now()));
  return { client, arrivals };
}

const rowKey = (o: Json) => [o.id, o.type, o.strike, o.expiry].join('|');

describe('GET /markets/board/stream', () => {
  test('data-only messages with the envelope, id = eventSeq, heartbeats', async () => {
    const twoMessages = (t: string) => t.split('\ndata: ').length > 2 && t.includes(':heartbeat');
    const raw = await rawRead(streamUrl(), {}, twoMessages, 5000);
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'text/event-stream');
    assert.equal(raw.headers.get('x-api-version'), '1');
    assert.match(raw.text, /^retry: \d+\n\nid: \d+\ndata: \{"eventId":/);
    assert.ok(!raw.text.includes('event:'), 'no named events');
    assert.ok(raw.text.includes('\n\n:heartbeat\n\n'));
    const first = JSON.parse(raw.text.split('\ndata: ')[1]!.split('\n')[0]!);
    const envelope = ['eventId', 'eventType', 'eventSeq', 'engineTs', 'sourceTs', 'payload'];
    assert.deepEqual(Object.keys(first), envelope);
    assert.equal(first.eventType, 'OptionsBoardSnapshot');
  });

  test('about one message a second, eventSeq strictly increasing', async () => {
    const { client, arrivals } = boardClient();
    const opened = Date.now();
    try {
      await client.next((m) => m.event === 'message');
      assert.ok(arrivals[0]! - opened < 1500, 'the first message comes on connect');
      await client.next((m) => m.event === 'message' && client.messages.length >= 4, 8000);
      assertSequence(client.messages);
      for (const m of client.messages) assert.equal(m.data.eventType, 'OptionsBoardSnapshot');
      const gaps = arrivals.slice(2).map((t, i) => t - arrivals[i + 1]!);
      for (const gap of gaps) assert.ok(gap > 500 && gap < 2000, `gap ${gap} ms in ${gaps.join(', ')}`);
      const seqs = client.messages.map((m) => m.data.eventSeq);
      assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), 'gap-free');
    } finally {
      client.close();
    }
  });

  test('the payload is the GET /markets/board snapshot with the volatility-index block', async () => {
    const { client } = boardClient();
    try {
      const m = await client.next((x) => x.event === 'message');
      const rest = (await call(url, '/markets/board')).body;
      const p = m.data.payload;
      assert.deepEqual(Object.keys(p), Object.keys(rest));
      assert.equal(p.underlyingSymbol, 'BTC');
      assert.equal(p.underlyingPrice, '100000');
      assert.deepEqual(p.expiries, rest.expiries);
      assert.deepEqual(Object.keys(p.expiryForwards), Object.keys(rest.expiryForwards));
      for (const [expiry, f] of Object.entries<Json>(p.expiryForwards)) {
        assert.deepEqual(Object.keys(f), Object.keys(rest.expiryForwards[expiry]));
        assert.equal(f.futuresMarketId, rest.expiryForwards[expiry].futuresMarketId);
      }
      assert.deepEqual(p.options.map(rowKey), rest.options.map(rowKey));
      assert.deepEqual(Object.keys(p.options[0]), Object.keys(rest.options[0]));
      // the books did not move: top of book is the same row by row
      const tops = (board: Json) => board.options.map((o: Json) => [o.bid, o.ask]);
      assert.deepEqual(tops(p), tops(rest));
      for (const id of quoted) {
        const row = p.options.find((o: Json) => o.id === id);
        assert.match(row.mark, DECIMAL, id);
        assert.match(row.iv, DECIMAL, id);
        assert.match(row.bid, DECIMAL, id);
      }
      const block = p.volatilityIndex;
      assert.deepEqual(Object.keys(block).sort(), ['computedAt', 'dvol', 'tenorDays', 'underlying']);
      assert.equal(block.underlying, 'BTC');
      assert.equal(block.tenorDays, 30);
      assert.match(block.dvol, DECIMAL);
      assert.match(block.computedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.deepEqual(Object.keys(rest.volatilityIndex).sort(), Object.keys(block).sort());
      // sourceTs is the index's source time (the admin push), not the engine's clock
      assert.ok(m.data.sourceTs <= m.data.engineTs);
      assert.ok(m.data.engineTs - Date.parse(p.volatilityIndex.computedAt) < 5000);
    } finally {
      client.close();
    }
  });

  test('the top of book it shows is durable: an order whose batch is still being written is not on it', async () => {
    const list = await instruments(url);
    const inst = list.find((i) => i.type === 'call' && !quoted.includes(i.id))!;
    const [trader] = await optionTraders(url, 1);
    const { client } = boardClient();
    const bidOf = (m: Message) => (m.data.payload.options as Json[]).find((o) => o.id === inst.id)?.bid;
    const journal = holdJournal(ts, 'clob.place');
    try {
      await client.next(() => true);
      const placing = post(url, trader!, '/options/orders', { marketId: inst.id, side: 'buy', quantity: '1', price: '1234.5' });
      await waitFor(() => journal.held() === 1);
      const from = client.messages.length;
      await waitFor(() => client.messages.length >= from + 2, 5000);
      // Before: the board stream read the core's live book and showed bid 1234.5 on these frames,
      // an order a crash could still take back (GET /markets/board waits for durability).
      assert.deepEqual(client.messages.slice(from).map(bidOf).filter((b) => b !== null), [], 'not shown before durable');
      journal.releaseAll();
      assert.equal((await placing).status, 201);
      await client.next((m) => bidOf(m) === '1234.5', 5000, client.messages.length);
    } finally {
      journal.releaseAll();
      client.close();
    }
  });

  test('one group per underlying: two connections get the same bytes; ETH by parameter', async () => {
    const one = boardClient();
    const two = boardClient('?underlying=BTC');
    const eth = boardClient('?underlying=ETH');
    try {
      await one.client.next((m) => m.event === 'message');
      await two.client.next((m) => m.event === 'message');
      const seq = Math.max(one.client.messages[0]!.data.eventSeq, two.client.messages[0]!.data.eventSeq) + 1;
      const at = (c: StreamClient) => c.next((m: Message) => m.data.eventSeq === seq, 4000);
      const [a, b] = await Promise.all([at(one.client), at(two.client)]);
      assert.deepEqual(a.data, b.data);
      const e = await eth.client.next((m) => m.event === 'message');
      assert.equal(e.data.payload.underlyingSymbol, 'ETH');
      assert.equal(e.data.payload.volatilityIndex.underlying, 'ETH');
      assert.ok(e.data.payload.options.every((o: Json) => o.id.startsWith('ETH-')));
    } finally {
      for (const c of [one, two, eth]) c.client.close();
    }
  });

  test('a malformed or unknown underlying is refused before any stream opens', async () => {
    await new Promise((r) => setTimeout(r, 100));
    const before = ts.service.streams.stats().opened;
    for (const [q, status, code] of [
      ['?underlying=DOGE', 404, 'NOT_FOUND'],
      ['?underlying=btc', 400, 'VALIDATION_ERROR'],
      ['?underlying=', 400, 'VALIDATION_ERROR'],
      ['?underlying=BTC&depth=5', 400, 'VALIDATION_ERROR'],
    ] as const) {
      const r = await call(url, `/markets/board/stream${q}`);
      assert.equal(r.status, status, q);
      assert.equal(r.body.error, code, q);
      assert.equal(typeof r.body.message, 'string');
    }
    assert.equal(ts.service.streams.stats().opened, before);
  });

  test('both option streams are documented in OpenAPI under the streams tag', async () => {
    const doc = (await call(url, '/openapi.json')).body;
    const board = doc.paths['/markets/board/stream'].get;
    assert.deepEqual(board.tags, ['streams']);
    assert.deepEqual(board.parameters.map((p: Json) => p.name), ['underlying', 'resume']);
    const resume = board.parameters.find((p: Json) => p.name === 'resume').schema;
    assert.deepEqual([resume.type, resume.default], ['boolean', false]);
    const payload = board.responses['200'].content['text/event-stream'].schema.properties.payload;
    assert.ok('volatilityIndex' in payload.properties);
    const events = doc.paths['/options/stream/events'].get;
    assert.deepEqual(events.tags, ['streams']);
    const param = (name: string) => events.parameters.find((p: Json) => p.name === name).schema;
    assert.deepEqual([param('depth').maximum, param('depth').default], [250, 25]);
    const interval = param('intervalMs');
    assert.deepEqual([interval.minimum, interval.maximum, interval.default], [50, 2000, 100]);
    assert.equal(param('includeReference').type, 'boolean');
    assert.ok(events.responses['401'] && events.responses['404']);
  });
});
