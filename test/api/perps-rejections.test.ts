/**
 * Every rejection of the perp order endpoints over real HTTP, with its status and code
 * (decisions.md "Errors", checks in the documented order), and proof that nothing changed: the
 * book, the caller's balances, open orders, order history and trades are identical before and
 * after each rejected request, and a preview of the same body names the same reason. Also:
 * TOO_MANY_OPEN_ORDERS at 200 resting orders (set up with bulk quotes), DUPLICATE_CLIENT_ORDER_ID
 * sequentially and under concurrent retries (exactly one 201, never a second execution; the id
 * stays reserved after the order is cancelled), MARKET_CLOSED with a stale index while reduce-only
 * orders still close positions, and the API-key scopes of every order action.
 *
 * How: two real services on loopback (temp SQLite, push index feed, no market maker): the main one
 * with a one-hour index age, and one with a one-minute index age and an injected clock the test
 * moves two minutes forward to make the index stale. Traders sign in with SIWE and are funded
 * through the simulated chain.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  admin, call, fund, signIn, startService, type Reply, type TestService, type Trader,
} from '../support/harness.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '60000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};
const BTC = 'BTC-PERP';
type Json = Reply['body'];

let svc: TestService;
let base: string;
/** The service whose clock the stale-index test moves. */
let staleSvc: TestService;
const clock = { offset: 0, now: () => Date.now() + clock.offset };

before(async () => {
  [svc, staleSvc] = await Promise.all([
    startService(ENV),
    startService({ ...ENV, INDEX_MAX_AGE_MS: '60000' }, undefined, { clock }),
  ]);
  base = svc.url;
  await publish(base, '100000');
});

after(async () => {
  await Promise.all([svc.close(), staleSvc.close()]);
});

async function publish(url: string, price: string): Promise<void> {
  const r = await call(url, '/admin/index', { body: { underlying: 'BTC', price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function traders(n: number, perps = '100000', url = base): Promise<[Trader, Trader, ...Trader[]]> {
  const list = await Promise.all(Array.from({ length: n }, async () => {
    const t = await signIn(url);
    await fund(url, t, perps);
    const body = { from: 'wallet', to: 'perps', amount: perps };
    const r = await call(url, '/wallet/transfer', { token: t.token, body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return t;
  }));
  return list as [Trader, Trader, ...Trader[]];
}

/** A caller: a session (trader) or an API key secret. */
type Caller = Trader | string;
const auth = (c: Caller) => (typeof c === 'string' ? { apiKey: c } : { token: c.token });
const post = (c: Caller, path: string, body?: unknown, url = base) =>
  call(url, path, { method: 'POST', ...auth(c), body });
const get = (c: Caller, path: string, url = base) => call(url, path, auth(c));
const order = (c: Caller, fields: Record<string, unknown>, url = base) =>
  post(c, '/perps/orders', { marketId: BTC, ...fields }, url);

function ok(reply: Reply, status = 201): Json {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  return reply.body;
}

function assertError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, code, reply.body.message);
  assert.ok(reply.body.message.length > 0);
}

/** Everything a rejected order could have touched, as the caller and the public see it. */
async function snapshot(t: Trader, url = base): Promise<string> {
  const parts = await Promise.all([
    call(url, `/perps/orderbook/${BTC}`),
    get(t, '/perps/balances', url),
    get(t, '/perps/orders/open', url),
    get(t, '/perps/orders?limit=500', url),
    get(t, '/perps/trades', url),
    get(t, '/perps/positions', url),
    get(t, '/wallet/balance', url),
  ]);
  for (const p of parts) assert.equal(p.status, 200, JSON.stringify(p.body));
  return JSON.stringify(parts.map((p) => p.body));
}

async function clear(...cs: Caller[]): Promise<void> {
  for (const c of cs) ok(await post(c, '/perps/orders/cancel-all'), 200);
}

describe('each rejection has its status and code, and changes nothing', () => {
  let t: Trader;
  let maker: Trader;

  before(async () => {
    [t, maker] = await traders(2, '10000');
    // the book: an ask of 1 BTC at 100000, a bid of 1 BTC at 99000
    ok(await order(maker, { side: 'sell', price: '100000', quantity: '1' }));
    ok(await order(maker, { side: 'buy', price: '99000', quantity: '1' }));
  });

  after(async () => {
    await clear(maker);
  });

  const limit = { side: 'buy', price: '99500', quantity: '0.01' };
  type Body = Record<string, unknown>;
  const reject = (status: number, code: string, name: string, body: Body) => ({ status, code, name, body });
  const eth = { marketId: 'ETH-PERP' };
  const cases = [
    reject(400, 'VALIDATION_ERROR', 'a limit order without a price', { side: 'buy', quantity: '0.01' }),
    reject(400, 'VALIDATION_ERROR', 'a market order with a price', { ...limit, type: 'market' }),
    reject(400, 'VALIDATION_ERROR', 'postOnly with ioc', { ...limit, postOnly: true, timeInForce: 'ioc' }),
    reject(400, 'VALIDATION_ERROR', 'an unknown field', { ...limit, leverage: '10' }),
    reject(400, 'VALIDATION_ERROR', 'a bad side', { ...limit, side: 'long' }),
    reject(400, 'VALIDATION_ERROR', 'a bad timeInForce', { ...limit, timeInForce: 'day' }),
    reject(400, 'VALIDATION_ERROR', 'a bad marginMode', { ...limit, marginMode: 'portfolio' }),
    reject(400, 'VALIDATION_ERROR', 'TP on a reduce-only order',
      { ...limit, reduceOnly: true, takeProfitPrice: '101000' }),
    reject(400, 'VALIDATION_ERROR', 'TP below a buy', { ...limit, takeProfitPrice: '99000' }),
    reject(400, 'INVALID_DECIMAL', 'an exponent quantity', { ...limit, quantity: '1e5' }),
    reject(400, 'INVALID_DECIMAL', 'a quantity ".5"', { ...limit, quantity: '.5' }),
    reject(400, 'INVALID_DECIMAL', 'a quantity "5."', { ...limit, quantity: '5.' }),
    reject(400, 'INVALID_DECIMAL', 'a zero quantity', { ...limit, quantity: '0' }),
    reject(400, 'INVALID_DECIMAL', 'a negative quantity', { ...limit, quantity: '-1' }),
    reject(400, 'INVALID_DECIMAL', 'a JSON-number quantity', { ...limit, quantity: 1 }),
    reject(400, 'INVALID_DECIMAL', 'a JSON-number price', { ...limit, price: 99500 }),
    reject(400, 'INVALID_DECIMAL', 'an exponent price', { ...limit, price: '1e5' }),
    reject(400, 'INVALID_TICK', 'a price off the 0.1 tick', { ...limit, price: '100000.05' }),
    reject(400, 'INVALID_TICK', 'a stop price off the tick', { ...limit, stopPrice: '99000.01' }),
    reject(400, 'INVALID_STEP', 'a quantity off the 0.0001 step', { ...limit, quantity: '0.00001' }),
    reject(400, 'INVALID_STEP', 'a quantity with zeros past the step', { ...limit, quantity: '0.010000000000000000' }),
    reject(400, 'INVALID_TICK', 'a price with zeros past the tick', { ...limit, price: '99500.00' }),
    reject(404, 'NOT_FOUND', 'an unknown market', { ...limit, marketId: 'DOGE-PERP' }),
    // decimals before the market and its precision (the contract's check order)
    reject(400, 'INVALID_DECIMAL', 'a zero quantity beside a price off the tick', { ...limit, quantity: '0', price: '100000.05' }),
    reject(400, 'INVALID_DECIMAL', 'a malformed quantity on an unknown market', { ...limit, quantity: '1e5', marketId: 'DOGE-PERP' }),
    reject(400, 'INVALID_DECIMAL', 'a malformed stop-loss beside a quantity off the step',
      { ...limit, quantity: '0.00001', stopLossPrice: '-1' }),
    reject(422, 'SIZE_OUT_OF_RANGE', 'a quantity above the maximum', { ...limit, quantity: '1000.0001' }),
    reject(422, 'PRICE_OUT_OF_BAND', 'a bid 10 % above the mark', { ...limit, price: '110000' }),
    reject(422, 'PRICE_OUT_OF_BAND', 'an ask 6 % below the mark', { ...limit, side: 'sell', price: '94000' }),
    // a sell has no band above the mark; the ceiling keeps prices inside the book's integers
    reject(422, 'PRICE_OUT_OF_BAND', 'an ioc ask above the price ceiling',
      { ...limit, side: 'sell', price: '99999999999999999999', timeInForce: 'ioc' }),
    reject(422, 'PRICE_OUT_OF_BAND', 'a resting ask above the price ceiling',
      { ...limit, side: 'sell', price: '900719925474099.3' }),
    // triggers above the ceiling could never fire (before: accepted, journaled, resting forever)
    reject(422, 'PRICE_OUT_OF_BAND', 'a take-profit above the price ceiling',
      { ...limit, takeProfitPrice: '99999999999999999999' }),
    reject(422, 'PRICE_OUT_OF_BAND', 'a stop above the price ceiling',
      { ...limit, stopPrice: '99999999999999999999' }),
    reject(400, 'VALIDATION_ERROR', 'a market buy with its take-profit below the mark',
      { side: 'buy', type: 'market', quantity: '0.01', takeProfitPrice: '90000' }),
    reject(400, 'VALIDATION_ERROR', 'a market sell with its stop-loss below the mark',
      { side: 'sell', type: 'market', quantity: '0.01', stopLossPrice: '90000' }),
    reject(422, 'MARKET_CLOSED', 'a limit order on ETH-PERP (no index)',
      { ...eth, side: 'buy', price: '3000', quantity: '0.1' }),
    reject(422, 'MARKET_CLOSED', 'a market order on ETH-PERP (no index)',
      { ...eth, side: 'sell', type: 'market', quantity: '0.01' }),
    reject(422, 'REDUCE_ONLY_REJECTED', 'reduce-only while flat', { ...limit, reduceOnly: true }),
    reject(422, 'INSUFFICIENT_MARGIN', 'a bid beyond the free collateral', { ...limit, quantity: '10' }),
    reject(422, 'POST_ONLY_WOULD_CROSS', 'a post-only bid at the best ask',
      { ...limit, price: '100000', postOnly: true }),
    reject(422, 'FOK_NOT_FILLED', 'a fill-or-kill larger than the asks',
      { ...limit, price: '100000', quantity: '2', timeInForce: 'fok' }),
    reject(422, 'NO_LIQUIDITY', 'an ioc sell above all bids', { ...limit, side: 'sell', timeInForce: 'ioc' }),
  ];
  for (const c of cases) {
    test(`${c.status} ${c.code}: ${c.name}`, async () => {
      const body = { marketId: BTC, ...c.body };
      const before = await snapshot(t);
      assertError(await post(t, '/perps/orders', body), c.status, c.code);
      assert.equal(await snapshot(t), before, 'nothing changed');
      // the preview names the same reason: as `approved: false` once the order reaches the engine's
      // checks, or as the same error when the gateway refuses the body before that
      const preview = await post(t, '/perps/orders/preview', body);
      if (preview.status === 200) {
        assert.deepEqual([preview.body.approved, preview.body.reason], [false, c.code]);
      } else {
        assert.notEqual(c.status, 422, 'business rejections come back as a preview');
        assertError(preview, c.status, c.code);
      }
      assert.equal(await snapshot(t), before, 'a preview changes nothing either');
    });
  }

  test('a rejected order does not reserve its clientOrderId: the corrected retry is accepted', async () => {
    const tooBig = await order(t, { ...limit, quantity: '10', clientOrderId: 'retry-1' });
    assertError(tooBig, 422, 'INSUFFICIENT_MARGIN');
    const placed = ok(await order(t, { ...limit, clientOrderId: 'retry-1' }));
    assert.equal(placed.clientOrderId, 'retry-1');
    await clear(t);
  });

  test('TOO_MANY_OPEN_ORDERS past 200 resting orders in a market (a bulk level past it listed)', async () => {
    const [p] = await traders(1);
    for (let batch = 0; batch < 4; batch++) {
      const quotes = Array.from({ length: 50 }, (_, i) => ({
        side: 'buy', price: String(90000 + (batch * 50 + i) * 10), quantity: '0.0001', postOnly: true,
      }));
      const r = ok(await post(p!, '/perps/quotes/bulk', { marketId: BTC, quotes }), 200);
      assert.deepEqual([r.orders.length, r.rejected], [50, []]);
    }
    assert.equal((ok(await get(p!, '/perps/orders/open'), 200) as Json[]).length, 200);
    const before = await snapshot(p!);
    const extra = { side: 'buy', price: '89000', quantity: '0.0001' };
    assertError(await order(p!, extra), 422, 'TOO_MANY_OPEN_ORDERS');
    const bulk = ok(await post(p!, '/perps/quotes/bulk', {
      marketId: BTC, quotes: [{ side: 'buy', price: '89000', quantity: '0.0001' }],
    }), 200);
    assert.deepEqual(bulk.rejected.map((x: Json) => [x.index, x.error]), [[0, 'TOO_MANY_OPEN_ORDERS']]);
    assert.equal(await snapshot(p!), before);
    const cancelled = ok(await post(p!, '/perps/orders/cancel-all'), 200).cancelled;
    assert.equal(cancelled.length, 200);
    ok(await order(p!, { side: 'buy', price: '89000', quantity: '0.0001' }));
    await clear(p!);
  });
});

describe('duplicate clientOrderId', () => {
  test('the same id twice in a row: 409 DUPLICATE_CLIENT_ORDER_ID, one order', async () => {
    const [t] = await traders(1);
    const body = { side: 'buy', price: '98000', quantity: '0.01', clientOrderId: 'dup-seq' };
    const first = ok(await order(t!, body));
    const before = await snapshot(t!);
    const again = await order(t!, body);
    assertError(again, 409, 'DUPLICATE_CLIENT_ORDER_ID');
    assert.match(again.body.message, new RegExp(`order ${first.id}\\b`), 'it names the original order');
    assert.equal(await snapshot(t!), before);
    await clear(t!);
  });

  test('concurrent retries of one taking order: exactly one 201, the others 409, one execution', async () => {
    const [t, m] = await traders(2);
    ok(await order(m!, { side: 'sell', price: '100000', quantity: '1' }));
    const body = { side: 'buy', price: '100000', quantity: '0.1', timeInForce: 'ioc', clientOrderId: 'race' };
    const replies = await Promise.all(Array.from({ length: 8 }, () => order(t!, body)));
    const statuses = replies.map((r) => r.status).sort();
    const bodies = JSON.stringify(replies.map((r) => r.body));
    assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409], bodies);
    for (const r of replies.filter((x) => x.status === 409)) {
      assert.equal(r.body.error, 'DUPLICATE_CLIENT_ORDER_ID');
    }
    const orders = ok(await get(t!, '/perps/orders'), 200) as Json[];
    const seen = orders.map((o) => [o.clientOrderId, o.status, o.filledQuantity]);
    assert.deepEqual(seen, [['race', 'filled', '0.1']]);
    assert.equal((ok(await get(t!, '/perps/trades'), 200) as Json[]).length, 1, 'one execution');
    const ask = ok(await get(m!, '/perps/orders/open'), 200) as Json[];
    assert.deepEqual(ask.map((o) => o.remainingQuantity), ['0.9']);
    await clear(m!);
  });

  test('concurrent retries of a resting order: one rests; its id stays reserved after cancel', async () => {
    const [t] = await traders(1);
    const body = { side: 'buy', price: '98500', quantity: '0.01', clientOrderId: 'dup-rest' };
    const replies = await Promise.all(Array.from({ length: 5 }, () => order(t!, body)));
    assert.deepEqual(replies.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
    const placed = replies.find((r) => r.status === 201)!.body;
    assert.equal((ok(await get(t!, '/perps/orders/open'), 200) as Json[]).length, 1);
    ok(await post(t!, `/perps/orders/${placed.id}/cancel`), 200);
    assertError(await order(t!, body), 409, 'DUPLICATE_CLIENT_ORDER_ID');
    const bulk = ok(await post(t!, '/perps/quotes/bulk', { marketId: BTC, quotes: [body] }), 200);
    assert.deepEqual(bulk.rejected.map((x: Json) => [x.index, x.error]), [[0, 'DUPLICATE_CLIENT_ORDER_ID']]);
    assert.deepEqual(ok(await get(t!, '/perps/orders/open'), 200), []);
  });
});

describe('MARKET_CLOSED when the index is stale', () => {
  test('a close sweeps no further than the band around the last mark, and a limit close is banded there', async () => {
    const url = staleSvc.url;
    await publish(url, '100000');
    const [a, b] = await traders(2, '100000', url);
    ok(await order(b!, { side: 'sell', price: '100000', quantity: '0.1' }, url));
    ok(await order(a!, { side: 'buy', price: '100000', quantity: '0.1', timeInForce: 'ioc' }, url));
    ok(await order(b!, { side: 'buy', price: '90000', quantity: '0.1' }, url)); // 10 % below the mark
    clock.offset += 120_000;
    const before = await snapshot(a!, url);
    assertError(await post(a!, '/perps/positions/close', { marketId: BTC }, url), 422, 'NO_LIQUIDITY');
    const banded = await post(a!, '/perps/positions/close', { marketId: BTC, price: '90000', timeInForce: 'ioc' }, url);
    assertError(banded, 422, 'PRICE_OUT_OF_BAND');
    assert.match(banded.body.message, /last mark 100000/);
    assert.equal(await snapshot(a!, url), before, 'the stale feed did not sweep the book');
    // a stop placed now waits for the mark to fall to it from where it last was, not for the feed to return
    const stop = { side: 'sell', type: 'market', quantity: '0.1', stopPrice: '98000', reduceOnly: true };
    assert.equal(ok(await order(a!, stop, url)).status, 'untriggered');
    await publish(url, '100000');
    assert.equal((ok(await get(a!, '/perps/orders/open', url), 200) as Json[])[0].status, 'untriggered');
    for (const t of [a!, b!]) ok(await post(t, '/perps/orders/cancel-all', undefined, url), 200);
  });

  test('non-reduce-only orders are refused; reduce-only orders and closes still work', async () => {
    const url = staleSvc.url;
    await publish(url, '100000');
    const [a, b] = await traders(2, '100000', url);
    ok(await order(b!, { side: 'sell', price: '100000', quantity: '1' }, url));
    ok(await order(a!, { side: 'buy', price: '100000', quantity: '1', timeInForce: 'ioc' }, url));
    ok(await order(b!, { side: 'buy', price: '99000', quantity: '1' }, url));
    clock.offset += 120_000;
    const markets = ok(await call(url, '/perps/markets'), 200) as Json[];
    assert.equal(markets.find((m) => m.id === BTC).markPrice, null, 'a stale index gives no mark');
    const before = await snapshot(a!, url);
    const bid = { side: 'buy', price: '99000', quantity: '0.1' };
    assertError(await order(a!, bid, url), 422, 'MARKET_CLOSED');
    const ask = { side: 'sell', price: '101000', quantity: '0.1' };
    assertError(await order(a!, ask, url), 422, 'MARKET_CLOSED');
    const marketSell = { side: 'sell', type: 'market', quantity: '0.1' };
    assertError(await order(b!, marketSell, url), 422, 'MARKET_CLOSED');
    const preview = ok(await post(a!, '/perps/orders/preview', { marketId: BTC, ...bid }, url), 200);
    assert.deepEqual([preview.approved, preview.reason], [false, 'MARKET_CLOSED']);
    assert.equal(await snapshot(a!, url), before);
    const reduce = { side: 'sell', price: '99000', quantity: '0.4', reduceOnly: true, timeInForce: 'ioc' };
    const ro = ok(await order(a!, reduce, url));
    assert.deepEqual([ro.status, ro.filledQuantity], ['filled', '0.4']);
    const closed = ok(await post(a!, '/perps/positions/close', { marketId: BTC }, url), 200);
    assert.deepEqual([closed.status, closed.filledQuantity], ['filled', '0.6']);
    assert.deepEqual(ok(await get(a!, '/perps/positions', url), 200), []);
    await publish(url, '100000');
    ok(await order(a!, { side: 'buy', price: '98000', quantity: '0.1' }, url));
  });
});

describe('what a market maker relies on', () => {
  test('preview: a stop-market order is a taker; an early rejection still reports the fee tier and the volume', async () => {
    const [t, m] = await traders(2);
    ok(await order(m, { side: 'sell', price: '100000', quantity: '0.01' }));
    ok(await order(t, { side: 'buy', price: '100000', quantity: '0.01', timeInForce: 'ioc' }));
    const ioc = ok(await post(t, '/perps/orders/preview', { marketId: BTC, side: 'buy', price: '100000', quantity: '0.01', timeInForce: 'ioc' }), 200);
    assert.equal(ioc.feeRole, 'taker');
    assert.notEqual(ioc.feeBps, '0');
    const stop = { marketId: BTC, side: 'buy', type: 'market', quantity: '0.01', stopPrice: '100100' };
    const stopPreview = ok(await post(t, '/perps/orders/preview', stop), 200);
    assert.deepEqual([stopPreview.approved, stopPreview.feeRole, stopPreview.feeBps], [true, 'taker', ioc.feeBps]);
    const tooBig = { marketId: BTC, side: 'buy', price: '99000', quantity: '1001' };
    const early = ok(await post(t, '/perps/orders/preview', tooBig), 200);
    assert.deepEqual(
      [early.approved, early.reason, early.feeRole, early.feeBps, early.user30dVolume],
      [false, 'SIZE_OUT_OF_RANGE', 'taker', ioc.feeBps, '1000'],
    );
    const maker = ok(await post(t, '/perps/orders/preview', { ...tooBig, postOnly: true }), 200);
    assert.equal(maker.feeRole, 'maker');
    assert.notEqual(maker.feeBps, ioc.feeBps);
  });

  test('a crossed two-sided quote or ladder is refused whole, its cancelAll included', async () => {
    const [t] = await traders(1);
    const ladder = [{ side: 'buy', price: '99400', quantity: '0.01' }, { side: 'sell', price: '100600', quantity: '0.01' }];
    ok(await post(t, '/perps/quotes/bulk', { marketId: BTC, quotes: ladder }), 200);
    const before = await snapshot(t);
    const quote = { marketId: BTC, bid: { price: '99600', quantity: '0.01' }, ask: { price: '99500', quantity: '0.01' } };
    assertError(await post(t, '/perps/quotes', quote), 400, 'VALIDATION_ERROR');
    const crossed = [{ side: 'buy', price: '99500', quantity: '0.01' }, { side: 'buy', price: '99300', quantity: '0.01' },
      { side: 'sell', price: '99500', quantity: '0.01' }];
    const bulk = await post(t, '/perps/quotes/bulk', { marketId: BTC, cancelAll: true, quotes: crossed });
    assertError(bulk, 400, 'VALIDATION_ERROR');
    assert.match(bulk.body.message, /bid 99500 is not below ask 99500/);
    assert.equal(await snapshot(t), before, 'the resting ladder stands');
    await clear(t);
  });

  test('cancel one takes no body fields; cancel-all names a bad filter field and 404s an unknown market', async () => {
    const [t] = await traders(1);
    const placed = ok(await order(t, { side: 'buy', price: '98000', quantity: '0.01' }));
    const before = await snapshot(t);
    const extra = await post(t, `/perps/orders/${placed.id}/cancel`, { foo: 1 });
    assertError(extra, 400, 'VALIDATION_ERROR');
    assert.match(extra.body.message, /foo/);
    const typed = await post(t, '/perps/orders/cancel-all', { marketId: 1 });
    assertError(typed, 400, 'VALIDATION_ERROR');
    assert.match(typed.body.message, /marketId/);
    const list = await post(t, '/perps/orders/cancel-all', []);
    assertError(list, 400, 'VALIDATION_ERROR');
    assert.match(list.body.message, /object or null/);
    assertError(await post(t, '/perps/orders/cancel-all', { marketId: 'DOGE-PERP' }), 404, 'NOT_FOUND');
    assertError(await post(t, '/perps/orders/cancel-all', { clientOrderId: 'a b' }), 400, 'VALIDATION_ERROR');
    assert.equal(await snapshot(t), before, 'nothing was cancelled');
    assert.equal(ok(await post(t, `/perps/orders/${placed.id}/cancel`, {}), 200).status, 'cancelled');
  });

  test('close without marginMode closes the only open position, an isolated one included', async () => {
    const [t, m] = await traders(2);
    ok(await order(m, { side: 'sell', price: '100000', quantity: '0.02' }));
    ok(await order(t, { side: 'buy', price: '100000', quantity: '0.02', timeInForce: 'ioc', marginMode: 'isolated' }));
    ok(await order(m, { side: 'buy', price: '99900', quantity: '0.02' }));
    const closed = ok(await post(t, '/perps/positions/close', { marketId: BTC }), 200);
    assert.deepEqual([closed.marginMode, closed.status, closed.filledQuantity], ['isolated', 'filled', '0.02']);
    assert.deepEqual(ok(await get(t, '/perps/positions'), 200), []);
    assertError(await post(t, '/perps/positions/close', { marketId: BTC }), 404, 'NOT_FOUND');
    await clear(m);
  });
});

describe('API key scopes on the order actions', () => {
  let owner: Trader;
  let maker: Trader;
  let tradeKey: string;
  let readKey: string;

  before(async () => {
    [owner, maker] = await traders(2);
    const key = async (scope: string) => {
      const body = { name: `bot-${scope}`, scope };
      const r = await call(base, '/perps/me/api-keys', { token: owner.token, body });
      return ok(r).secret as string;
    };
    [tradeKey, readKey] = await Promise.all([key('trade'), key('read')]);
  });

  test('a trade key can place, cancel, cancel all, quote in bulk and close', async () => {
    const placed = ok(await order(tradeKey, { side: 'buy', price: '98000', quantity: '0.01' }));
    assert.equal(ok(await post(tradeKey, `/perps/orders/${placed.id}/cancel`), 200).status, 'cancelled');
    const bulk = ok(await post(tradeKey, '/perps/quotes/bulk', {
      marketId: BTC, quotes: [{ side: 'buy', price: '98100', quantity: '0.01' }],
    }), 200);
    assert.equal(bulk.orders.length, 1);
    const all = ok(await post(tradeKey, '/perps/orders/cancel-all'), 200);
    assert.deepEqual(all.cancelled, [bulk.orders[0].id]);
    ok(await order(maker, { side: 'sell', price: '100000', quantity: '0.05' }));
    ok(await order(maker, { side: 'buy', price: '99900', quantity: '0.05' }));
    ok(await order(tradeKey, { side: 'buy', price: '100000', quantity: '0.05', timeInForce: 'ioc' }));
    const closed = ok(await post(tradeKey, '/perps/positions/close', { marketId: BTC }), 200);
    assert.deepEqual([closed.reduceOnly, closed.status, closed.filledQuantity], [true, 'filled', '0.05']);
    await clear(owner, maker);
  });

  test('a read key gets 403 INSUFFICIENT_SCOPE on order actions, 200 on preview and the reads', async () => {
    const resting = ok(await order(owner, { side: 'buy', price: '97000', quantity: '0.01' }));
    const before = await snapshot(owner);
    const actions: [string, unknown][] = [
      ['/perps/orders', { marketId: BTC, side: 'buy', price: '98000', quantity: '0.01' }],
      [`/perps/orders/${resting.id}/cancel`, undefined],
      ['/perps/orders/cancel-all', undefined],
      ['/perps/quotes/bulk', { marketId: BTC, quotes: [{ side: 'buy', price: '98000', quantity: '0.01' }] }],
      ['/perps/positions/close', { marketId: BTC }],
    ];
    for (const [path, body] of actions) {
      assertError(await post(readKey, path, body), 403, 'INSUFFICIENT_SCOPE');
    }
    assert.equal(await snapshot(owner), before, 'nothing happened');
    const body = { marketId: BTC, side: 'buy', price: '98000', quantity: '0.01' };
    const preview = ok(await post(readKey, '/perps/orders/preview', body), 200);
    assert.equal(preview.approved, true);
    const reads = ['/perps/orders', '/perps/orders/open', '/perps/positions', '/perps/trades'];
    reads.push('/perps/balances');
    for (const path of reads) {
      ok(await get(readKey, path), 200);
    }
    const open = ok(await get(readKey, '/perps/orders/open'), 200) as Json[];
    assert.deepEqual(open.map((o) => o.id), [resting.id]);
    await clear(owner);
  });

  test('any key on POST /perps/quotes: 403 FORBIDDEN (session only); no credentials: 401', async () => {
    const quote = { marketId: BTC, bid: { price: '98000', quantity: '0.01' } };
    for (const key of [tradeKey, readKey]) {
      assertError(await post(key, '/perps/quotes', quote), 403, 'FORBIDDEN');
    }
    const body = { marketId: BTC, side: 'buy', price: '98000', quantity: '0.01' };
    assertError(await call(base, '/perps/orders', { body }), 401, 'UNAUTHENTICATED');
    assertError(await call(base, '/perps/orders/cancel-all', { method: 'POST' }), 401, 'UNAUTHENTICATED');
    assert.deepEqual(ok(await get(owner, '/perps/orders/open'), 200), []);
  });
});
