/**
 * Multi-leg strategies over real HTTP (contract "POST /orders/strategy", "combo strategy" state
 * rows): a strategy fills every leg or changes nothing; its preview; leg validation; and atomicity
 * under concurrency: in each round strategy clients race (Promise.all) against plain takers for
 * resting liquidity that cannot serve them all, and afterwards every strategy client either holds
 * exactly the strategy's positions with two filled orders, or has no order, no position and its
 * funds untouched; the maker's fills add up to exactly the successful strategies and takers, and
 * its second leg was only ever hit by strategies (so no strategy ever filled one leg alone).
 *
 * How: one real service on loopback (test/support/clob-http.ts); concurrency is real HTTP
 * requests in flight together, serialised by the sequencer in whatever order they arrive.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fx } from '../../src/core/money.ts';
import { asset, clobService, clobTraders, get, ok, optionId, post, refused } from '../support/clob-http.ts';
import { type Reply, type TestService, type Trader } from '../support/harness.ts';

let svc: TestService;
let base: string;
let k1: string;
let k2: string;

before(async () => {
  svc = await clobService();
  base = svc.url;
  k1 = await optionId(base, 'BTC', 'call', '100000');
  k2 = await optionId(base, 'BTC', 'call', '104000');
});

after(async () => {
  await svc.close();
});

const spread = (qty = '1') => ({
  strategyName: 'call spread',
  legs: [
    { market: k1, side: 'buy', quantity: qty, price: '2000' },
    { market: k2, side: 'sell', quantity: qty, price: '800', timeInForce: 'gtc' },
  ],
});

describe('strategies', () => {
  test('all legs fill, or nothing executes; preview agrees', async () => {
    const [mm, s] = await clobTraders(base, 2, { options: '100000' }) as [Trader, Trader];
    ok(
      await post(base, mm, '/options/orders', { marketId: k1, side: 'sell', quantity: '1', price: '2000' }),
      201,
    );
    ok(
      await post(base, mm, '/options/orders', { marketId: k2, side: 'buy', quantity: '1', price: '800' }),
      201,
    );
    const before = await asset(base, s, 'options');
    const big = ok(await post(base, s, '/orders/strategy/preview', spread('2')));
    assert.equal(big.approved, false);
    assert.equal(big.reason, 'STRATEGY_NOT_FILLED');
    assert.deepEqual(big.legs.map((l: { fillableQuantity: string }) => l.fillableQuantity), ['1', '1']);
    refused(await post(base, s, '/orders/strategy', spread('2')), 422, 'STRATEGY_NOT_FILLED');
    assert.deepEqual(await asset(base, s, 'options'), before);
    assert.deepEqual(ok(await get(base, s, '/orders/me')), []);
    const fine = ok(await post(base, s, '/options/orders/strategy/preview', spread()));
    assert.equal(fine.approved, true);
    const r = ok(await post(base, s, '/options/orders/strategy', spread()));
    assert.equal(r.fullyFilled, true);
    assert.equal(r.strategyName, 'call spread');
    assert.deepEqual(r.legs.map((l: { marketId: string; fills: { price: string; quantity: string }[] }) => [
      l.marketId,
      l.fills.map((f) => [f.price, f.quantity]),
    ]),
      [[k1, [['2000', '1']]], [k2, [['800', '1']]]]);
    assert.deepEqual(fine.legs.map((l: { notional: string }) => l.notional), ['2000', '800']);
    const mine = ok(await get(base, s, '/positions/me')) as { marketId: string; side: string }[];
    const positions = mine.map((p) => [p.marketId, p.side]);
    assert.deepEqual(positions.sort(), [[k1, 'long'], [k2, 'short']].sort());
  });

  test('leg validation', async () => {
    const [s] = await clobTraders(base, 1, { options: '1000' }) as [Trader];
    const leg = { market: k1, side: 'buy', quantity: '1', price: '2000' };
    refused(await post(base, s, '/orders/strategy', { legs: [leg] }), 400, 'VALIDATION_ERROR');
    refused(
      await post(base, s, '/orders/strategy', { legs: Array.from({ length: 9 }, () => leg) }),
      400,
      'VALIDATION_ERROR',
    );
    refused(
      await post(base, s, '/orders/strategy', { ...spread(), allOrNone: false }),
      400,
      'VALIDATION_ERROR',
    );
    refused(await post(base, s, '/orders/strategy', { legs: [leg, leg] }), 400, 'VALIDATION_ERROR');
    refused(
      await post(base, s, '/orders/strategy', { legs: [leg, { ...leg, market: 'BTC-01JAN20-1-C' }] }),
      404,
      'NOT_FOUND',
    );
    refused(
      await post(base, s, '/orders/strategy', { legs: [leg, { ...leg, market: k2, price: '800.05' }] }),
      400,
      'INVALID_TICK',
    );
    refused(
      await post(base, s, '/orders/strategy', { legs: [leg, { ...leg, market: k2, quantity: 1 }] }),
      400,
      'INVALID_DECIMAL',
    );
    refused(await post(base, s, '/orders/strategy', { ...spread(), extra: true }), 400, 'VALIDATION_ERROR');
    assert.deepEqual(ok(await get(base, s, '/orders/me')), []);
  });
});

describe('atomicity under concurrency', () => {
  test('racing strategies and takers: every strategy filled both legs or changed nothing', async () => {
    const ROUNDS = 3;
    const STRATEGIES = 5;
    const TAKERS = 3;
    const SUPPLY = 3;
    const funds = '30000';
    for (let round = 0; round < ROUNDS; round++) {
      const [[mm], rest] = await Promise.all([
        clobTraders(base, 1, { options: '500000' }),
        clobTraders(base, STRATEGIES + TAKERS, { options: funds }),
      ]);
      const strategists = rest.slice(0, STRATEGIES) as Trader[];
      const takers = rest.slice(STRATEGIES) as Trader[];
      const rests = (body: Record<string, unknown>) => post(base, mm!, '/options/orders', body);
      const ask = { marketId: k1, side: 'sell', quantity: '1', price: '2000' };
      for (let i = 0; i < SUPPLY; i++) ok(await rests(ask), 201);
      ok(await rests({ marketId: k2, side: 'buy', quantity: String(STRATEGIES), price: '800' }), 201);
      const take = { marketId: k1, side: 'buy', quantity: '1', price: '2000', timeInForce: 'ioc' };
      const requests: Promise<Reply>[] = [];
      for (let i = 0; i < Math.max(STRATEGIES, TAKERS); i++) {
        if (i < STRATEGIES) requests.push(post(base, strategists[i]!, '/orders/strategy', spread()));
        if (i < TAKERS) requests.push(post(base, takers[i]!, '/options/orders', take));
      }
      const replies = await Promise.all(requests);
      let filledStrategies = 0;
      for (const s of strategists) {
        const orders = ok(await get(base, s, '/orders/me'));
        const positions = ok(await get(base, s, '/positions/me'));
        if (orders.length === 0) {
          assert.deepEqual(positions, []);
          assert.deepEqual(await asset(base, s, 'options'), { available: funds, locked: '0', total: funds });
          continue;
        }
        filledStrategies++;
        assert.deepEqual(
          orders.map((o: { status: string; filledQuantity: string }) => [o.status, o.filledQuantity]),
          [['filled', '1'], ['filled', '1']],
        );
        assert.deepEqual(positions.map((p: { marketId: string; side: string; size: string }) => [
          p.marketId,
          p.side,
          p.size,
        ]).sort(),
          [[k1, 'long', '1'], [k2, 'short', '1']].sort());
      }
      const expected = (r: Reply) => r.status === 200 || r.status === 201
        || (r.status === 422 && ['STRATEGY_NOT_FILLED', 'NO_LIQUIDITY'].includes(r.body.error));
      for (const r of replies) assert.ok(expected(r), JSON.stringify(r.body));
      const takerFills = replies.filter((r) => r.status === 201).length;
      assert.equal(replies.filter((r) => r.status === 200).length, filledStrategies);
      const mmOrders = ok(await get(base, mm!, '/orders/me?limit=50'));
      const filledOn = (market: string) => mmOrders.filter((o: { marketId: string }) => o.marketId === market)
        .reduce((s: bigint, o: { filledQuantity: string }) => s + fx(o.filledQuantity), 0n);
      assert.equal(filledOn(k1), fx(String(filledStrategies + takerFills)));
      assert.equal(filledOn(k2), fx(String(filledStrategies)));
      assert.equal(filledStrategies + takerFills, SUPPLY);
      ok(await post(base, mm!, '/orders/cancel-all'));
    }
  });
});
