/**
 * Perp account reads and market stats over real HTTP, on what a market maker reconciles with:
 * one order by id and by clientOrderId (another account's is 404), an unknown market filter is 404
 * (never an empty list that hides a typo), a read without parameters refuses unknown ones, the
 * position filter by market; while the index is stale nothing valued at a mark is shown (position
 * valuation, the margin view's equity and margins, the predicted funding rate) and the figures come
 * back with a fresh index; and the OpenAPI document states each operation's credentials.
 *
 * How: a real service on loopback (temp SQLite, push index feed, no market maker) whose clock the
 * test moves forward past the index age; traders sign in with SIWE and are funded through the
 * simulated chain.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, call, fund, signIn, startService, type Reply, type TestService, type Trader } from '../support/harness.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '60000',
  TICK_MS: '60000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};
const BTC = 'BTC-PERP';
type Json = Reply['body'];

let svc: TestService;
let base: string;
const clock = { offset: 0, now: () => Date.now() + clock.offset };
let maker: Trader;
let taker: Trader;

before(async () => {
  svc = await startService(ENV, undefined, { clock });
  base = svc.url;
  await publish('100000');
  [maker, taker] = await Promise.all([trader(), trader()]);
});

after(async () => {
  await svc.close();
});

async function publish(price: string): Promise<void> {
  const r = await call(base, '/admin/index', { body: { underlying: 'BTC', price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function trader(): Promise<Trader> {
  const t = await signIn(base);
  await fund(base, t, '100000');
  const r = await call(base, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100000' } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return t;
}

const get = (t: Trader, path: string) => call(base, path, { token: t.token });
const order = (t: Trader, fields: Record<string, unknown>) =>
  call(base, '/perps/orders', { method: 'POST', token: t.token, body: { marketId: BTC, ...fields } });

function ok(reply: Reply, status = 200): Json {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  return reply.body;
}

function refused(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, code, reply.body.message);
}

describe('reconciling orders', () => {
  test('one order by id and by clientOrderId, in any status; another account\'s is 404', async () => {
    const resting = ok(await order(maker, { side: 'buy', price: '99000', quantity: '0.01', clientOrderId: 'mm-bid-1' }), 201);
    const byId = ok(await get(maker, `/perps/orders/${resting.id}`));
    const listed = (ok(await get(maker, '/perps/orders?limit=1')) as Json[])[0];
    assert.deepEqual(byId, listed, 'the same view as the list');
    assert.deepEqual([byId.status, byId.clientOrderId], ['open', 'mm-bid-1']);
    const byClientId = ok(await get(maker, '/perps/orders?clientOrderId=mm-bid-1')) as Json[];
    assert.deepEqual(byClientId.map((o) => o.id), [resting.id]);
    assert.deepEqual(ok(await get(maker, '/perps/orders?clientOrderId=unknown-id')), []);
    refused(await get(taker, `/perps/orders/${resting.id}`), 404, 'NOT_FOUND');
    refused(await get(maker, '/perps/orders/999999'), 404, 'NOT_FOUND');
    refused(await get(maker, '/perps/orders/abc'), 400, 'VALIDATION_ERROR');
    refused(await get(maker, '/perps/orders?clientOrderId=a%20b'), 400, 'VALIDATION_ERROR');
    ok(await call(base, `/perps/orders/${resting.id}/cancel`, { method: 'POST', token: maker.token }));
    assert.equal(ok(await get(maker, `/perps/orders/${resting.id}`)).status, 'cancelled', 'read-your-writes');
  });
});

describe('the whole Order object on reads', () => {
  test('an order read carries every fill of the order so far and the position now, in lists and by id', async () => {
    const bid = ok(await order(maker, { side: 'buy', price: '99500', quantity: '0.03' }), 201);
    const sells = [];
    for (const quantity of ['0.01', '0.005']) {
      sells.push(ok(await order(taker, { side: 'sell', price: '99500', quantity, timeInForce: 'ioc' }), 201));
    }
    const tradeIds = sells.map((s) => s.fills[0].tradeId);
    const byId = ok(await get(maker, `/perps/orders/${bid.id}`));
    assert.deepEqual(byId.fills.map((f: Json) => [f.tradeId, f.quantity, f.liquidity]), [[tradeIds[0], '0.01', 'maker'], [tradeIds[1], '0.005', 'maker']]);
    assert.deepEqual(Object.keys(byId.fills[0]).sort(), ['createdAt', 'fee', 'feeBps', 'liquidity', 'price', 'quantity', 'tradeId']);
    assert.equal(byId.position.marketId, BTC);
    const open = (ok(await get(maker, '/perps/orders/open')) as Json[]).find((o) => o.id === bid.id);
    assert.deepEqual(open, byId, 'the live list answers the same object');
    assert.deepEqual((ok(await get(maker, '/perps/orders?limit=1')) as Json[])[0], byId);
    const ioc = ok(await get(taker, `/perps/orders/${sells[0].id}`));
    assert.deepEqual(ioc.fills.map((f: Json) => [f.tradeId, f.liquidity]), [[tradeIds[0], 'taker']]);
    ok(await call(base, `/perps/orders/${bid.id}/cancel`, { method: 'POST', token: maker.token }));
    ok(await order(maker, { side: 'sell', price: '99500', quantity: '0.015' }), 201); // both flat again
    ok(await call(base, '/perps/positions/close', { method: 'POST', token: taker.token, body: { marketId: BTC } }));
  });
});

describe('filters and parameters', () => {
  test('an unknown market filter is 404 on every account list; positions filter by market', async () => {
    for (const path of ['/perps/orders', '/perps/orders/open', '/perps/trades', '/perps/positions']) {
      refused(await get(taker, `${path}?marketId=BTC-PERPS`), 404, 'NOT_FOUND');
      refused(await get(taker, `${path}?marketId=`), 400, 'VALIDATION_ERROR');
    }
    ok(await order(maker, { side: 'sell', price: '100000', quantity: '0.02' }), 201);
    ok(await order(taker, { side: 'buy', price: '100000', quantity: '0.02', timeInForce: 'ioc' }), 201);
    assert.equal((ok(await get(taker, `/perps/positions?marketId=${BTC}`)) as Json[]).length, 1);
    assert.deepEqual(ok(await get(taker, '/perps/positions?marketId=ETH-PERP')), []);
  });

  test('a read that takes no parameters refuses unknown ones instead of ignoring them', async () => {
    for (const path of ['/perps/balances?x=1', '/perps/positions?foo=1']) {
      refused(await get(taker, path), 400, 'VALIDATION_ERROR');
    }
    for (const path of ['/perps/markets?type=perp', '/markets/linear?x=1', '/perps/fees?x=1']) {
      refused(await call(base, path), 400, 'VALIDATION_ERROR');
    }
  });

  test('the OpenAPI document states the credentials of each operation', async () => {
    const doc = ok(await call(base, '/openapi.json'));
    const schemes = (op: Json) => (op.security as Json[]).map((s) => Object.keys(s)[0]).sort();
    assert.deepEqual(schemes(doc.paths['/perps/orders'].get), ['apiKey', 'bearer', 'session']);
    assert.deepEqual(schemes(doc.paths['/perps/quotes'].post), ['bearer', 'session']);
    assert.deepEqual(doc.paths['/perps/markets'].get.security, []);
  });
});

describe('a stale index shows no value at a mark', () => {
  test('positions, the margin view and the predicted funding go null, and come back with a fresh index', async () => {
    const fresh = ok(await get(taker, '/perps/balances'));
    for (const k of ['unrealizedPnl', 'equity', 'initialMargin', 'maintenanceMargin', 'orderMargin', 'marginRatio']) {
      assert.equal(typeof fresh[k], 'string', k);
    }
    const stats = ok(await call(base, `/perps/market-stats?marketId=${BTC}`));
    assert.equal(typeof stats.funding1hPct, 'string');
    clock.offset += 120_000;
    const position = (ok(await get(taker, '/perps/positions')) as Json[])[0];
    assert.deepEqual(
      [position.markPrice, position.unrealizedPnl, position.liquidationPrice, position.leverage, position.margin],
      [null, null, null, null, null],
    );
    const stale = ok(await get(taker, '/perps/balances'));
    for (const k of ['unrealizedPnl', 'equity', 'initialMargin', 'maintenanceMargin', 'orderMargin', 'marginRatio']) {
      assert.equal(stale[k], null, k);
    }
    assert.equal(stale.balance, fresh.balance);
    assert.equal(typeof stale.availableMargin, 'string', 'what the venue acts on stays');
    assert.equal(typeof stale.withdrawable, 'string');
    const staleStats = ok(await call(base, `/perps/market-stats?marketId=${BTC}`));
    assert.deepEqual([staleStats.markPrice, staleStats.funding1hPct, staleStats.fundingRate8hPct], [null, null, null]);
    assert.equal(typeof staleStats.nextFundingAt, 'string');
    await publish('100000');
    const back = ok(await get(taker, '/perps/balances'));
    assert.equal(typeof back.equity, 'string');
    assert.equal(typeof (ok(await get(taker, '/perps/positions')) as Json[])[0].leverage, 'string');
    assert.equal(typeof ok(await call(base, `/perps/market-stats?marketId=${BTC}`)).funding1hPct, 'string');
  });
});
