/**
 * Options over real HTTP: the instrument list, an option trade end to end between two accounts
 * (premium and fees between the options buckets, the buyer's hold, the seller's margin in
 * /wallet/assets, /positions/me and /portfolio/me, the order, trade and book reads and their
 * aliases), preview agreeing with the live order and refusing what the gate refuses, amends
 * (priority kept only for a same-price decrease, 404 / 409 / 400 refusals), single and bulk quotes
 * (cancelAll replaces the ladder), market-maker protection through its endpoints (set, trip,
 * 422 MMP_TRIGGERED, reset), and hostile option inputs.
 *
 * How: one real service on loopback (test/support/clob-http.ts). Absolute margin figures are
 * covered by the unit tests; here the wire figures are checked against each other (preview =
 * what the order then locks) and against the fee schedule.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDecimal, fx } from '../../src/core/money.ts';
import { asset, clobService, clobTraders, get, ok, optionId, post, refused } from '../support/clob-http.ts';
import { call, type TestService, type Trader } from '../support/harness.ts';

let svc: TestService;
let base: string;
let call100: string;
let put95: string;

before(async () => {
  svc = await clobService();
  base = svc.url;
  call100 = await optionId(base, 'BTC', 'call', '100000');
  put95 = await optionId(base, 'BTC', 'put', '95000');
});

after(async () => {
  await svc.close();
});

const plus = (a: string, b: string) => formatDecimal(fx(a) + fx(b));
const order = (t: Trader, market: string, fields: Record<string, unknown>) => post(
  base,
  t,
  '/options/orders',
  { marketId: market, ...fields },
);

describe('instruments', () => {
  test('ladders per expiry with ids, terms and precision', async () => {
    const list = ok(await call(base, '/options/instruments?underlying=BTC'));
    assert.ok(list.length >= 4 * 34);
    const row = list.find((i: { id: string }) => i.id === call100);
    assert.deepEqual(
      [row.type, row.strike, row.tickSize, row.stepSize, row.minSize, row.status],
      ['call', '100000', '0.1', '0.01', '0.01', 'open'],
    );
    assert.match(call100, /^BTC-\d{2}[A-Z]{3}\d{2}-100000-C$/);
    assert.match(row.expiry, /T08:00:00\.000Z$/);
    const fees = ok(await call(base, '/options/fees'));
    assert.deepEqual(
      fees[0],
      { min30dVolumeUsd: '0', makerBps: '1', takerBps: '3', maxFeePctOfPremium: '12.5' },
    );
    refused(await call(base, '/options/instruments?expiry=tomorrow'), 400, 'VALIDATION_ERROR');
    const one = ok(await call(base, `/options/instruments?underlying=BTC&expiry=${row.expiry}`));
    assert.equal(one.length, 34);
    assert.ok(one.every((i: { expiry: string }) => i.expiry === row.expiry));
  });
});

describe('an option trade end to end', () => {
  test('premium, fees, margin, positions, portfolio and lists', async () => {
    const [buyer, seller] = await clobTraders(base, 2, { options: '50000' }) as [Trader, Trader];
    const preview = ok(await post(
      base,
      seller,
      '/options/orders/preview',
      { marketId: call100, side: 'sell', quantity: '1', price: '2000' },
    ));
    assert.equal(preview.approved, true);
    const ask = ok(await order(seller, call100, { side: 'sell', quantity: '1', price: '2000' }), 201);
    assert.equal(ask.status, 'open');
    assert.equal((await asset(base, seller, 'options')).locked, preview.marginRequired);
    assert.deepEqual(
      ok(await call(base, `/options/orderbook/${call100}`)),
      { bids: [], asks: [['2000', '1']] },
    );

    const bid = ok(
      await order(buyer, call100, { side: 'buy', quantity: '1', price: '2000', timeInForce: 'ioc' }),
      201,
    );
    assert.equal(bid.status, 'filled');
    // taker 3 bp of the 100 000 index = 30 (below the 250 cap); maker 1 bp = 10.
    assert.deepEqual(
      bid.fills.map((f: { price: string; fee: string; liquidity: string }) => [f.price, f.fee, f.liquidity]),
      [['2000', '30', 'taker']],
    );
    assert.deepEqual(
      [
        bid.position.side,
        bid.position.size,
        bid.position.entryPrice,
        bid.position.optionType,
        bid.position.strike,
      ],
      ['long', '1', '2000', 'call', '100000'],
    );
    assert.deepEqual(
      await asset(base, buyer, 'options'),
      { available: '47970', locked: '0', total: '47970' },
    );
    const sold = await asset(base, seller, 'options');
    assert.equal(sold.total, '51990');
    assert.equal(plus(sold.available, sold.locked), sold.total);

    const [short] = ok(await get(base, seller, '/positions/me'));
    assert.deepEqual(
      [short.marketId, short.side, short.size, short.entryPrice],
      [call100, 'short', '1', '2000'],
    );
    assert.equal(short.margin, short.initialMargin);
    assert.equal(short.initialMargin, sold.locked);
    assert.ok(fx(short.maintenanceMargin) < fx(short.initialMargin));
    assert.ok(short.markPrice === null || /^\d+(\.\d+)?$/.test(short.markPrice));
    const portfolio = ok(await get(base, seller, '/portfolio/me'));
    assert.deepEqual(
      [portfolio.options.balance, portfolio.options.initialMargin, portfolio.options.positions.length],
      ['51990', sold.locked, 1],
    );
    assert.equal(portfolio.options.available, sold.available);
    const balances = ok(await get(base, buyer, '/portfolio/balances'));
    assert.deepEqual(balances.options, { available: '47970', locked: '0', total: '47970' });

    const trades = ok(await get(base, seller, '/options/trades/me'));
    assert.deepEqual(
      [trades[0].marketId, trades[0].side, trades[0].liquidity, trades[0].fee],
      [call100, 'sell', 'maker', '10'],
    );
    const orders = ok(await get(base, buyer, '/options/orders/me'));
    assert.deepEqual([orders[0].id, orders[0].status], [bid.id, 'filled']);
    assert.deepEqual(ok(await get(base, buyer, '/orders/me')), orders);

    // the seller buys back with a reduce-only ioc: clipped to its short of 1, the position closes.
    ok(await order(buyer, call100, { side: 'sell', quantity: '1', price: '2100' }), 201);
    const close = ok(
      await order(
        seller,
        call100,
        { side: 'buy', quantity: '2', price: '2100', timeInForce: 'ioc', reduceOnly: true },
      ),
      201,
    );
    assert.deepEqual(
      [close.quantity, close.status, close.position.status, close.position.realizedPnl],
      ['1', 'filled', 'closed', '-100'],
    );
    assert.deepEqual(ok(await get(base, seller, '/positions/me')), []);
    assert.equal((await asset(base, seller, 'options')).locked, '0');
  });

  test('preview refuses what the gate refuses, with the figures', async () => {
    const [poor] = await clobTraders(base, 1, { options: '100' }) as [Trader];
    const p = ok(await post(
      base,
      poor,
      '/orders/preview',
      { marketId: put95, side: 'sell', quantity: '1', price: '500' },
    ));
    assert.equal(p.approved, false);
    assert.equal(p.reason, 'INSUFFICIENT_MARGIN');
    assert.ok(fx(p.marginRequired) > fx('100'));
    refused(
      await order(poor, put95, { side: 'sell', quantity: '1', price: '500' }),
      422,
      'INSUFFICIENT_MARGIN',
    );
    assert.deepEqual(await asset(base, poor, 'options'), { available: '100', locked: '0', total: '100' });
  });
});

describe('amends', () => {
  test('priority kept for a same-price decrease; lost on a price change', async () => {
    const [a, c, t] = await clobTraders(base, 3, { options: '20000' }) as [Trader, Trader, Trader];
    const first = ok(await order(a, put95, { side: 'buy', quantity: '1', price: '150' }), 201);
    ok(await order(c, put95, { side: 'buy', quantity: '1', price: '150' }), 201);
    const smaller = ok(await post(base, a, `/options/orders/${first.id}/modify`, { quantity: '0.5' }));
    assert.deepEqual([smaller.id, smaller.quantity, smaller.status], [first.id, '0.5', 'open']);
    assert.equal(
      (await asset(base, a, 'options')).locked,
      formatDecimal(fx('0.5') * (fx('150') + fx('18.75')) / 10n ** 18n),
    );
    ok(await order(t, put95, { side: 'sell', quantity: '0.01', price: '150', timeInForce: 'ioc' }), 201);
    assert.equal(ok(await get(base, a, '/options/orders/open'))[0].filledQuantity, '0.01');
    const moved = ok(await post(
      base,
      a,
      `/options/orders/${first.id}/modify`,
      { price: '150.5', quantity: '0.6' },
    ));
    assert.deepEqual(
      [moved.id, moved.price, moved.quantity, moved.filledQuantity, moved.remainingQuantity],
      [first.id, '150.5', '0.6', '0.01', '0.59'],
    );
    // the order history shows the amended price and size, as the live reads do
    const listed = ok(await get(base, a, '/options/orders/me')).find((o: { id: string }) => o.id === first.id);
    assert.deepEqual([listed.price, listed.quantity, listed.remainingQuantity], ['150.5', '0.6', '0.59']);
    // reads answer the whole Order object: the order's fills so far and the option position now
    assert.deepEqual(listed.fills.map((f: { quantity: string; liquidity: string }) => [f.quantity, f.liquidity]), [['0.01', 'maker']]);
    assert.equal(listed.position.size, '0.01');
    const open = ok(await get(base, a, '/options/orders/open')).find((o: { id: string }) => o.id === first.id);
    assert.deepEqual(open, listed);
    refused(await post(base, c, `/options/orders/${first.id}/modify`, { price: '151' }), 404, 'NOT_FOUND');
    refused(await post(base, a, `/options/orders/${first.id}/modify`, {}), 400, 'VALIDATION_ERROR');
    refused(
      await post(base, a, `/options/orders/${first.id}/modify`, { price: '151.05' }),
      400,
      'INVALID_TICK',
    );
    refused(await post(base, a, '/options/orders/999999/modify', { price: '151' }), 404, 'NOT_FOUND');
    ok(await post(base, a, `/options/orders/${first.id}/cancel`));
    refused(await post(base, a, `/options/orders/${first.id}/modify`, { price: '151' }), 409, 'CONFLICT');
    ok(await post(base, c, '/orders/cancel-all', { underlying: 'BTC' }));
  });
});

describe('quotes and market-maker protection', () => {
  test('bulk ladders replace atomically; single quotes replace by quoteId', async () => {
    const [mm] = await clobTraders(base, 1, { options: '200000' }) as [Trader];
    const ladder = (prices: string[]) => ({
      marketId: call100, quoteId: 'ladder', cancelAll: true,
      quotes: prices.map((p, i) => ({
        side: i % 2 === 0 ? 'sell' : 'buy',
        price: p,
        quantity: '1',
        postOnly: true,
      })),
    });
    const one = ok(await post(base, mm, '/quotes/bulk', ladder(['2600', '1500'])));
    assert.equal(one.orders.length, 2);
    const two = ok(await post(base, mm, '/options/quotes/bulk', ladder(['2700', '1400'])));
    assert.deepEqual(two.cancelled.sort(), one.orders.map((o: { id: string }) => o.id).sort());
    assert.deepEqual(ok(await call(base, `/orderbook/${call100}`)).asks[0], ['2700', '1']);
    const single = ok(await post(
      base,
      mm,
      '/options/quotes',
      {
        marketId: put95,
        quoteId: 'q1',
        bid: { price: '100', quantity: '1' },
        ask: { price: '300', quantity: '1' },
      },
    ));
    const again = ok(await post(
      base,
      mm,
      '/quotes',
      { marketId: put95, quoteId: 'q1', bid: { price: '110', quantity: '1' } },
    ));
    assert.deepEqual(again.cancelled.sort(), single.orders.map((o: { id: string }) => o.id).sort());
    const crossing = ok(await post(
      base,
      mm,
      '/quotes/bulk',
      {
        marketId: put95,
        quotes: [
          { side: 'buy', price: '90', quantity: '1' },
          { side: 'sell', price: '105', quantity: '1', postOnly: true },
        ],
      },
    ));
    assert.deepEqual(
      crossing.rejected.map((r: { index: number; error: string }) => [r.index, r.error]),
      [[1, 'POST_ONLY_WOULD_CROSS']],
    );
    ok(await post(base, mm, '/orders/cancel-all'));
  });

  test('a ladder level may carry the contract\'s marginMode; only cross applies, isolated is that level\'s rejection', async () => {
    const [mm] = await clobTraders(base, 1, { options: '200000' }) as [Trader];
    const out = ok(await post(base, mm, '/options/quotes/bulk', {
      marketId: put95,
      quotes: [
        { side: 'buy', price: '20', quantity: '1', marginMode: 'cross' },
        { side: 'buy', price: '10', quantity: '1', marginMode: 'isolated' },
      ],
    }));
    assert.equal(out.orders.length, 1);
    assert.equal(out.orders[0].marginMode, 'cross');
    assert.deepEqual(
      out.rejected.map((r: { index: number; error: string }) => [r.index, r.error]),
      [[1, 'VALIDATION_ERROR']],
    );
    ok(await post(base, mm, '/orders/cancel-all'));
  });

  test('a trip cancels the quotes and refuses new ones until reset', async () => {
    const [mm, taker] = await clobTraders(base, 2, { options: '200000' }) as [Trader, Trader];
    const set = ok(await post(
      base,
      mm,
      '/options/mmp',
      { underlying: 'BTC', windowMs: 60000, frozenMs: 60000, quantityLimit: '1' },
    ));
    assert.deepEqual(
      [set[0].underlying, set[0].frozen, set[0].quantityLimit, set[0].deltaLimit],
      ['BTC', false, '1', null],
    );
    ok(await post(
      base,
      mm,
      '/quotes/bulk',
      { marketId: call100, quotes: [{ side: 'sell', price: '2800', quantity: '3' }] },
    ));
    ok(await post(
      base,
      mm,
      '/quotes/bulk',
      { marketId: put95, quotes: [{ side: 'buy', price: '50', quantity: '3' }] },
    ));
    ok(await order(taker, call100, { side: 'buy', quantity: '1', price: '2800', timeInForce: 'ioc' }), 201);
    assert.deepEqual(ok(await get(base, mm, '/orders/open')), []);
    const state = ok(await get(base, mm, '/options/mmp'));
    assert.equal(state[0].frozen, true);
    assert.match(state[0].frozenUntil, /Z$/);
    refused(
      await post(
        base,
        mm,
        '/quotes/bulk',
        { marketId: call100, quotes: [{ side: 'sell', price: '2900', quantity: '1' }] },
      ),
      422,
      'MMP_TRIGGERED',
    );
    ok(
      await order(mm, call100, { side: 'sell', quantity: '1', price: '2900' }),
      201,
    ); // plain orders still trade
    const reset = ok(await post(base, mm, '/options/mmp/reset', { underlying: 'BTC' }));
    assert.equal(reset[0].frozen, false);
    ok(await post(
      base,
      mm,
      '/quotes/bulk',
      { marketId: call100, quotes: [{ side: 'sell', price: '2950', quantity: '1' }] },
    ));
    refused(
      await post(
        base,
        mm,
        '/options/mmp',
        { underlying: 'BTC', windowMs: 1000, frozenMs: 0, quantityLimit: '1', extra: 1 },
      ),
      400,
      'VALIDATION_ERROR',
    );
    refused(
      await post(
        base,
        mm,
        '/options/mmp',
        { underlying: 'BTC', windowMs: 1000, frozenMs: 0, quantityLimit: 1 },
      ),
      400,
      'INVALID_DECIMAL',
    );
    refused(await post(base, mm, '/options/mmp/reset', { underlying: 'DOGE' }), 404, 'NOT_FOUND');
    ok(await post(
      base,
      mm,
      '/options/mmp',
      { underlying: 'BTC', windowMs: 0, frozenMs: 0, quantityLimit: '1' },
    ));
    assert.deepEqual(ok(await get(base, mm, '/options/mmp')), []);
    ok(await post(base, mm, '/orders/cancel-all'));
  });
});

describe('hostile option inputs', () => {
  test('ticks, steps, bounds, reduce-only and unknown fields', async () => {
    const [t] = await clobTraders(base, 1, { options: '10000' }) as [Trader];
    const cases: [Record<string, unknown>, number, string][] = [
      [{ marketId: call100, side: 'buy', quantity: '1', price: '100.05' }, 400, 'INVALID_TICK'],
      [{ marketId: call100, side: 'buy', quantity: '0.001', price: '100' }, 400, 'INVALID_STEP'],
      [
        { marketId: call100, side: 'buy', quantity: '1', price: '100', reduceOnly: true },
        400,
        'VALIDATION_ERROR',
      ],
      [
        { marketId: call100, side: 'buy', quantity: '1', price: '100', leverage: 10 },
        400,
        'VALIDATION_ERROR',
      ],
      [{ marketId: put95, side: 'buy', quantity: '0.01', price: '95000.1' }, 422, 'PRICE_OUT_OF_BAND'],
      [
        {
          marketId: call100,
          side: 'sell',
          quantity: '1',
          price: '100',
          timeInForce: 'ioc',
          reduceOnly: true,
        },
        422,
        'REDUCE_ONLY_REJECTED',
      ],
      [
        { marketId: call100, side: 'buy', quantity: '1', price: '100', postOnly: true, timeInForce: 'ioc' },
        400,
        'VALIDATION_ERROR',
      ],
      [{ marketId: 'BTC-01JAN20-1-C', side: 'buy', quantity: '1', price: '100' }, 404, 'NOT_FOUND'],
    ];
    for (const [body, status, code] of cases) refused(await post(base, t, '/orders', body), status, code);
    assert.deepEqual(await asset(base, t, 'options'), { available: '10000', locked: '0', total: '10000' });
  });
});
