/**
 * Spot trading over real HTTP (contract "Options and spot trading" and "account reads";
 * decisions.md "Orders and positions", "Errors"): spot pairs in the market list at the index,
 * a trade end to end between two accounts (locks in /wallet/assets, the swap and fees in the
 * balances, the order and fill lists, the book), preview agreeing with the live order, cancel one
 * (404 for unknown and other accounts' ids, 409 once ended) and cancel-all with filters, duplicate
 * client ids, access tiers, and hostile inputs refused with their exact codes and nothing changed.
 *
 * How: one real service on loopback (test/support/clob-http.ts: push index feed, SIWE traders
 * funded through the simulated chain, BTC granted by the admin treasury endpoint).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDecimal, fx } from '../../src/core/money.ts';
import { asset, clobService, clobTraders, get, ok, post, refused } from '../support/clob-http.ts';
import { call, type TestService, type Trader } from '../support/harness.ts';

interface Market {
  id: string;
  marketType: string;
  markPrice: string | null;
  baseSymbol: string;
  quoteSymbol: string;
  priceDecimals: number;
  sizeDecimals: number;
}

let svc: TestService;
let base: string;
let buyer: Trader;
let seller: Trader;
let other: Trader;

before(async () => {
  svc = await clobService();
  base = svc.url;
  [buyer, seller, other] = (await clobTraders(base, 3, { spot: '50000', btc: '2', eth: '10' })) as [
    Trader,
    Trader,
    Trader,
  ];
});

after(async () => {
  await svc.close();
});

const order = (t: Trader, fields: Record<string, unknown>) => post(
  base,
  t,
  '/orders',
  { marketId: 'BTC-USDC', ...fields },
);
const minus = (a: string, b: string) => formatDecimal(fx(a) - fx(b));

describe('markets', () => {
  test('spot pairs are in the market list and its alias, marked at the index', async () => {
    for (const path of ['/perps/markets', '/markets/linear']) {
      const list = ok(await call(base, path)) as Market[];
      const btc = list.find((m) => m.id === 'BTC-USDC');
      assert.deepEqual(
        btc && [
          btc.marketType,
          btc.markPrice,
          btc.baseSymbol,
          btc.quoteSymbol,
          btc.priceDecimals,
          btc.sizeDecimals,
        ],
        ['spot', '100000', 'BTC', 'USDC', 2, 5],
      );
      assert.equal(list.find((m) => m.id === 'ETH-USDC')?.markPrice, '3000');
    }
    const fees = ok(await call(base, '/spot/fees')) as { makerBps: string; takerBps: string }[];
    assert.deepEqual([fees[0]!.makerBps, fees[0]!.takerBps], ['2', '5']);
  });
});

describe('a spot trade end to end', () => {
  test('locks, swap, fees, lists and the book', async () => {
    const buyerBefore = await asset(base, buyer, 'spot');
    const sellerBefore = await asset(base, seller, 'spot');
    const ask = ok(
      await order(seller, { side: 'sell', quantity: '0.2', price: '100000', clientOrderId: 'ask-1' }),
      201,
    );
    assert.equal(ask.status, 'open');
    assert.deepEqual(
      await asset(base, seller, 'spot', 'BTC'),
      { available: '1.8', locked: '0.2', total: '2' },
    );
    const book = ok(await call(base, '/orderbook/BTC-USDC?depth=5'));
    assert.deepEqual(book, { bids: [], asks: [['100000', '0.2']] });
    assert.deepEqual(ok(await call(base, '/options/orderbook/BTC-USDC')), book);

    const preview = ok(await post(
      base,
      buyer,
      '/orders/preview',
      { marketId: 'BTC-USDC', side: 'buy', quantity: '0.1', price: '100500', timeInForce: 'ioc' },
    ));
    assert.equal(preview.approved, true);
    assert.equal(preview.feeRole, 'taker');
    const bid = ok(
      await order(buyer, { side: 'buy', quantity: '0.1', price: '100500', timeInForce: 'ioc' }),
      201,
    );
    assert.equal(bid.status, 'filled');
    assert.deepEqual(
      bid.fills.map((f: { price: string; quantity: string; liquidity: string; fee: string }) => [
        f.price,
        f.quantity,
        f.liquidity,
        f.fee,
      ]),
      [['100000', '0.1', 'taker', '5']],
    );
    assert.equal(preview.estFee, '5');
    assert.equal(bid.position, null);
    assert.deepEqual(
      await asset(base, buyer, 'spot'),
      { available: minus(buyerBefore.total, '10005'), locked: '0', total: minus(buyerBefore.total, '10005') },
    );
    assert.deepEqual(
      await asset(base, buyer, 'spot', 'BTC'),
      { available: '2.1', locked: '0', total: '2.1' },
    );
    assert.equal(
      (await asset(base, seller, 'spot')).total,
      minus(formatDecimal(fx(sellerBefore.total) + fx('10000')), '2'),
    );
    assert.deepEqual(
      await asset(base, seller, 'spot', 'BTC'),
      { available: '1.8', locked: '0.1', total: '1.9' },
    );

    const balances = ok(await get(base, seller, '/portfolio/balances'));
    assert.deepEqual(
      Object.keys(balances).sort(),
      ['options', 'pendingWithdrawalTotal', 'perps', 'spot', 'spotAssets', 'updatedAt', 'wallet'],
    );
    assert.equal(balances.spot.total, (await asset(base, seller, 'spot')).total);
    assert.deepEqual(
      balances.spotAssets.find((a: { asset: string }) => a.asset === 'BTC'),
      { asset: 'BTC', available: '1.8', locked: '0.1', total: '1.9' },
    );

    const mine = ok(await get(base, seller, '/orders/me?marketId=BTC-USDC&limit=5'));
    assert.equal(mine[0].id, ask.id);
    assert.equal(mine[0].filledQuantity, '0.1');
    assert.deepEqual(
      ok(await get(base, seller, '/options/orders/me?status=open')).map((o: { id: string }) => o.id),
      [ask.id],
    );
    const trades = ok(await get(base, buyer, '/options/trades/me?limit=1'));
    assert.deepEqual(
      [trades[0].orderId, trades[0].side, trades[0].price, trades[0].fee],
      [bid.id, 'buy', '100000', '5'],
    );
    const open = ok(await get(base, seller, '/orders/open'));
    assert.deepEqual(open.map((o: { id: string }) => o.id), [ask.id]);

    const cancelled = ok(await post(base, seller, `/orders/${ask.id}/cancel`));
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(
      await asset(base, seller, 'spot', 'BTC'),
      { available: '1.9', locked: '0', total: '1.9' },
    );
    refused(await post(base, seller, `/orders/${ask.id}/cancel`), 409, 'CONFLICT');
    refused(await post(base, seller, `/options/orders/${ask.id}/cancel`), 409, 'CONFLICT');
    refused(await post(base, seller, '/orders/999999/cancel'), 404, 'NOT_FOUND');
  });

  test('cancel-all with filters; other accounts\' orders are not found', async () => {
    const a = ok(
      await order(other, { side: 'buy', quantity: '0.01', price: '90000', clientOrderId: 'c-a' }),
      201,
    );
    const b = ok(
      await post(
        base,
        other,
        '/orders',
        { marketId: 'ETH-USDC', side: 'buy', quantity: '0.01', price: '2900' },
      ),
      201,
    );
    const c = ok(await order(other, { side: 'buy', quantity: '0.01', price: '90001' }), 201);
    refused(await post(base, seller, `/orders/${a.id}/cancel`), 404, 'NOT_FOUND');
    refused(await post(base, seller, `/options/orders/${a.id}/modify`, { price: '90002' }), 404, 'NOT_FOUND');
    assert.deepEqual(
      ok(await post(base, other, '/orders/cancel-all', { clientOrderId: 'c-a' })),
      { cancelled: [a.id] },
    );
    assert.deepEqual(
      ok(await post(base, other, '/orders/cancel-all', { underlying: 'ETH' })),
      { cancelled: [b.id] },
    );
    assert.deepEqual(
      ok(await post(base, other, '/options/orders/cancel-all', { marketId: 'BTC-USDC' })),
      { cancelled: [c.id] },
    );
    assert.deepEqual(ok(await post(base, other, '/orders/cancel-all')), { cancelled: [] });
    assert.equal((await asset(base, other, 'spot')).locked, '0');
    // An unknown market is 404, as on /perps/orders/cancel-all (before: 200, "nothing to cancel").
    refused(await post(base, other, '/orders/cancel-all', { marketId: 'NOPE-USDC' }), 404, 'NOT_FOUND');
  });
});

describe('refusals', () => {
  test('hostile inputs and business refusals leave balances unchanged', async () => {
    const before = await asset(base, other, 'spot');
    const cases: [Record<string, unknown>, number, string][] = [
      [{ side: 'buy', quantity: 1, price: '100000' }, 400, 'INVALID_DECIMAL'],
      [{ side: 'buy', quantity: '1e-2', price: '100000' }, 400, 'INVALID_DECIMAL'],
      [{ side: 'buy', quantity: '.01', price: '100000' }, 400, 'INVALID_DECIMAL'],
      [{ side: 'buy', quantity: '0.01', price: '-100000' }, 400, 'INVALID_DECIMAL'],
      [{ side: 'buy', quantity: '0', price: '100000' }, 400, 'INVALID_DECIMAL'],
      // decimals come before the market's precision (a zero quantity beside a price off the tick)
      [{ side: 'buy', quantity: '0', price: '100000.001' }, 400, 'INVALID_DECIMAL'],
      [{ side: 'buy', quantity: '0.01', price: '100000.001' }, 400, 'INVALID_TICK'],
      [{ side: 'buy', quantity: '0.000001', price: '100000' }, 400, 'INVALID_STEP'],
      [{ side: 'buy', quantity: '0.01', price: '100000', marginMode: 'cross' }, 400, 'VALIDATION_ERROR'],
      [{ side: 'buy', quantity: '0.01', price: '100000', stopPrice: '1' }, 400, 'VALIDATION_ERROR'],
      [{ side: 'hold', quantity: '0.01', price: '100000' }, 400, 'VALIDATION_ERROR'],
      [
        { side: 'buy', quantity: '0.01', price: '100000', reduceOnly: true, timeInForce: 'ioc' },
        400,
        'VALIDATION_ERROR',
      ],
      [{ side: 'buy', quantity: '0.01' }, 400, 'VALIDATION_ERROR'],
      [{ side: 'buy', quantity: '0.00009', price: '100000' }, 422, 'SIZE_OUT_OF_RANGE'],
      [{ side: 'buy', quantity: '0.01', price: '110000.01' }, 422, 'PRICE_OUT_OF_BAND'],
      // above the market's price ceiling (a sell has no band above the index): refused, never a book assertion
      [{ side: 'sell', quantity: '0.01', price: '99999999999999999999' }, 422, 'PRICE_OUT_OF_BAND'],
      [{ side: 'sell', quantity: '0.01', price: '99999999999999999999', timeInForce: 'ioc' }, 422, 'PRICE_OUT_OF_BAND'],
      // more fraction digits than the market's precision, trailing zeros included
      [{ side: 'buy', quantity: '0.0100000', price: '100000' }, 400, 'INVALID_STEP'],
      [{ side: 'buy', quantity: '0.01', price: '100000.000' }, 400, 'INVALID_TICK'],
      [{ side: 'buy', quantity: '1', price: '100000' }, 400, 'INSUFFICIENT_BALANCE'],
      [{ side: 'sell', quantity: '10.1', price: '100000' }, 400, 'INSUFFICIENT_BALANCE'],
      [{ side: 'buy', quantity: '0.01', price: '1', timeInForce: 'fok' }, 422, 'FOK_NOT_FILLED'],
      [{ side: 'buy', quantity: '0.01', price: '1', timeInForce: 'ioc' }, 422, 'NO_LIQUIDITY'],
      [{ side: 'buy', quantity: '0.01', type: 'market' }, 422, 'NO_LIQUIDITY'],
    ];
    for (const [body, status, code] of cases) refused(await order(other, body), status, code);
    const crossed = { marketId: 'BTC-USDC', bid: { price: '100100', quantity: '0.01' }, ask: { price: '100000', quantity: '0.01' } };
    refused(await post(base, other, '/quotes', crossed), 400, 'VALIDATION_ERROR');
    const ladder = [{ side: 'buy', price: '99000', quantity: '0.01' }, { side: 'sell', price: '99000', quantity: '0.01' }];
    refused(await post(base, other, '/quotes/bulk', { marketId: 'BTC-USDC', quotes: ladder }), 400, 'VALIDATION_ERROR');
    // A cancelAll ladder with fixed client ids sent twice replaces itself (before: the retry's levels
    // were refused DUPLICATE_CLIENT_ORDER_ID after the first ladder was cancelled: no quotes left).
    const fixed = { marketId: 'BTC-USDC', quoteId: 'fixed', cancelAll: true, quotes: [
      { side: 'buy', price: '90000', quantity: '0.01', clientOrderId: 'spot-bid-1' },
      { side: 'sell', price: '110000', quantity: '0.01', clientOrderId: 'spot-ask-1' },
    ] };
    const first = ok(await post(base, other, '/quotes/bulk', fixed));
    const again = ok(await post(base, other, '/quotes/bulk', fixed));
    assert.deepEqual([again.rejected, again.orders.length], [[], 2]);
    assert.deepEqual(again.cancelled.sort(), first.orders.map((o: { id: string }) => o.id).sort());
    ok(await post(base, other, '/orders/cancel-all', { quoteId: 'fixed' }));
    refused(
      await post(base, other, '/orders', { marketId: 'DOGE-USDC', side: 'buy', quantity: '1', price: '1' }),
      404,
      'NOT_FOUND',
    );
    assert.deepEqual(await asset(base, other, 'spot'), before);
  });

  test('post-only, duplicate client ids and self-trade prevention', async () => {
    const ask = ok(await order(seller, { side: 'sell', quantity: '0.01', price: '100100' }), 201);
    refused(
      await order(other, { side: 'buy', quantity: '0.01', price: '100100', postOnly: true }),
      422,
      'POST_ONLY_WOULD_CROSS',
    );
    ok(await order(other, { side: 'buy', quantity: '0.01', price: '90000', clientOrderId: 'dup-1' }), 201);
    refused(
      await order(other, { side: 'buy', quantity: '0.01', price: '90000', clientOrderId: 'dup-1' }),
      409,
      'DUPLICATE_CLIENT_ORDER_ID',
    );
    // cancel_taker stops before the caller's own ask: nothing to fill, nothing rests.
    refused(
      await order(
        seller,
        {
          side: 'buy',
          quantity: '0.01',
          price: '100100',
          timeInForce: 'ioc',
          selfTradePrevention: 'cancel_taker',
        },
      ),
      422,
      'NO_LIQUIDITY',
    );
    ok(await order(other, { side: 'sell', quantity: '0.01', price: '100200' }), 201);
    // cancel_maker (the default) cancels the caller's own ask and trades with the next one.
    const own = ok(
      await order(seller, { side: 'buy', quantity: '0.01', price: '100200', timeInForce: 'ioc' }),
      201,
    );
    assert.equal(own.status, 'filled');
    assert.equal(own.fills[0].price, '100200');
    const mine = ok(await get(base, seller, '/orders/me?limit=3'));
    assert.equal(mine.find((o: { id: string }) => o.id === ask.id).status, 'cancelled');
    refused(await post(base, seller, `/orders/${ask.id}/cancel`), 409, 'CONFLICT');
    ok(await post(base, other, '/orders/cancel-all'));
  });

  test('a market order carries the contract\'s price as the worst it accepts: the sweep stops there', async () => {
    const near = ok(await order(seller, { side: 'sell', quantity: '0.01', price: '100000' }), 201);
    const far = ok(await order(seller, { side: 'sell', quantity: '0.01', price: '100200' }), 201);
    const body = { side: 'buy', type: 'market', quantity: '0.02', price: '100100' };
    const preview = ok(await post(base, buyer, '/orders/preview', { marketId: 'BTC-USDC', ...body }));
    assert.equal(preview.notional, '1000');
    const placed = ok(await order(buyer, body), 201);
    assert.deepEqual(placed.fills.map((f: { price: string }) => f.price), ['100000']);
    assert.equal(placed.status, 'cancelled', 'the rest, beyond its price, is not filled');
    assert.equal(placed.filledQuantity, '0.01');
    refused(await post(base, seller, `/orders/${near.id}/cancel`), 409, 'CONFLICT');
    ok(await post(base, seller, `/orders/${far.id}/cancel`));
  });

  test('access tiers: read keys preview but cannot trade; single quotes need a session', async () => {
    const key = (scope: string) => post(base, other, '/perps/me/api-keys', { name: `k-${scope}`, scope });
    const read = ok(await key('read'), 201).secret as string;
    const trade = ok(await key('trade'), 201).secret as string;
    const body = { marketId: 'BTC-USDC', side: 'buy', quantity: '0.01', price: '90000' };
    refused(await call(base, '/orders', { body, apiKey: read }), 403, 'INSUFFICIENT_SCOPE');
    assert.equal(ok(await call(base, '/orders/preview', { body, apiKey: read })).approved, true);
    const placed = ok(await call(base, '/orders', { body, apiKey: trade }), 201);
    ok(await call(base, `/orders/${placed.id}/cancel`, { method: 'POST', apiKey: trade }));
    refused(
      await call(
        base,
        '/quotes',
        { body: { marketId: 'BTC-USDC', bid: { price: '90000', quantity: '0.01' } }, apiKey: trade },
      ),
      403,
      'FORBIDDEN',
    );
    refused(await call(base, '/orders', { body }), 401, 'UNAUTHENTICATED');
    assert.equal((await call(base, '/orders/me', { apiKey: read })).status, 200);
    assert.equal((await call(base, '/portfolio/balances', { apiKey: read })).status, 200);
  });
});
