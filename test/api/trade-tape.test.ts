/**
 * The public trade tape over HTTP against the real service (harness: loopback port, temporary
 * SQLite, SIWE traders funded through the simulated chain, BTC granted by the treasury, the push
 * index feed): `GET /markets/{marketId}/trades` for a perpetual, a dated future, a spot pair and an
 * option, and the market stats fed by the same fills.
 *
 * Covers: newest first with the exact trade fields (taker side, no account data), the trade id being
 * the taker's own fill id, trade ids increasing across markets, paging with `limit` and the
 * `before` cursor down to an empty page, read-your-writes (a trade is on the tape as soon as its
 * order is acknowledged), 404 for an unknown id and 400 for bad parameters (nothing changes), the
 * stats' lastPrice (the tape's newest) and volume24h (base units, exact), the tape and the stats
 * surviving a restart on the same data folder, and the OpenAPI document.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLOB_ENV, ok, optionId, refused } from '../support/clob-http.ts';
import { admin, call, fund, signIn, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'trade-tape-'));
let svc: TestService;
let base: string;
let alice: Trader;
let bob: Trader;
let future: string;
let option: string;

interface TapeTrade { tradeId: string; marketId: string; price: string; quantity: string; takerSide: string; createdAt: string }

async function start(): Promise<void> {
  svc = await startService(CLOB_ENV, dir);
  base = svc.url;
}

/** A trader with USDC in the perps, spot and options buckets and 5 BTC of spot inventory. */
async function trader(): Promise<Trader> {
  const t = await signIn(base);
  await fund(base, t, '300000', 15_000);
  for (const to of ['perps', 'spot', 'options']) {
    ok(await call(base, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to, amount: '100000' } }));
  }
  ok(await call(base, '/admin/treasury/grant', { headers: admin, body: { walletAddress: t.address, asset: 'BTC', amount: '5' } }));
  return t;
}

/** An order on the venue of its market: /perps/orders for perps and futures, /orders otherwise. */
async function order(t: Trader, marketId: string, side: 'buy' | 'sell', quantity: string, price: string) {
  const path = marketId === 'BTC-PERP' || marketId === future ? '/perps/orders' : '/orders';
  return ok(await call(base, path, { token: t.token, body: { marketId, side, quantity, price, type: 'limit' } }), 201);
}

/** One trade: `maker` rests, `taker` takes it in full; returns the taker's fill. */
async function trade(marketId: string, takerSide: 'buy' | 'sell', quantity: string, price: string, maker = alice, taker = bob) {
  await order(maker, marketId, takerSide === 'buy' ? 'sell' : 'buy', quantity, price);
  const taken = await order(taker, marketId, takerSide, quantity, price);
  assert.equal(taken.status, 'filled', JSON.stringify(taken));
  assert.equal(taken.fills.length, 1);
  return taken.fills[0] as { tradeId: string; createdAt: string };
}

const tape = async (marketId: string, query = ''): Promise<TapeTrade[]> =>
  ok(await call(base, `/markets/${encodeURIComponent(marketId)}/trades${query}`));
const stats = async (marketId: string) => ok(await call(base, `/perps/market-stats?marketId=${marketId}`));

before(async () => {
  await start();
  for (const [underlying, price] of [['BTC', '100000'], ['ETH', '3000']]) {
    ok(await call(base, '/admin/index', { body: { underlying, price }, headers: admin }));
  }
  await waitFor(async () => (await call(base, '/options/instruments?underlying=BTC')).body.length > 0, 10_000, 50);
  const markets = ok(await call(base, '/perps/markets')) as { id: string; marketType: string; underlying: string }[];
  future = markets.find((m) => m.marketType === 'future' && m.underlying === 'BTC')!.id;
  option = await optionId(base, 'BTC', 'call', '100000');
  [alice, bob] = await Promise.all([trader(), trader()]);
});
after(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the tape of each kind of market', () => {
  const fills: Record<string, { tradeId: string; createdAt: string }> = {};

  test('an empty tape before the first trade; an unknown id is 404', async () => {
    assert.deepEqual(await tape('BTC-PERP'), []);
    assert.deepEqual(await tape(option), []);
    refused(await call(base, '/markets/DOGE-PERP/trades'), 404, 'NOT_FOUND');
  });

  test('perpetual: newest first, exact fields, the taker\'s own trade id', async () => {
    fills.p1 = await trade('BTC-PERP', 'buy', '0.01', '100000');
    fills.p2 = await trade('BTC-PERP', 'sell', '0.0003', '99999.9');
    fills.p3 = await trade('BTC-PERP', 'buy', '0.02', '100500');
    const rows = await tape('BTC-PERP'); // read right after the acknowledgements: no wait
    assert.deepEqual(rows, [
      { tradeId: fills.p3.tradeId, marketId: 'BTC-PERP', price: '100500', quantity: '0.02', takerSide: 'buy', createdAt: fills.p3.createdAt },
      { tradeId: fills.p2.tradeId, marketId: 'BTC-PERP', price: '99999.9', quantity: '0.0003', takerSide: 'sell', createdAt: fills.p2.createdAt },
      { tradeId: fills.p1.tradeId, marketId: 'BTC-PERP', price: '100000', quantity: '0.01', takerSide: 'buy', createdAt: fills.p1.createdAt },
    ]);
    // the taker's own fill on its private list carries the same id
    const mine = ok(await call(base, '/perps/trades?limit=1', { token: bob.token }));
    assert.equal(mine[0].tradeId, fills.p3.tradeId);
  });

  test('dated future, spot pair and option: one tape path for every engine', async () => {
    fills.f = await trade(future, 'sell', '0.05', '100000');
    fills.s = await trade('BTC-USDC', 'buy', '0.25', '100100');
    fills.o = await trade(option, 'sell', '1', '2000');
    const expected: [string, string, string, string, string][] = [
      [future, fills.f.tradeId, '100000', '0.05', 'sell'],
      ['BTC-USDC', fills.s.tradeId, '100100', '0.25', 'buy'],
      [option, fills.o.tradeId, '2000', '1', 'sell'],
    ];
    for (const [marketId, tradeId, price, quantity, takerSide] of expected) {
      const rows = await tape(marketId);
      assert.equal(rows.length, 1, marketId);
      assert.deepEqual(
        [rows[0]!.tradeId, rows[0]!.marketId, rows[0]!.price, rows[0]!.quantity, rows[0]!.takerSide],
        [tradeId, marketId, price, quantity, takerSide],
      );
      assert.match(rows[0]!.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    // one id space, increasing with time across the markets
    const ids = [fills.p1, fills.p2, fills.p3, fills.f, fills.s, fills.o].map((f) => Number(f!.tradeId));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.equal(new Set(ids).size, ids.length);
  });

  test('paging: limit and the before cursor, down to an empty page', async () => {
    for (let i = 0; i < 4; i++) await trade('BTC-PERP', i % 2 === 0 ? 'sell' : 'buy', '0.001', String(100_000 + i));
    const all = await tape('BTC-PERP', '?limit=500');
    assert.equal(all.length, 7);
    const ids = all.map((t) => Number(t.tradeId));
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first');
    const pages: TapeTrade[][] = [];
    let cursor = '';
    for (;;) {
      const page = await tape('BTC-PERP', `?limit=3${cursor}`);
      if (page.length === 0) break;
      assert.ok(page.length <= 3);
      pages.push(page);
      cursor = `&before=${page.at(-1)!.tradeId}`;
    }
    assert.deepEqual(pages.map((p) => p.length), [3, 3, 1]);
    assert.deepEqual(pages.flat(), all, 'the pages are the whole tape, in order, each trade once');
    assert.deepEqual(await tape('BTC-PERP', `?before=${fills.p1!.tradeId}`), []);
    assert.deepEqual(await tape('BTC-PERP', '?limit=1'), all.slice(0, 1), 'default order and limit');
    assert.equal((await tape('BTC-PERP')).length, 7, 'limit defaults to 100');
  });

  test('bad parameters are 400 with the envelope and change nothing', async () => {
    const before = await tape('BTC-PERP');
    for (const query of ['?limit=0', '?limit=501', '?limit=abc', '?before=0', '?before=1.5', '?before=1e3', '?before=', '?cursor=5', '?limit=-1']) {
      refused(await call(base, `/markets/BTC-PERP/trades${query}`), 400, 'VALIDATION_ERROR');
    }
    const long = 'X'.repeat(41);
    refused(await call(base, `/markets/${long}/trades`), 400, 'VALIDATION_ERROR');
    assert.deepEqual(await tape('BTC-PERP'), before);
  });

  test('market stats: lastPrice is the tape\'s newest, volume24h the base quantity in 24 h', async () => {
    const perp = await stats('BTC-PERP');
    const newest = (await tape('BTC-PERP', '?limit=1'))[0]!;
    assert.equal(perp.lastPrice, newest.price);
    assert.equal(perp.lastPrice, '100003');
    // 0.01 + 0.0003 + 0.02 + 4 x 0.001
    assert.equal(perp.volume24h, '0.0343');
    // 1000 + 29.99997 + 2010 + (100000 + 100001 + 100002 + 100003) x 0.001
    assert.equal(perp.volume24hUsd, '3440.00597');
    const spot = await stats('BTC-USDC');
    assert.deepEqual([spot.lastPrice, spot.volume24h, spot.volume24hUsd], ['100100', '0.25', '25025']);
    const fut = await stats(future);
    assert.deepEqual([fut.lastPrice, fut.volume24h, fut.volume24hUsd], ['100000', '0.05', '5000']);
    const eth = await stats('ETH-PERP');
    assert.deepEqual([eth.lastPrice, eth.volume24h, eth.volume24hUsd], [null, '0', '0']);
  });
});

describe('durable', () => {
  test('the tape and the stats read the same after a restart on the same data folder', async () => {
    const ids = ['BTC-PERP', future, 'BTC-USDC', option];
    const tapes = await Promise.all(ids.map((id) => tape(id, '?limit=500')));
    const perp = await stats('BTC-PERP');
    await svc.close();
    await start();
    assert.deepEqual(await Promise.all(ids.map((id) => tape(id, '?limit=500'))), tapes);
    const again = await stats('BTC-PERP');
    assert.deepEqual([again.lastPrice, again.volume24h], [perp.lastPrice, perp.volume24h]);
  });
});

describe('OpenAPI', () => {
  test('documents the tape path, its cursor and the trade fields; volume24h on the stats', async () => {
    const doc = (await call(base, '/openapi.json')).body;
    const get = doc.paths['/markets/{marketId}/trades'].get;
    assert.deepEqual(get.tags, ['market-data']);
    assert.deepEqual(get.parameters.map((p: { name: string }) => p.name).sort(), ['before', 'limit', 'marketId']);
    const item = get.responses['200'].content['application/json'].schema.items;
    assert.deepEqual(Object.keys(item.properties), ['tradeId', 'marketId', 'price', 'quantity', 'takerSide', 'createdAt']);
    assert.ok(get.responses['404'] && get.responses['400']);
    const stats = doc.paths['/perps/market-stats'].get.responses['200'].content['application/json'].schema;
    assert.ok('volume24h' in stats.properties && 'lastPrice' in stats.properties);
  });
});
