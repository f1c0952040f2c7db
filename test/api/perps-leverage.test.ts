/**
 * An isolated order's leverage over real HTTP (POST /perps/orders and /perps/orders/preview,
 * `leverage`): an isolated market buy at 5x posts notional / 5 as the position's margin, and the
 * liquidation price GET /perps/positions then shows is the preview's estimate; a resting bid at 2.5x
 * holds its margin while it rests, and the order record (live, then in the history) keeps its
 * leverage; a leverage above the tier's maximum, below 1 or on a cross order is refused with 400
 * (preview and order alike); without it, the tiers' margin as before.
 *
 * How: one real service on loopback (temp SQLite, push index feed, no market maker) on a frozen
 * clock; a counterparty rests the liquidity each order takes, so the mark stays the index.
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
let plain: Trader;
let counterparty: Trader;

before(async () => {
  ({ svc } = await frozenPerpsService());
  base = svc.url;
  [trader, plain, counterparty] = await Promise.all([signIn(base), signIn(base), signIn(base)]);
  await publishIndex(base, 'BTC', '100000');
  await Promise.all([fundPerps(base, trader, '100000'), fundPerps(base, plain, '100000'), fundPerps(base, counterparty, '10000000')]);
});

after(async () => {
  await svc.close();
});

const post = (t: Trader, path: string, body: Record<string, unknown>) => call(base, path, { method: 'POST', token: t.token, body });

async function isolatedPosition(t: Trader): Promise<Json | undefined> {
  const rows = await ok(call(base, '/perps/positions', { token: t.token }), 200) as Json[];
  return rows.find((p) => p.marketId === BTC && p.marginMode === 'isolated');
}

describe('leverage of isolated perp orders', () => {
  test('a 5x isolated market buy posts notional / 5; its liquidation price is the preview\'s', async () => {
    await ok(post(counterparty, '/perps/orders', { marketId: BTC, side: 'sell', price: '100000', quantity: '0.5' }), 201);
    const body = { marketId: BTC, side: 'buy', type: 'market', quantity: '0.5', marginMode: 'isolated', leverage: 5 };
    const preview = await ok(post(trader, '/perps/orders/preview', body), 200);
    assert.equal(preview.approved, true, preview.message);
    assert.equal(preview.marginRequired, '10000', '0.5 x 100000 / 5');
    assert.equal(preview.estimatedLeverage, '5');
    const placed = await ok(post(trader, '/perps/orders', body), 201);
    assert.equal(placed.status, 'filled');
    assert.equal(placed.leverage, '5', 'the order record keeps its leverage');
    const p = await isolatedPosition(trader);
    assert.equal(p?.margin, '10000');
    assert.equal(p?.leverage, '5');
    assert.equal(p?.liquidationPrice, preview.estimatedLiquidationPrice, 'the preview estimated the liquidation price the position shows');
  });

  test('a resting isolated bid at a decimal leverage holds its margin while it rests', async () => {
    const before = await ok(call(base, '/perps/balances', { token: plain.token }), 200);
    const placed = await ok(post(plain, '/perps/orders', { marketId: BTC, side: 'buy', price: '99000', quantity: '1', marginMode: 'isolated', leverage: '2.5' }), 201);
    assert.equal(placed.status, 'open');
    assert.equal(placed.leverage, '2.5');
    const after = await ok(call(base, '/perps/balances', { token: plain.token }), 200);
    // The tiers' 2 % of the bid at the mark (2000) and what 2.5x asks beyond the tiers' margin of its notional (39600 - 1980).
    assert.equal(Number(before.availableMargin) - Number(after.availableMargin), 39620);
    await ok(post(plain, `/perps/orders/${placed.id}/cancel`, {}), 200);
    const kept = await ok(call(base, `/perps/orders/${placed.id}`, { token: plain.token }), 200);
    assert.equal(kept.status, 'cancelled');
    assert.equal(kept.leverage, '2.5', 'the order history keeps the leverage');
  });

  test('above the tier\'s maximum, below 1, or on a cross order: 400, in the preview too', async () => {
    const order = { marketId: BTC, side: 'buy', price: '99000', quantity: '0.1', marginMode: 'isolated' };
    for (const [body, message] of [
      [{ ...order, leverage: 51 }, /may not exceed 50x/],
      [{ ...order, leverage: '0.5' }, /at least 1/],
      [{ ...order, marginMode: 'cross', leverage: 5 }, /isolated orders only.*whole account/],
      [{ ...order, leverage: '2.555' }, /leverage/],
    ] as const) {
      for (const path of ['/perps/orders', '/perps/orders/preview']) {
        const r = await post(trader, path, body);
        if (path.endsWith('preview') && r.status === 200) {
          assert.equal(r.body.approved, false);
          assert.match(r.body.message, message);
          continue;
        }
        assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message);
      }
    }
  });

  test('without a leverage an isolated order posts the tiers\' margin, as before', async () => {
    await ok(post(counterparty, '/perps/orders', { marketId: BTC, side: 'sell', price: '100000', quantity: '0.5' }), 201);
    const placed = await ok(post(plain, '/perps/orders', { marketId: BTC, side: 'buy', type: 'market', quantity: '0.5', marginMode: 'isolated' }), 201);
    assert.equal(placed.status, 'filled');
    assert.equal(placed.leverage, null);
    const p = await isolatedPosition(plain);
    assert.equal(p?.margin, '1000', '2 % of 50000');
    assert.equal(p?.leverage, '50');
  });
});
