/**
 * POST /perps/orders/{id}/modify over real HTTP: a resting perp order amended in one atomic step.
 * A new price moves it (same id) and a crossing price trades at once; a smaller size keeps its
 * time priority, a larger one re-queues it; an amend the margin gate (or post-only) refuses answers
 * the 4xx envelope and leaves the order exactly as it was (GET /perps/orders); another account's
 * order id answers 404, a cancelled or filled order 409 CONFLICT, an untriggered stop 400.
 *
 * How: one real service on loopback (temp SQLite, push index feed, no market maker) on a frozen
 * clock, so the index stays fresh and the mark stays the index.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, signIn, type Reply, type TestService, type Trader } from '../support/harness.ts';
import { frozenPerpsService, fundPerps, ok, publishIndex } from '../support/perps-http.ts';

const BTC = 'BTC-PERP';
type Json = Reply['body'];

let svc: TestService;
let base: string;
let trader: Trader;
let other: Trader;
let poor: Trader;
let taker: Trader;

before(async () => {
  ({ svc } = await frozenPerpsService());
  base = svc.url;
  [trader, other, poor, taker] = await Promise.all([signIn(base), signIn(base), signIn(base), signIn(base)]);
  await publishIndex(base, 'BTC', '100000');
  // The poor trader holds exactly the initial margin of 1 BTC at 100000 (50x: 2,000 USDC).
  await Promise.all([fundPerps(base, trader, '1000000'), fundPerps(base, other, '1000000'), fundPerps(base, poor, '2000'), fundPerps(base, taker, '1000000')]);
});

after(async () => {
  await svc.close();
});

async function refused(reply: Promise<Reply>, status: number, code: string): Promise<void> {
  const r = await reply;
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error, code, JSON.stringify(r.body));
  assert.equal(typeof r.body.message, 'string');
}

const post = (t: Trader, path: string, body: Record<string, unknown>) => call(base, path, { method: 'POST', token: t.token, body });
const place = (t: Trader, body: Record<string, unknown>) => ok(post(t, '/perps/orders', { marketId: BTC, type: 'limit', ...body }), 201);
const modify = (t: Trader, id: string, body: Record<string, unknown>) => post(t, `/perps/orders/${id}/modify`, body);

/** The trader's open order `id` as GET /perps/orders shows it. */
async function openOrder(t: Trader, id: string): Promise<Json | undefined> {
  const rows = await ok(call(base, '/perps/orders', { token: t.token }), 200) as Json[];
  return rows.find((o) => o.id === id);
}

async function cancelAll(): Promise<void> {
  for (const t of [trader, other, poor, taker]) await ok(post(t, '/perps/orders/cancel-all', {}), 200);
}

describe('POST /perps/orders/{id}/modify', () => {
  test('a new price moves the order and keeps its id; a crossing price fills at once', async () => {
    const placed = await place(trader, { side: 'buy', price: '99000', quantity: '1' });
    const moved = await ok(modify(trader, placed.id, { price: '99500' }), 200);
    assert.equal(moved.id, placed.id);
    assert.equal(moved.price, '99500');
    assert.equal(moved.status, 'open');
    assert.equal((await openOrder(trader, placed.id))?.price, '99500');
    await place(other, { side: 'sell', price: '100000', quantity: '0.25' });
    const crossed = await ok(modify(trader, placed.id, { price: '100000' }), 200);
    assert.equal(crossed.id, placed.id);
    assert.equal(crossed.fills.length, 1);
    assert.equal(crossed.filledQuantity, '0.25');
    assert.equal(crossed.remainingQuantity, '0.75');
    assert.equal(crossed.position.size, '0.25');
    await cancelAll();
  });

  test('a smaller size keeps time priority, a larger one re-queues the order', async () => {
    const first = await place(trader, { side: 'buy', price: '98000', quantity: '1' });
    const second = await place(other, { side: 'buy', price: '98000', quantity: '1' });
    const smaller = await ok(modify(trader, first.id, { quantity: '0.5' }), 200);
    assert.equal(smaller.id, first.id);
    assert.equal(smaller.quantity, '0.5');
    assert.equal(smaller.remainingQuantity, '0.5');
    const bigger = await ok(modify(trader, first.id, { quantity: '2' }), 200);
    assert.equal(bigger.quantity, '2');
    // A seller now meets the other trader's order first: the grown order went to the back.
    const sold = await place(taker, { side: 'sell', price: '98000', quantity: '0.1', timeInForce: 'ioc' });
    assert.equal(sold.status, 'filled');
    assert.equal((await openOrder(other, second.id))?.remainingQuantity, '0.9');
    assert.equal((await openOrder(trader, first.id))?.remainingQuantity, '2');
    await cancelAll();
  });

  test('a refused amend answers the error envelope and leaves the order as it was', async () => {
    const placed = await place(poor, { side: 'buy', price: '100000', quantity: '1', postOnly: true });
    const before = await openOrder(poor, placed.id);
    await refused(modify(poor, placed.id, { quantity: '1.5' }), 422, 'INSUFFICIENT_MARGIN');
    await place(other, { side: 'sell', price: '100500', quantity: '1' });
    await refused(modify(poor, placed.id, { price: '100500', quantity: '0.5' }), 422, 'POST_ONLY_WOULD_CROSS');
    await refused(modify(poor, placed.id, { price: '100000.05' }), 400, 'INVALID_TICK');
    await refused(modify(poor, placed.id, {}), 400, 'VALIDATION_ERROR');
    assert.deepEqual(await openOrder(poor, placed.id), before, 'same price, size, status and time');
    // At the edge of its free collateral the order can still move: the old one counts as gone.
    const cheaper = await ok(modify(poor, placed.id, { price: '99000' }), 200);
    assert.equal(cheaper.price, '99000');
    await cancelAll();
  });

  test('another account\'s order is 404, an ended order 409, an untriggered stop 400', async () => {
    const placed = await place(trader, { side: 'buy', price: '97000', quantity: '1' });
    await refused(modify(other, placed.id, { price: '97100' }), 404, 'NOT_FOUND');
    await refused(modify(trader, '99999999', { price: '97100' }), 404, 'NOT_FOUND');
    await ok(post(trader, `/perps/orders/${placed.id}/cancel`, {}), 200);
    await refused(modify(trader, placed.id, { price: '97100' }), 409, 'CONFLICT');
    await place(other, { side: 'sell', price: '100000', quantity: '0.1' });
    const filled = await place(trader, { side: 'buy', price: '100000', quantity: '0.1', timeInForce: 'ioc' });
    assert.equal(filled.status, 'filled');
    await refused(modify(trader, filled.id, { price: '99000' }), 409, 'CONFLICT');
    const stop = await ok(post(trader, '/perps/orders', { marketId: BTC, side: 'buy', type: 'market', quantity: '0.1', stopPrice: '101000' }), 201);
    assert.equal(stop.status, 'untriggered');
    await refused(modify(trader, stop.id, { quantity: '0.2' }), 400, 'VALIDATION_ERROR');
    await cancelAll();
  });
});
