/**
 * HTTP tests of the candle and market-stats endpoints against the real service (harness: loopback
 * port, temporary SQLite, real SIWE keys). The index comes from the push feed (POST /admin/index)
 * and stays fresh for an hour; two funded accounts trade BTC-PERP through POST /perps/orders.
 *
 * Covers: stats before any trade (nulls, zeros, fresh mark and index), trades and the stats after
 * them (last, high, low, exact volume, change24hPct, open interest at the mark), the UDF shape at
 * every resolution, countback, `no_data` with and without `nextTime`, the range rules (from > to,
 * exactly 90 days, 91 days -> RANGE_TOO_LARGE), bad and missing parameters, unknown markets (404),
 * the documented OpenAPI union, and a null mark and index once the index is stale (a second
 * service with INDEX_MAX_AGE_MS=200). changePct rounding is checked directly.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fx, formatDecimal, mul } from '../../src/core/money.ts';
import { changePct } from '../../src/gateway/routes/market-data.ts';
import {
  admin,
  call,
  fund,
  signIn,
  startService,
  type TestService,
  type Trader,
} from '../support/harness.ts';

const RESOLUTION_SEC: Record<string, number> = {
  '1': 60, '5': 300, '15': 900, '30': 1800, '60': 3600, '240': 14_400, D: 86_400,
};
const DAY = 86_400;

let ts: TestService;
let url: string;
let maker: Trader;
let taker: Trader;

async function publishIndex(base: string, price: string): Promise<void> {
  const r = await call(base, '/admin/index', { body: { underlying: 'BTC', price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function trader(): Promise<Trader> {
  const t = await signIn(url);
  await fund(url, t, '100000');
  const body = { from: 'wallet', to: 'perps', amount: '100000' };
  const r = await call(url, '/wallet/transfer', { token: t.token, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return t;
}

async function order(t: Trader, side: 'buy' | 'sell', quantity: string, price: string): Promise<void> {
  const r = await call(url, '/perps/orders', {
    token: t.token,
    body: { marketId: 'BTC-PERP', side, quantity, price, type: 'limit' },
  });
  assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
}

/** One trade of `quantity` at `price`: the maker rests a sell, the taker lifts it. */
async function trade(quantity: string, price: string): Promise<void> {
  await order(maker, 'sell', quantity, price);
  await order(taker, 'buy', quantity, price);
}

const ohlc = (query: string) => call(url, `/perps/ohlc?${query}`);
const stats = (marketId: string) => call(url, `/perps/market-stats?marketId=${encodeURIComponent(marketId)}`);
const nowSec = () => Math.floor(Date.now() / 1000);

before(async () => {
  ts = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: '3600000', RATE_LIMIT_ANONYMOUS: '100000' });
  url = ts.url;
  await publishIndex(url, '100000');
  [maker, taker] = await Promise.all([trader(), trader()]);
});
after(async () => {
  await ts.close();
});

describe('market stats before any trade', () => {
  test('fresh mark and index; no last, change, high or low; zero volume and open interest', async () => {
    const r = await stats('BTC-PERP');
    assert.equal(r.status, 200);
    const { markPrice, nextFundingAt, ...rest } = r.body;
    assert.equal(typeof markPrice, 'string');
    // The next hourly funding time, within the hour ahead.
    const next = Date.parse(nextFundingAt);
    assert.ok(next > Date.now() && next <= Date.now() + 3_600_000 && next % 3_600_000 === 0, nextFundingAt);
    assert.deepEqual(rest, {
      marketId: 'BTC-PERP',
      baseSymbol: 'BTC',
      quoteSymbol: 'USDC',
      indexPrice: '100000',
      lastPrice: null,
      change24hPct: null,
      high24h: null,
      low24h: null,
      volume24hUsd: '0',
      volume24h: '0',
      openInterest: '0',
      openInterestUsd: '0',
      // No premium samples yet: the rate is the interest component, 0.01 % per 8 h.
      funding1hPct: '0.00125',
      fundingRate8hPct: '0.01',
    });
  });

  test('no candles yet: no_data without nextTime', async () => {
    const r = await ohlc('symbol=BTC-PERP');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { s: 'no_data' });
  });
});

describe('after trades', () => {
  before(async () => {
    await trade('0.01', '100000');
    await trade('0.0003', '99999.9');
    await trade('0.02', '100500');
  });

  test('stats: last, high, low, exact 24 h volume, change and open interest', async () => {
    const r = await stats('BTC-PERP');
    assert.equal(r.status, 200);
    const b = r.body;
    assert.equal(b.lastPrice, '100500');
    assert.equal(b.high24h, '100500');
    assert.equal(b.low24h, '99999.9');
    // 1000 + 29.99997 + 2010
    assert.equal(b.volume24hUsd, '3039.99997');
    assert.equal(b.volume24h, '0.0303'); // base units: 0.01 + 0.0003 + 0.02
    assert.equal(b.change24hPct, '0.50');
    assert.equal(b.openInterest, '0.0303');
    assert.equal(typeof b.markPrice, 'string');
    assert.equal(b.openInterestUsd, formatDecimal(mul(fx('0.0303'), fx(b.markPrice), 'halfUp')));
    assert.equal(b.indexPrice, '100000');
  });

  test('every resolution: UDF arrays, aligned ascending bar times, OHLC and exact volume', async () => {
    for (const resolution of Object.keys(RESOLUTION_SEC)) {
      const r = await ohlc(`symbol=BTC-PERP&resolution=${resolution}`);
      assert.equal(r.status, 200, resolution);
      const { s, t, o, h, l, c, v } = r.body;
      assert.equal(s, 'ok');
      assert.deepEqual(Object.keys(r.body).sort(), ['c', 'h', 'l', 'o', 's', 't', 'v']);
      const size = RESOLUTION_SEC[resolution] as number;
      assert.ok(t.length >= 1 && t.length <= 3, `${resolution}: ${t.length} bars`);
      for (const arr of [o, h, l, c, v]) {
        assert.equal(arr.length, t.length);
        for (const x of arr) assert.match(x, /^[0-9]+(\.[0-9]+)?$/);
      }
      t.forEach((sec: number, i: number) => {
        assert.ok(Number.isInteger(sec) && sec % size === 0, `${resolution}: ${sec} not aligned`);
        if (i > 0) assert.ok(sec > t[i - 1]);
      });
      assert.equal(o[0], '100000');
      assert.equal(c[c.length - 1], '100500');
      const highs = (h as string[]).map(fx);
      const lows = (l as string[]).map(fx);
      assert.equal(formatDecimal(highs.reduce((m, x) => (x > m ? x : m))), '100500');
      assert.equal(formatDecimal(lows.reduce((m, x) => (x < m ? x : m))), '99999.9');
      assert.equal(formatDecimal((v as string[]).reduce((sum, x) => sum + fx(x), 0n)), '0.0303');
    }
  });

  test('default resolution is 15 minutes; symbol lookup by id', async () => {
    const r = await ohlc('symbol=BTC-PERP');
    assert.equal(r.body.s, 'ok');
    for (const sec of r.body.t) assert.equal(sec % 900, 0);
  });

  test('countback returns the newest bars', async () => {
    const r = await ohlc('symbol=BTC-PERP&resolution=D&countback=1');
    assert.equal(r.status, 200);
    assert.equal(r.body.t.length, 1);
    assert.equal(r.body.t[0], Math.floor(nowSec() / DAY) * DAY);
  });

  test('countback takes precedence over a from beyond 90 days (a TradingView daily chart asks for 300+ days)', async () => {
    const to = nowSec();
    const r = await ohlc(`symbol=BTC-PERP&resolution=D&from=${to - 400 * DAY}&to=${to}&countback=300`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.s, 'ok');
    assert.equal(r.body.t[r.body.t.length - 1], Math.floor(to / DAY) * DAY);
  });

  test('no_data after the last trade carries nextTime = the newest bar before from', async () => {
    const ok = await ohlc('symbol=BTC-PERP&resolution=60');
    const newest = ok.body.t[ok.body.t.length - 1];
    const from = nowSec() + 7200;
    const r = await ohlc(`symbol=BTC-PERP&resolution=60&from=${from}&to=${from + 3600}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { s: 'no_data', nextTime: newest });
  });

  test('a market without trades answers no_data without nextTime', async () => {
    const r = await ohlc('symbol=ETH-PERP&resolution=1');
    assert.deepEqual(r.body, { s: 'no_data' });
  });
});

describe('ohlc validation', () => {
  test('from > to is 400 VALIDATION_ERROR', async () => {
    const r = await ohlc('symbol=BTC-PERP&from=1000&to=999');
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'VALIDATION_ERROR');
  });

  test('exactly 90 days is accepted; 91 days is 400 RANGE_TOO_LARGE', async () => {
    const to = nowSec();
    const ok = await ohlc(`symbol=BTC-PERP&resolution=D&from=${to - 90 * DAY}&to=${to}`);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.s, 'ok');
    const r = await ohlc(`symbol=BTC-PERP&resolution=D&from=${to - 91 * DAY}&to=${to}`);
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'RANGE_TOO_LARGE');
    assert.equal(typeof r.body.message, 'string');
  });

  test('bad resolution, bad times, unknown parameters and a missing symbol are 400', async () => {
    for (const query of [
      'symbol=BTC-PERP&resolution=7',
      'symbol=BTC-PERP&resolution=1D',
      'symbol=BTC-PERP&from=abc',
      'symbol=BTC-PERP&to=1.5',
      'symbol=BTC-PERP&to=1e9',
      'symbol=BTC-PERP&to=0x10',
      'symbol=BTC-PERP&to=',
      'symbol=BTC-PERP&from=1&from=2',
      'symbol=BTC-PERP&from=-5',
      'symbol=BTC-PERP&countback=0',
      'symbol=BTC-PERP&limit=5',
      'resolution=15',
      'symbol=',
    ]) {
      const r = await ohlc(query);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error, 'VALIDATION_ERROR', query);
    }
  });

  test('unknown symbol is 404 NOT_FOUND in the error envelope', async () => {
    const r = await ohlc('symbol=DOGE-PERP');
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'NOT_FOUND');
    assert.match(r.body.message, /DOGE-PERP/);
  });
});

describe('market stats validation', () => {
  test('unknown market is 404; missing marketId is 400', async () => {
    const unknown = await stats('DOGE-PERP');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'NOT_FOUND');
    const missing = await call(url, '/perps/market-stats');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'VALIDATION_ERROR');
  });

  test('change24hPct rounds half up to 2 decimals and never shows -0', () => {
    assert.equal(changePct(fx('100000'), fx('100500')), '0.50');
    assert.equal(changePct(fx('100'), fx('99.995')), '-0.01');
    assert.equal(changePct(fx('100'), fx('100.005')), '0.01');
    assert.equal(changePct(fx('100'), fx('100.0049')), '0.00');
    assert.equal(changePct(fx('100'), fx('99.9999')), '0.00');
    assert.equal(changePct(fx('3'), fx('4')), '33.33');
    assert.equal(changePct(fx('3'), fx('2')), '-33.33');
  });
});

describe('OpenAPI', () => {
  test('documents the UDF union and the stats fields under the market-data tag', async () => {
    const doc = (await call(url, '/openapi.json')).body;
    const get = doc.paths['/perps/ohlc'].get;
    assert.deepEqual(get.tags, ['market-data']);
    const schema = get.responses['200'].content['application/json'].schema;
    type Variant = { properties: { s: { enum: string[] } } };
    const variants = schema.anyOf.map((x: Variant) => x.properties.s.enum[0]);
    assert.deepEqual(variants, ['ok', 'no_data', 'error']);
    assert.ok(get.responses['404'] && get.responses['400']);
    const statsGet = doc.paths['/perps/market-stats'].get;
    const statsSchema = statsGet.responses['200'].content['application/json'].schema;
    const fields = [
      'indexPrice', 'lastPrice', 'high24h', 'low24h', 'nextFundingAt', 'fundingRate8hPct', 'funding1hPct', 'volume24h',
    ];
    for (const field of fields) {
      assert.ok(field in statsSchema.properties, field);
    }
  });
});

describe('stale index', () => {
  let stale: TestService;
  before(async () => {
    stale = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: '200' });
  });
  after(async () => {
    await stale.close();
  });

  test('mark and index are null once the index is older than INDEX_MAX_AGE_MS', async () => {
    await publishIndex(stale.url, '100000');
    await new Promise((r) => setTimeout(r, 300));
    const r = await call(stale.url, '/perps/market-stats?marketId=BTC-PERP');
    assert.equal(r.status, 200);
    assert.equal(r.body.markPrice, null);
    assert.equal(r.body.indexPrice, null);
    assert.equal(r.body.openInterestUsd, '0');
    assert.equal(r.body.volume24hUsd, '0');
  });
});
