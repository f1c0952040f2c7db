/**
 * Perpetuals and dated futures over real HTTP (contract "Perpetuals and futures trading", "Perps
 * account reads"; decisions.md "Orders and positions"): market lists and their alias, order book
 * snapshots and depth bounds, the fee schedule, placing orders (fills and position in the 201),
 * preview agreeing with the live order that follows, two-sided and bulk quotes (cancelAll replaces
 * the ladder atomically: no reader ever sees the book in between), cancel one / cancel all with
 * each filter, position close, and the account reads with their filters and paging.
 *
 * How: one real service on loopback (temp SQLite, push index feed, no market maker, the clock tick
 * slowed to a minute so marks only move when a test publishes an index), traders signed in with
 * SIWE and funded through the simulated chain, then wallet -> perps. Each test uses fresh traders
 * and cancels its resting orders at the end so the book is empty for the next one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDecimal, fx } from '../../src/core/money.ts';
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
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;
const ORDER_FIELDS = [
  'id', 'clientOrderId', 'marketId', 'side', 'type', 'price', 'quantity', 'filledQuantity',
  'remainingQuantity', 'avgFillPrice', 'status', 'timeInForce', 'postOnly', 'reduceOnly', 'marginMode',
  'stopPrice', 'takeProfitPrice', 'stopLossPrice', 'quoteId', 'rejectReason', 'createdAt', 'updatedAt',
];
const POSITION_FIELDS = [
  'id', 'marketId', 'side', 'size', 'entryPrice', 'markPrice', 'unrealizedPnl', 'realizedPnl',
  'liquidationPrice', 'leverage', 'marginMode', 'margin', 'status', 'updatedAt',
];
/** Exact decimal arithmetic on wire strings (never floats). */
const sum = (values: string[]) => formatDecimal(values.reduce((s, v) => s + fx(v), 0n));
const times = (a: string, b: string) => formatDecimal((fx(a) * fx(b)) / 10n ** 18n);
const minus = (a: string, b: string) => formatDecimal(fx(a) - fx(b));
/** A parsed JSON body (the wire shapes are asserted field by field). */
type Json = Reply['body'];
const TRADE_FIELDS = [
  'tradeId', 'orderId', 'marketId', 'side', 'price', 'quantity', 'liquidity', 'fee', 'feeBps', 'realizedPnl',
  'createdAt',
];

let svc: TestService;
let base: string;

before(async () => {
  svc = await startService(ENV);
  base = svc.url;
  const body = { underlying: 'BTC', price: '100000' };
  const r = await call(base, '/admin/index', { body, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});

after(async () => {
  await svc.close();
});

/** Signed-in traders with `perps` USDC in their perps bucket. */
async function traders(n: number, perps = '100000'): Promise<Trader[]> {
  return Promise.all(Array.from({ length: n }, async () => {
    const t = await signIn(base);
    await fund(base, t, perps);
    const body = { from: 'wallet', to: 'perps', amount: perps };
    const r = await call(base, '/wallet/transfer', { token: t.token, body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return t;
  }));
}

const post = (t: Trader, path: string, body?: unknown) =>
  call(base, path, { method: 'POST', token: t.token, body });
const get = (t: Trader, path: string) => call(base, path, { token: t.token });
const order = (t: Trader, fields: Record<string, unknown>) =>
  post(t, '/perps/orders', { marketId: BTC, ...fields });

function created(reply: Reply, status = 201): Json {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  return reply.body;
}

function assertError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, code, reply.body.message);
}

async function book(marketId = BTC, query = ''): Promise<{ bids: string[][]; asks: string[][] }> {
  return created(await call(base, `/perps/orderbook/${marketId}${query}`), 200);
}

/** Cancels every resting order of these traders (the book is shared by all tests). */
async function clear(...ts: Trader[]): Promise<void> {
  for (const t of ts) created(await post(t, '/perps/orders/cancel-all'), 200);
}

async function balances(t: Trader): Promise<Record<string, string>> {
  return created(await get(t, '/perps/balances'), 200);
}

describe('market data', () => {
  test('/perps/markets = /markets/linear: perps, and dated futures with an ISO expiry', async () => {
    const [a, b] = await Promise.all([call(base, '/perps/markets'), call(base, '/markets/linear')]);
    const list = created(a, 200) as Json[];
    assert.deepEqual(created(b, 200), list);
    const btc = list.find((m) => m.id === BTC);
    assert.equal(btc.marketType, 'perp');
    assert.equal('expiry' in btc, false, 'perpetuals carry no expiry');
    assert.equal(btc.markPrice, '100000');
    const shape = [btc.priceDecimals, btc.sizeDecimals, btc.baseSymbol, btc.quoteSymbol];
    assert.deepEqual(shape, [1, 4, 'BTC', 'USDC']);
    assert.equal(btc.indexMarketId, 'BTC-USDC');
    assert.equal(list.find((m) => m.id === 'ETH-PERP').markPrice, null, 'no ETH index, no mark');
    const futures = list.filter((m) => m.marketType === 'future');
    assert.ok(futures.length >= 2, 'dated futures are listed');
    const months = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
    for (const f of futures) {
      assert.match(f.expiry, /^\d{4}-\d{2}-\d{2}T08:00:00\.000Z$/);
      assert.ok(Date.parse(f.expiry) > Date.now(), 'expired futures are not listed');
      const d = new Date(f.expiry);
      const day = String(d.getUTCDate()).padStart(2, '0');
      const code = `${day}${months[d.getUTCMonth()]}${String(d.getUTCFullYear()).slice(2)}`;
      assert.equal(f.id, `${f.baseSymbol}-${code}`, 'the id names the expiry date');
      if (f.baseSymbol === 'BTC') assert.match(f.markPrice, DECIMAL);
    }
    for (const m of list) {
      for (const k of ['id', 'symbol', 'marketType', 'baseSymbol', 'quoteSymbol', 'indexMarketId']) {
        assert.equal(typeof m[k], 'string');
      }
      assert.ok(m.markPrice === null || DECIMAL.test(m.markPrice));
    }
  });

  test('/perps/orderbook: [price, size] levels best first, depth-bounded; bad input 400 / 404', async () => {
    const [m] = await traders(1);
    for (const [side, price, quantity] of [
      ['buy', '99000', '1'], ['buy', '99000', '0.5'], ['buy', '98900', '2'], ['buy', '98800', '1'],
      ['sell', '101100', '1'], ['sell', '101000', '0.25'],
    ]) created(await order(m!, { side, price, quantity }));
    assert.deepEqual(await book(), {
      bids: [['99000', '1.5'], ['98900', '2'], ['98800', '1']],
      asks: [['101000', '0.25'], ['101100', '1']],
    });
    assert.deepEqual(await book(BTC, '?depth=1'), { bids: [['99000', '1.5']], asks: [['101000', '0.25']] });
    assert.equal((await book(BTC, '?depth=5000')).bids.length, 3);
    for (const depth of ['0', '5001', 'abc', '1.5', '-1']) {
      assertError(await call(base, `/perps/orderbook/${BTC}?depth=${depth}`), 400, 'VALIDATION_ERROR');
    }
    assertError(await call(base, '/perps/orderbook/DOGE-PERP'), 404, 'NOT_FOUND');
    assert.deepEqual(await book('ETH-PERP'), { bids: [], asks: [] });
    await clear(m!);
    assert.deepEqual(await book(), { bids: [], asks: [] });
  });

  test('/perps/fees: tiers by 30-day volume as decimal strings, negative maker rate = rebate', async () => {
    const tiers = created(await call(base, '/perps/fees'), 200) as Json[];
    assert.ok(tiers.length >= 2);
    assert.deepEqual(tiers[0], { min30dVolumeUsd: '0', makerBps: '1', takerBps: '5' });
    for (let i = 1; i < tiers.length; i++) {
      assert.ok(fx(tiers[i].min30dVolumeUsd) > fx(tiers[i - 1].min30dVolumeUsd), 'increasing volume');
    }
    assert.ok(tiers.some((t) => t.makerBps.startsWith('-')), 'a rebate tier exists');
  });
});

describe('placing orders', () => {
  test('POST /perps/orders answers 201 with the order, its fills and the resulting position', async () => {
    const [maker, taker] = await traders(2);
    created(await order(maker!, { side: 'sell', price: '100000', quantity: '1' }));
    const taken = await order(taker!, { side: 'buy', price: '100000', quantity: '0.4', timeInForce: 'ioc' });
    const body = created(taken);
    for (const f of [...ORDER_FIELDS, 'fills', 'position']) assert.ok(f in body, `order field ${f}`);
    assert.deepEqual(
      [body.status, body.quantity, body.filledQuantity, body.remainingQuantity, body.avgFillPrice, body.type],
      ['filled', '0.4', '0.4', '0', '100000', 'limit'],
    );
    assert.match(body.createdAt, ISO);
    assert.equal(body.fills.length, 1);
    const fill = body.fills[0];
    const fillFields = ['createdAt', 'fee', 'feeBps', 'liquidity', 'price', 'quantity', 'tradeId'];
    assert.deepEqual(Object.keys(fill).sort(), fillFields);
    const figures = [fill.price, fill.quantity, fill.liquidity, fill.fee, fill.feeBps];
    assert.deepEqual(figures, ['100000', '0.4', 'taker', '20', '5']);
    for (const f of POSITION_FIELDS) assert.ok(f in body.position, `position field ${f}`);
    const pos = body.position;
    const got = [pos.marketId, pos.side, pos.size, pos.entryPrice, pos.status];
    assert.deepEqual(got, [BTC, 'long', '0.4', '100000', 'open']);
    const open = created(await get(maker!, '/perps/orders/open'), 200) as Json[];
    const rest = open.map((o) => [o.remainingQuantity, o.filledQuantity, o.status]);
    assert.deepEqual(rest, [['0.6', '0.4', 'open']]);
    await clear(maker!);
  });

  describe('a preview agrees with the live order that follows', () => {
    interface Case {
      name: string;
      setup?: string[][];
      funds?: string;
      order: Record<string, unknown>;
      reason?: string;
    }
    const cases: Case[] = [
      { name: 'a resting bid (maker)', order: { side: 'buy', price: '99500', quantity: '0.5' } },
      {
        name: 'a market buy (taker)', setup: [['sell', '100000', '0.3']],
        order: { side: 'buy', type: 'market', quantity: '0.3' },
      },
      {
        name: 'an ioc sell that sweeps two levels below the mark',
        setup: [['buy', '99990', '0.1'], ['buy', '99980', '0.2']],
        order: { side: 'sell', price: '99980', quantity: '0.3', timeInForce: 'ioc' },
      },
      {
        name: 'a bid beyond the free collateral', funds: '500',
        order: { side: 'buy', price: '99000', quantity: '1' }, reason: 'INSUFFICIENT_MARGIN',
      },
      {
        name: 'a crossing post-only bid', setup: [['sell', '100000', '1']],
        order: { side: 'buy', price: '100000', quantity: '0.1', postOnly: true },
        reason: 'POST_ONLY_WOULD_CROSS',
      },
      {
        name: 'a reduce-only order when flat',
        order: { side: 'sell', price: '100000', quantity: '0.1', reduceOnly: true },
        reason: 'REDUCE_ONLY_REJECTED',
      },
      {
        name: 'a fill-or-kill larger than the book', setup: [['sell', '100000', '0.1']],
        order: { side: 'buy', price: '100000', quantity: '1', timeInForce: 'fok' }, reason: 'FOK_NOT_FILLED',
      },
    ];
    for (const c of cases) {
      test(c.name, async () => {
        const [maker] = await traders(1);
        const [t] = await traders(1, c.funds ?? '100000');
        for (const [side, price, quantity] of c.setup ?? []) {
          created(await order(maker!, { side, price, quantity }));
        }
        const body = { marketId: BTC, ...c.order };
        const preview = created(await post(t!, '/perps/orders/preview', body), 200);
        const fields = ['approved', 'estFee', 'feeBps', 'feeRole', 'marginRequired', 'notional'];
        fields.push('user30dVolume', 'estimatedPositionSize', 'estimatedEntryPrice', 'estimatedLiquidationPrice', 'estimatedLeverage');
        if (c.reason !== undefined) fields.push('reason');
        assert.deepEqual(Object.keys(preview).filter((k) => k !== 'message').sort(), fields.sort());
        const before = await balances(t!);
        const live = await post(t!, '/perps/orders', body);
        if (c.reason !== undefined) {
          assert.equal(preview.approved, false);
          assert.equal(preview.reason, c.reason);
          assertError(live, 422, c.reason);
        } else {
          assert.equal(preview.approved, true);
          assert.equal('reason' in preview, false);
          const placed = created(live);
          const afterB = await balances(t!);
          if (placed.status === 'open') {
            assert.equal(preview.feeRole, 'maker');
            assert.equal(placed.fills.length, 0);
            assert.equal(preview.notional, times(placed.price, placed.quantity));
            assert.equal(minus(afterB.orderMargin!, before.orderMargin!), preview.marginRequired);
            assert.equal(minus(before.availableMargin!, afterB.availableMargin!), preview.marginRequired);
          } else {
            assert.equal(placed.status, 'filled');
            assert.equal(preview.feeRole, 'taker');
            const fills = placed.fills as { price: string; quantity: string; fee: string }[];
            const traded = sum(fills.map((f) => times(f.price, f.quantity)));
            assert.equal(preview.notional, traded, 'notional = what the fills traded');
            assert.equal(preview.estFee, sum(fills.map((f) => f.fee)), 'estFee = the fees charged');
            const taker = (f: Json) => f.liquidity === 'taker' && f.feeBps === preview.feeBps;
            assert.ok(placed.fills.every(taker));
            // collateral the fill took: initial margin, Json open loss (a fill away from the mark) and fees
            const used = minus(before.availableMargin!, afterB.availableMargin!);
            assert.equal(used, sum([preview.marginRequired, ...fills.map((f) => f.fee)]));
          }
        }
        await clear(maker!, t!);
      });
    }

    test('a maker\'s estFee is the fee its fill is then charged', async () => {
      const [m, t] = await traders(2);
      const body = { marketId: BTC, side: 'buy', price: '99700', quantity: '0.25' };
      const preview = created(await post(m!, '/perps/orders/preview', body), 200);
      const placed = created(await post(m!, '/perps/orders', body));
      created(await order(t!, { side: 'sell', price: '99700', quantity: '0.25', timeInForce: 'ioc' }));
      const trades = created(await get(m!, '/perps/trades'), 200) as Json[];
      assert.equal(trades.length, 1);
      assert.deepEqual([trades[0].orderId, trades[0].liquidity, trades[0].fee, trades[0].feeBps],
        [placed.id, preview.feeRole, preview.estFee, preview.feeBps]);
    });
  });
});

describe('quotes', () => {
  test('POST /perps/quotes places a two-sided quote and replaces the one with the same quoteId', async () => {
    const [t] = await traders(1);
    const first = created(await post(t!, '/perps/quotes', {
      marketId: BTC, quoteId: 'mm-1', postOnly: true,
      bid: { price: '99000', quantity: '0.1' }, ask: { price: '101000', quantity: '0.2' },
    }), 200);
    assert.deepEqual(Object.keys(first).sort(), ['cancelled', 'orders', 'quoteId', 'rejected']);
    assert.deepEqual([first.quoteId, first.cancelled, first.rejected], ['mm-1', [], []]);
    assert.deepEqual(first.orders.map((o: Json) => [o.side, o.status, o.quoteId, o.postOnly]),
      [['buy', 'open', 'mm-1', true], ['sell', 'open', 'mm-1', true]]);
    const second = created(await post(t!, '/perps/quotes', {
      marketId: BTC, quoteId: 'mm-1',
      bid: { price: '99100', quantity: '0.1' }, ask: { price: '100900', quantity: '0.1' },
    }), 200);
    assert.deepEqual(second.cancelled.sort(), first.orders.map((o: Json) => o.id).sort());
    assert.deepEqual(await book(), { bids: [['99100', '0.1']], asks: [['100900', '0.1']] });
    assertError(await post(t!, '/perps/quotes', { marketId: BTC }), 400, 'VALIDATION_ERROR');
    // client ids follow the same grammar as on POST /perps/orders (1-36 of [A-Za-z0-9._:/-])
    for (const clientOrderId of ['', 'has space', 'x'.repeat(37)]) {
      const bad = { marketId: BTC, bid: { price: '98000', quantity: '0.1', clientOrderId } };
      assertError(await post(t!, '/perps/quotes', bad), 400, 'VALIDATION_ERROR');
    }
    await clear(t!);
  });

  test('bulk cancelAll swaps the ladder in one step: cancelled = old ladder, no gap is seen', async () => {
    const [t] = await traders(1);
    const ladder = (bid: number, ask: number) => [0, 1, 2].flatMap((i) => [
      { side: 'buy', price: String(bid - 10 * i), quantity: '0.1', postOnly: true },
      { side: 'sell', price: String(ask + 10 * i), quantity: '0.1', postOnly: true },
    ]);
    const levels = (bid: number, ask: number) => ({
      bids: [0, 1, 2].map((i) => [String(bid - 10 * i), '0.1']),
      asks: [0, 1, 2].map((i) => [String(ask + 10 * i), '0.1']),
    });
    const bulk = (body: Record<string, unknown>) =>
      post(t!, '/perps/quotes/bulk', { marketId: BTC, ...body });
    const first = created(await bulk({ quoteId: 'ladder', quotes: ladder(99000, 101000) }), 200);
    assert.equal(first.orders.length, 6);
    assert.deepEqual(first.rejected, []);
    assert.deepEqual(await book(), levels(99000, 101000));
    // readers poll the book while the ladder is replaced
    let polling = true;
    const seen: string[] = [];
    const poller = (async () => {
      while (polling) seen.push(JSON.stringify(await book()));
    })();
    await new Promise((r) => setTimeout(r, 30));
    const replace = { quoteId: 'ladder', cancelAll: true, quotes: ladder(99500, 100500) };
    const second = created(await bulk(replace), 200);
    assert.deepEqual(await book(), levels(99500, 100500), 'right after the call: only the new ladder');
    await new Promise((r) => setTimeout(r, 30));
    polling = false;
    await poller;
    const previous = first.orders.map((o: Json) => o.id).sort();
    assert.deepEqual(second.cancelled.sort(), previous, 'cancelled = the previous ladder');
    const allowed = new Set([JSON.stringify(levels(99000, 101000)), JSON.stringify(levels(99500, 100500))]);
    assert.ok(seen.length > 2, 'the poller read the book');
    for (const s of seen) assert.ok(allowed.has(s), `a reader saw an intermediate book: ${s}`);
    await clear(t!);
  });

  test('a cancelAll ladder with fixed client ids can be sent again: it replaces itself, never leaves no quotes', async () => {
    const [t] = await traders(1);
    const ladder = {
      marketId: BTC, quoteId: 'fixed', cancelAll: true, quotes: [
        { side: 'buy', price: '98000', quantity: '0.1', postOnly: true, clientOrderId: 'mm-bid-1' },
        { side: 'sell', price: '102000', quantity: '0.1', postOnly: true, clientOrderId: 'mm-ask-1' },
      ],
    };
    const first = created(await post(t!, '/perps/quotes/bulk', ladder), 200);
    assert.equal(first.orders.length, 2);
    // The same request again (a retry after a lost response, or a maker cycling fixed ids). Before:
    // 200 with both levels rejected DUPLICATE_CLIENT_ORDER_ID and the first ladder cancelled: no quotes.
    const again = created(await post(t!, '/perps/quotes/bulk', ladder), 200);
    assert.deepEqual(again.rejected, []);
    assert.deepEqual(again.cancelled.sort(), first.orders.map((o: Json) => o.id).sort());
    assert.deepEqual(await book(), { bids: [['98000', '0.1']], asks: [['102000', '0.1']] });
    // An id still resting outside the replaced ladder stays refused.
    const single = await post(t!, '/perps/orders', { marketId: BTC, side: 'buy', type: 'limit', price: '97000', quantity: '0.1', clientOrderId: 'mm-bid-1' });
    assert.equal(single.status, 409);
    await clear(t!);
  });

  test('a failing bulk level (post-only crossing) is listed with index and code; others stand', async () => {
    const [t, m] = await traders(2);
    created(await order(m!, { side: 'sell', price: '100200', quantity: '1' }));
    const r = created(await post(t!, '/perps/quotes/bulk', {
      marketId: BTC,
      quotes: [
        { side: 'buy', price: '99400', quantity: '0.1', postOnly: true },
        { side: 'buy', price: '100200', quantity: '0.1', postOnly: true },
        { side: 'sell', price: '100600', quantity: '0.1', postOnly: true },
      ],
    }), 200);
    assert.deepEqual(r.rejected.map((x: Json) => [x.index, x.error]), [[1, 'POST_ONLY_WOULD_CROSS']]);
    assert.equal(typeof r.rejected[0].message, 'string');
    const placed = r.orders.map((o: Json) => [o.side, o.price, o.status]);
    assert.deepEqual(placed, [['buy', '99400', 'open'], ['sell', '100600', 'open']]);
    assert.deepEqual(await book(), { bids: [['99400', '0.1']], asks: [['100200', '1'], ['100600', '0.1']] });
    // a malformed level (finer than the step) is a bad request: nothing of the ladder is placed
    const malformed = await post(t!, '/perps/quotes/bulk', {
      marketId: BTC, cancelAll: true,
      quotes: [
        { side: 'buy', price: '99300', quantity: '0.1' },
        { side: 'buy', price: '99200', quantity: '0.00001' },
      ],
    });
    assertError(malformed, 400, 'INVALID_STEP');
    assert.deepEqual(await book(), { bids: [['99400', '0.1']], asks: [['100200', '1'], ['100600', '0.1']] });
    await clear(t!, m!);
  });
});

describe('cancelling', () => {
  test('cancel one: own -> 200; another\'s -> 404; filled or cancelled -> 409; unknown -> 404', async () => {
    const [t, u, m] = await traders(3);
    const resting = created(await order(t!, { side: 'buy', price: '99000', quantity: '0.1' }));
    const other = created(await order(u!, { side: 'buy', price: '98000', quantity: '0.1' }));
    const cancelled = created(await post(t!, `/perps/orders/${resting.id}/cancel`), 200);
    for (const f of [...ORDER_FIELDS, 'fills', 'position']) assert.ok(f in cancelled, `field ${f}`);
    const got = [cancelled.id, cancelled.status, cancelled.remainingQuantity, cancelled.fills];
    assert.deepEqual(got, [resting.id, 'cancelled', '0', []]);
    assertError(await post(t!, `/perps/orders/${resting.id}/cancel`), 409, 'CONFLICT');
    assertError(await post(t!, `/perps/orders/${other.id}/cancel`), 404, 'NOT_FOUND');
    const others = created(await get(u!, '/perps/orders/open'), 200) as Json[];
    assert.equal(others.length, 1, 'the other order still rests');
    created(await order(m!, { side: 'sell', price: '100000', quantity: '0.1' }));
    const take = { side: 'buy', price: '100000', quantity: '0.1', timeInForce: 'ioc' };
    const filled = created(await order(t!, take));
    assert.equal(filled.status, 'filled');
    assertError(await post(t!, `/perps/orders/${filled.id}/cancel`), 409, 'CONFLICT');
    assertError(await post(u!, `/perps/orders/${filled.id}/cancel`), 404, 'NOT_FOUND');
    assertError(await post(t!, '/perps/orders/987654321/cancel'), 404, 'NOT_FOUND');
    assertError(await post(t!, '/perps/orders/abc/cancel'), 400, 'VALIDATION_ERROR');
    await clear(u!);
  });

  test('cancel-all without a body cancels everything; each filter cancels only what it names', async () => {
    const [t] = await traders(1);
    const markets = created(await call(base, '/perps/markets'), 200) as Json[];
    const future = markets.find((x) => x.marketType === 'future' && x.baseSymbol === 'BTC');
    const bid = (price: string, extra: Record<string, unknown> = {}) =>
      order(t!, { side: 'buy', price, quantity: '0.1', ...extra });
    const byCid = created(await bid('99000', { clientOrderId: 'ca-1' }));
    const isolated = created(await bid('98900', { marginMode: 'isolated' }));
    const quoted = created(await post(t!, '/perps/quotes/bulk', {
      marketId: BTC, quoteId: 'qa', quotes: [{ side: 'buy', price: '98800', quantity: '0.1' }],
    }), 200).orders[0];
    const futurePrice = String(Math.floor(Number(future.markPrice) * 0.99));
    const inFuture = created(await bid(futurePrice, { marketId: future.id }));
    const plain = created(await bid('98700'));
    const cancelAll = async (body?: unknown) =>
      created(await post(t!, '/perps/orders/cancel-all', body), 200).cancelled;
    assert.deepEqual(await cancelAll({ clientOrderId: 'ca-1' }), [byCid.id]);
    assert.deepEqual(await cancelAll({ marginMode: 'isolated' }), [isolated.id]);
    assert.deepEqual(await cancelAll({ quoteId: 'qa' }), [quoted.id]);
    assert.deepEqual(await cancelAll({ marketId: future.id }), [inFuture.id]);
    assert.deepEqual(await cancelAll({ marketId: 'ETH-PERP' }), []);
    assert.deepEqual(await cancelAll(), [plain.id]);
    assert.deepEqual(await cancelAll(), []);
    assert.deepEqual(created(await get(t!, '/perps/orders/open'), 200), []);
    assertError(await post(t!, '/perps/orders/cancel-all', { side: 'buy' }), 400, 'VALIDATION_ERROR');
  });
});

describe('closing positions', () => {
  test('close partly, then fully (no quantity); with no position -> 404', async () => {
    const [t, m] = await traders(2);
    created(await order(m!, { side: 'sell', price: '100000', quantity: '1' }));
    created(await order(t!, { side: 'buy', price: '100000', quantity: '1', timeInForce: 'ioc' }));
    created(await order(m!, { side: 'buy', price: '99900', quantity: '0.3' }));
    created(await order(m!, { side: 'buy', price: '99800', quantity: '0.7' }));
    const close = (body: Record<string, unknown>) =>
      post(t!, '/perps/positions/close', { marketId: BTC, ...body });
    const partial = created(await close({ quantity: '0.3' }), 200);
    const got = [partial.side, partial.reduceOnly, partial.status, partial.filledQuantity];
    assert.deepEqual(got, ['sell', true, 'filled', '0.3']);
    assert.deepEqual([partial.position.size, partial.position.side], ['0.7', 'long']);
    const positions = created(await get(t!, '/perps/positions'), 200) as Json[];
    assert.deepEqual(positions.map((p) => [p.marketId, p.size, p.realizedPnl]), [[BTC, '0.7', '-30']]);
    const full = created(await close({}), 200);
    assert.deepEqual([full.type, full.status, full.filledQuantity], ['market', 'filled', '0.7']);
    const closed = [full.position.status, full.position.size, full.position.realizedPnl];
    assert.deepEqual(closed, ['closed', '0', '-170']);
    assert.deepEqual(created(await get(t!, '/perps/positions'), 200), []);
    assertError(await close({}), 404, 'NOT_FOUND');
    assertError(await close({ marketId: 'DOGE-PERP' }), 404, 'NOT_FOUND');
    assertError(await close({ orderType: 'limit' }), 400, 'VALIDATION_ERROR');
    await clear(m!);
  });
});

describe('account reads', () => {
  test('/perps/orders filters by marketId, marginMode and status, pages backwards with before', async () => {
    const [t] = await traders(1);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const mode = i === 2 ? 'isolated' : 'cross';
      const price = String(99000 - 10 * i);
      const placed = await order(t!, { side: 'buy', price, quantity: '0.1', marginMode: mode });
      ids.push(created(placed).id);
    }
    for (const id of [ids[0], ids[3]]) created(await post(t!, `/perps/orders/${id}/cancel`), 200);
    const list = async (q: string) =>
      (created(await get(t!, `/perps/orders${q}`), 200) as Json[]).map((o) => o.id);
    const desc = [...ids].reverse();
    assert.deepEqual(await list(''), desc, 'newest first');
    const page1 = await list('?limit=2');
    assert.deepEqual(page1, desc.slice(0, 2));
    const page2 = await list(`?limit=2&before=${page1[1]}`);
    assert.deepEqual(page2, desc.slice(2, 4));
    assert.deepEqual(await list(`?limit=2&before=${page2[1]}`), desc.slice(4));
    assert.deepEqual(await list('?status=cancelled'), [ids[3], ids[0]]);
    assert.deepEqual(await list('?status=open'), [ids[4], ids[2], ids[1]]);
    assert.deepEqual(await list('?marginMode=isolated'), [ids[2]]);
    assert.deepEqual(await list(`?marketId=${BTC}&limit=500`), desc);
    assert.deepEqual(await list('?marketId=ETH-PERP'), []);
    const bad = ['?limit=0', '?limit=501', '?status=done', '?marginMode=portfolio', '?before=0', '?extra=1'];
    for (const q of bad) {
      assertError(await get(t!, `/perps/orders${q}`), 400, 'VALIDATION_ERROR');
    }
    const open = created(await get(t!, '/perps/orders/open'), 200) as Json[];
    assert.deepEqual(open.map((o) => o.id), [ids[4], ids[2], ids[1]]);
    assert.ok(open.every((o) => o.status === 'open'));
    for (const o of open) for (const f of ORDER_FIELDS) assert.ok(f in o, `open order field ${f}`);
    assert.deepEqual(created(await get(t!, '/perps/orders/open?marketId=ETH-PERP'), 200), []);
    await clear(t!);
  });

  test('/perps/positions, /perps/trades and /perps/balances carry the documented fields', async () => {
    const [t, m] = await traders(2);
    created(await order(m!, { side: 'buy', price: '100000', quantity: '0.2' }));
    const sell = { side: 'sell', price: '100000', quantity: '0.2', timeInForce: 'ioc' };
    const sold = created(await order(t!, { ...sell, marginMode: 'isolated' }));
    const [p] = created(await get(t!, '/perps/positions'), 200) as Json[];
    for (const f of POSITION_FIELDS) assert.ok(f in p, `position field ${f}`);
    const got = [p.marketId, p.side, p.size, p.entryPrice, p.marginMode, p.status];
    assert.deepEqual(got, [BTC, 'short', '0.2', '100000', 'isolated', 'open']);
    assert.equal(p.margin, '400', 'isolated margin: 2 % of 20000 (the 10 USDC taker fee came out of the cross pool)');
    assert.equal(p.leverage, '50', 'the maximum leverage, not above it');
    for (const f of ['markPrice', 'unrealizedPnl', 'liquidationPrice', 'leverage']) {
      assert.match(p[f], DECIMAL);
    }
    assert.match(p.updatedAt, ISO);
    const trades = created(await get(t!, '/perps/trades'), 200) as Json[];
    assert.equal(trades.length, 1);
    for (const f of TRADE_FIELDS) assert.ok(f in trades[0], `trade field ${f}`);
    const tr = trades[0];
    const figures = [tr.orderId, tr.side, tr.price, tr.quantity, tr.liquidity, tr.fee];
    assert.deepEqual(figures, [sold.id, 'sell', '100000', '0.2', 'taker', '10']);
    const makerTrades = created(await get(m!, `/perps/trades?marketId=${BTC}&limit=1`), 200) as Json[];
    const mt = makerTrades[0];
    assert.deepEqual([mt.liquidity, mt.fee, mt.tradeId], ['maker', '2', tr.tradeId]);
    const b = await balances(t!);
    const balanceFields = ['asset', 'balance', 'unrealizedPnl', 'equity', 'initialMargin',
      'maintenanceMargin', 'orderMargin', 'isolatedMargin', 'availableMargin', 'withdrawable'];
    for (const f of balanceFields) assert.ok(f in b, `balance field ${f}`);
    assert.deepEqual([b.asset, b.balance, b.isolatedMargin], ['USDC', '99990', '400']);
    assertError(await call(base, '/perps/orders'), 401, 'UNAUTHENTICATED');
    assertError(await call(base, '/perps/balances'), 401, 'UNAUTHENTICATED');
  });
});
