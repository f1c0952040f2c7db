/**
 * The spot pairs on the linear read surface (contract "Market data"): they are listed in
 * /perps/markets, so `GET /perps/orderbook/{id}`, `/perps/market-stats` and `/perps/ohlc` serve them
 * too. Over real HTTP (test/support/clob-http.ts: push index feed, SIWE traders funded through the
 * simulated chain, BTC granted by the treasury): the perps book route returns the same levels as
 * the CLOB route, stats carry the index as mark and index, no open interest and no funding, and
 * after two trades the exact last, high, low, 24-hour volume and change; candles come from the same
 * fills. Option ids stay 404 on these routes (they are not in the market list), and a stale index
 * leaves a spot pair without a mark.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clobService, clobTraders, ok, optionId, post } from '../support/clob-http.ts';
import { admin, call, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';

let svc: TestService;
let base: string;
let buyer: Trader;
let seller: Trader;

before(async () => {
  svc = await clobService();
  base = svc.url;
  [buyer, seller] = (await clobTraders(base, 2, { spot: '60000', btc: '2' })) as [Trader, Trader];
});

after(async () => {
  await svc.close();
});

const order = async (t: Trader, side: 'buy' | 'sell', quantity: string, price: string) => {
  const body = { marketId: 'BTC-USDC', side, quantity, price, type: 'limit' };
  return ok(await post(base, t, '/orders', body), 201);
};
const stats = (id: string) => call(base, `/perps/market-stats?marketId=${encodeURIComponent(id)}`);

describe('spot pairs on /perps/orderbook', () => {
  test('an empty spot book, then the same levels as /orderbook/{id}, with depth', async () => {
    assert.deepEqual(ok(await call(base, '/perps/orderbook/BTC-USDC')), { bids: [], asks: [] });
    await order(seller, 'sell', '0.5', '100100');
    await order(seller, 'sell', '0.2', '100200');
    await order(buyer, 'buy', '0.1', '99900');
    const perps = ok(await call(base, '/perps/orderbook/BTC-USDC'));
    assert.deepEqual(perps, { bids: [['99900', '0.1']], asks: [['100100', '0.5'], ['100200', '0.2']] });
    assert.deepEqual(perps, ok(await call(base, '/orderbook/BTC-USDC')));
    const top = ok(await call(base, '/perps/orderbook/BTC-USDC?depth=1'));
    assert.deepEqual(top, { bids: [['99900', '0.1']], asks: [['100100', '0.5']] });
  });

  test('perp books are unchanged; options and unknown ids are 404', async () => {
    const perp = ok(await call(base, '/perps/orderbook/BTC-PERP'));
    assert.ok(Array.isArray(perp.bids) && Array.isArray(perp.asks));
    const option = await optionId(base, 'BTC', 'call', '100000');
    for (const id of [option, 'DOGE-USDC']) {
      const r = await call(base, `/perps/orderbook/${id}`);
      assert.equal(r.status, 404, JSON.stringify(r.body));
      assert.equal(r.body.error, 'NOT_FOUND');
    }
  });
});

describe('spot pairs on /perps/market-stats and /perps/ohlc', () => {
  test('before a trade: marked at the index, no last, no volume, no open interest, no funding', async () => {
    const s = ok(await stats('ETH-USDC'));
    assert.deepEqual(s, {
      marketId: 'ETH-USDC',
      baseSymbol: 'ETH',
      quoteSymbol: 'USDC',
      markPrice: '3000',
      indexPrice: '3000',
      lastPrice: null,
      change24hPct: null,
      high24h: null,
      low24h: null,
      volume24hUsd: '0',
      volume24h: '0',
      openInterest: '0',
      openInterestUsd: '0',
      funding1hPct: null,
      fundingRate8hPct: null,
      nextFundingAt: null,
    });
    assert.deepEqual(ok(await call(base, '/perps/ohlc?symbol=ETH-USDC')), { s: 'no_data' });
  });

  test('after two trades: exact last, high, low, volume, change; candles from the same fills', async () => {
    await order(buyer, 'buy', '0.3', '100100'); // lifts 0.3 of the resting 100100 ask
    await order(seller, 'sell', '0.1', '99900'); // hits the resting 99900 bid
    const s = ok(await stats('BTC-USDC'));
    assert.equal(s.markPrice, '100000');
    assert.equal(s.indexPrice, '100000');
    assert.equal(s.lastPrice, '99900');
    assert.equal(s.high24h, '100100');
    assert.equal(s.low24h, '99900');
    assert.equal(s.volume24hUsd, '40020'); // 0.3 x 100100 + 0.1 x 99900
    assert.equal(s.volume24h, '0.4');
    assert.equal(s.change24hPct, '-0.20'); // (99900 - 100100) / 100100 x 100 = -0.1998
    assert.equal(s.openInterest, '0');
    assert.equal(s.funding1hPct, null);

    // Minute bars (the two trades may straddle a minute boundary): first open, last close, extremes, volume.
    const c = ok(await call(base, '/perps/ohlc?symbol=BTC-USDC&resolution=1'));
    assert.equal(c.s, 'ok');
    assert.equal(c.o[0], '100100');
    assert.equal(c.c.at(-1), '99900');
    assert.ok(c.h.includes('100100') && c.l.includes('99900'));
    const volume = c.v.reduce((sum: number, v: string) => sum + Number(v), 0);
    assert.equal(volume.toFixed(5), '0.40000');
    for (const list of [c.o, c.h, c.l, c.c, c.v]) {
      for (const v of list) assert.match(v, /^[0-9]+(\.[0-9]+)?$/);
    }
  });

  test('option ids and unknown symbols stay 404 on stats and candles', async () => {
    const option = await optionId(base, 'BTC', 'put', '100000');
    for (const path of [`/perps/market-stats?marketId=${option}`, `/perps/ohlc?symbol=${option}`]) {
      const r = await call(base, path);
      assert.equal(r.status, 404, JSON.stringify(r.body));
    }
    assert.equal((await stats('DOGE-USDC')).status, 404);
  });

  test('a stale index leaves a spot pair without a mark or index', async () => {
    const stale = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: '200' });
    try {
      const body = { underlying: 'BTC', price: '100000' };
      const r = await call(stale.url, '/admin/index', { body, headers: admin });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const path = '/perps/market-stats?marketId=BTC-USDC';
      await waitFor(async () => (await call(stale.url, path)).body.markPrice === null);
      const s = ok(await call(stale.url, '/perps/market-stats?marketId=BTC-USDC'));
      assert.equal(s.indexPrice, null);
      assert.equal(s.openInterestUsd, '0');
    } finally {
      await stale.close();
    }
  });
});
