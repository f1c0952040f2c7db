/**
 * GET /perps/ohlc?price=mark|index over HTTP on the real service with the push feed and a clock
 * the test moves (no trades at all): index values published through POST /admin/index within a
 * minute come back as that minute's index candle (first, highest, lowest, last), the marks the
 * service served after each publish as its mark candle, a later minute as the next bar; a spot
 * pair's mark and index are its underlying's index; an underlying without an index has no bars;
 * the default (`price` omitted) is still the trade candles (no_data here); a bad `price` is 400.
 * /udf/history takes the same `price` (its `to` excluded; an option's index is its underlying's,
 * an option has no mark bars).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, call, startService, type TestService } from '../support/harness.ts';

/** 2026-11-27T12:00:00Z: the minute the test publishes in. */
const M0 = Date.UTC(2026, 10, 27, 12, 0, 0);
let now = M0 + 5_000;
let ts: TestService;
let url: string;

interface Bars {
  s: string;
  t: number[];
  o: string[];
  h: string[];
  l: string[];
  c: string[];
  v: string[];
}

const ohlc = async (query: string): Promise<Bars> => {
  const r = await call(url, `/perps/ohlc?${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};

/** Publishes the BTC index at `at` and returns the BTC-PERP mark the service then serves. */
async function publish(at: number, price: string): Promise<string> {
  now = at;
  const r = await call(url, '/admin/index', { body: { underlying: 'BTC', price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const stats = await call(url, '/perps/market-stats?marketId=BTC-PERP');
  assert.equal(stats.body.indexPrice, price);
  assert.ok(stats.body.markPrice !== null);
  return stats.body.markPrice;
}

/** One bar as [o, h, l, c] from a sequence of values, by exact decimal comparison (as numbers: test prices are small). */
function expected(values: string[]): [string, string, string, string] {
  const sorted = [...values].sort((a, b) => Number(a) - Number(b));
  return [values[0]!, sorted.at(-1)!, sorted[0]!, values.at(-1)!];
}

const bar = (b: Bars, i: number) => [b.o[i], b.h[i], b.l[i], b.c[i]];
const sec = (ms: number) => Math.floor(ms / 1000);

const minute0 = ['100000', '100500', '99500', '100200'];
const marks: string[] = [];

before(async () => {
  ts = await startService(
    { FEED: 'push', INDEX_MAX_AGE_MS: '3600000', TICK_MS: '60000', RATE_LIMIT_ANONYMOUS: '1000000' },
    undefined,
    { clock: { now: () => now } },
  );
  url = ts.url;
  for (const [i, price] of minute0.entries()) marks.push(await publish(M0 + 5_000 + i * 10_000, price));
  marks.push(await publish(M0 + 65_000, '101000'));
});
after(async () => {
  await ts?.close();
});

test('index and mark candles hold the values of each minute', async () => {
  const range = `symbol=BTC-PERP&resolution=1&from=${sec(M0)}&to=${sec(M0) + 60}`;
  const index = await ohlc(`${range}&price=index`);
  assert.equal(index.s, 'ok');
  assert.deepEqual(index.t, [sec(M0), sec(M0) + 60]);
  assert.deepEqual(bar(index, 0), expected(minute0));
  assert.deepEqual(bar(index, 1), expected(['101000']));
  assert.deepEqual(index.v, ['0', '0'], 'no volume on a price series');

  const mark = await ohlc(`${range}&price=mark`);
  assert.deepEqual(mark.t, index.t);
  assert.deepEqual(bar(mark, 0), expected(marks.slice(0, 4)));
  assert.deepEqual(bar(mark, 1), expected(marks.slice(4)));

  const five = await ohlc(`symbol=BTC-PERP&resolution=5&from=${sec(M0)}&to=${sec(M0)}&price=index`);
  assert.deepEqual(bar(five, 0), expected([...minute0, '101000']), 'coarser bars aggregate the minutes');
  const newest = await ohlc(`symbol=BTC-PERP&resolution=1&to=${sec(M0) + 60}&countback=1&price=index`);
  assert.deepEqual(newest.t, [sec(M0) + 60]);
});

test('a spot pair charts its underlying index; no index, no bars', async () => {
  const range = `resolution=1&from=${sec(M0)}&to=${sec(M0) + 60}`;
  const perp = await ohlc(`symbol=BTC-PERP&${range}&price=index`);
  for (const price of ['index', 'mark']) {
    const spot = await ohlc(`symbol=BTC-USDC&${range}&price=${price}`);
    assert.deepEqual(spot, perp, price);
  }
  assert.deepEqual(await ohlc(`symbol=ETH-PERP&${range}&price=mark`), { s: 'no_data' });
  const later = await ohlc(`symbol=BTC-PERP&resolution=1&from=${sec(M0) + 600}&to=${sec(M0) + 900}&price=mark`);
  assert.deepEqual(later, { s: 'no_data', nextTime: sec(M0) + 60 });
});

test('the default is still the trade candles; a bad price is a 400', async () => {
  const range = `symbol=BTC-PERP&resolution=1&from=${sec(M0)}&to=${sec(M0) + 60}`;
  assert.deepEqual(await ohlc(range), { s: 'no_data' }, 'no trades');
  assert.deepEqual(await ohlc(`${range}&price=trade`), { s: 'no_data' });
  for (const query of [`${range}&price=last`, `${range}&price=`, `${range}&price=mark&price=index`]) {
    const r = await call(url, `/perps/ohlc?${query}`);
    assert.equal(r.status, 400, `${query}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error, 'VALIDATION_ERROR', query);
    assert.equal(typeof r.body.message, 'string');
  }
  const far = await call(url, `/perps/ohlc?symbol=BTC-USDC&from=0&to=8000000&price=index`);
  assert.equal(far.status, 400);
  assert.equal(far.body.error, 'RANGE_TOO_LARGE');
});

test('/udf/history charts the mark and index too', async () => {
  const udf = async (query: string) => {
    const r = await call(url, `/udf/history?resolution=1&from=${sec(M0)}&to=${sec(M0) + 120}&${query}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const range = `resolution=1&from=${sec(M0)}&to=${sec(M0) + 60}`;
  assert.deepEqual(await udf('symbol=BTC-PERP&price=mark'), await ohlc(`symbol=BTC-PERP&${range}&price=mark`));
  assert.deepEqual(await udf('symbol=BTC-USDC&price=index'), await ohlc(`symbol=BTC-PERP&${range}&price=index`));
  assert.deepEqual(await udf('symbol=BTC-PERP'), { s: 'no_data' }, 'no trades: the default is unchanged');
  now = M0 + 600_000; // a clock tick later (outside the range read) lists the options around the index
  assert.ok((await ts.service.ctx.sequencer.submit({ type: 'clock.tick' })).ok, 'tick refused');
  const markets = (await call(url, '/udf/search?query=BTC&type=option&limit=1')).body as { ticker: string }[];
  const option = markets[0]?.ticker;
  assert.ok(option !== undefined, 'an option is listed');
  assert.deepEqual(await udf(`symbol=${option}&price=index`), await ohlc(`symbol=BTC-PERP&${range}&price=index`));
  assert.deepEqual(await udf(`symbol=${option}&price=mark`), { s: 'no_data' });
  const bad = await call(url, `/udf/history?symbol=BTC-PERP&resolution=1&price=last`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'VALIDATION_ERROR');
});
