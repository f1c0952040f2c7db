/**
 * Unit tests of multi-leg strategies (`clob.strategy`): all legs fill at the makers' prices in one
 * command, or the strategy is refused and nothing changes (STRATEGY_NOT_FILLED when any leg cannot
 * fill in full now); leg validation (count, distinct markets, allOrNone, tick, market); the
 * combined margin gate on the post-trade state at its exact edge (the sell leg's premium funds
 * the buy leg); spot and option legs together; the caller's own resting orders are skipped as
 * self-trade prevention skips them; a market-maker-protection trip caused by one leg cannot take
 * liquidity a later leg was promised.
 *
 * How: test/support/clob-venue.ts (real configuration, invariants after every command).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, ClobVenue, clobRequest, d } from '../../../test/support/clob-venue.ts';
import { fx } from '../money.ts';
import type { StrategyLeg, StrategyRequest, StrategyResult } from './strategy.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [A, M, X] = [addr(0xa), addr(0xb), addr(0xc)];

function venue() {
  const v = new ClobVenue(T0);
  v.index('BTC', '100000');
  v.index('ETH', '3000');
  v.tick();
  v.fund(M, '1000000', 'options');
  v.fund(M, '1000000', 'spot');
  v.grant(M, 'BTC', '10');
  const k1 = v.option('BTC', 'call', '100000');
  const k2 = v.option('BTC', 'call', '104000');
  const put = v.option('BTC', 'put', '96000');
  v.order(M, { market: k1, side: 'sell', qty: '2', price: '2000' });
  v.order(M, { market: k2, side: 'buy', qty: '2', price: '800' });
  v.order(M, { market: put, side: 'sell', qty: '2', price: '1000' });
  return { v, k1, k2, put };
}

const leg = (marketId: string, side: 'buy' | 'sell', qty: string, price: string): StrategyLeg => ({
  marketId, side: side === 'buy' ? 0 : 1, quantity: fx(qty), price: fx(price),
});

function strategy(v: ClobVenue, who: string, legs: StrategyLeg[], extra: Partial<StrategyRequest> = {}) {
  return v.run({
    type: 'clob.strategy',
    account: who,
    strategy: { name: 'test', allOrNone: true, cancelOnFailure: false, legs, ...extra },
  });
}

function state(v: ClobVenue): string {
  const ledger = [...v.ex.ledger.entries()].map(([k, x]) => `${k}=${x}`).sort();
  const books = [...v.ex.clob.markets.values()]
    .map((m) => `${m.spec.id}:${m.book.orderCount()}:${m.book.bestBid()}:${m.book.bestAsk()}`);
  const orders = [...v.ex.clob.allAccounts()].map((a) => {
    const live = [...a.orders.values()].map((o) => `${o.id}/${o.remainingLots}`);
    return `${a.id}:${live.join(',')}`;
  });
  return JSON.stringify({ ledger, books, orders });
}

describe('all or nothing', () => {
  test('a call spread fills both legs at the makers\' prices', () => {
    const { v, k1, k2 } = venue();
    v.fund(A, '20000', 'options');
    const out = strategy(v, A, [leg(k1, 'buy', '1', '2100'), leg(k2, 'sell', '1', '750')]);
    assert.ok(out.ok);
    const r = out.result as StrategyResult;
    assert.equal(r.fullyFilled, true);
    assert.match(r.strategyId, /^S[0-9]+$/);
    assert.deepEqual(
      r.legs.map((l) => [l.marketId, l.fills.map((f) => d(f.price))]),
      [[k1, ['2000']], [k2, ['800']]],
    );
    assert.deepEqual(v.position(A, k1)?.size, '1');
    assert.deepEqual(v.position(A, k2)?.size, '-1');
    const status = new Map(out.events.flatMap((e) => (e.type === 'order' ? [[
      e.order.id,
      e.order.status,
    ]] : [])));
    assert.deepEqual(r.legs.map((l) => status.get(l.orderId)), ['filled', 'filled']);
    assert.equal(status.size, 4); // and M's two makers, each with 1 left
    assert.deepEqual([...status.values()].filter((x) => x === 'open').length, 2);
  });

  test('a leg that cannot fill in full refuses the whole strategy; nothing changes', () => {
    const { v, k1, k2 } = venue();
    v.fund(A, '20000', 'options');
    const before = state(v);
    const out = strategy(v, A, [leg(k2, 'sell', '1', '800'), leg(k1, 'buy', '2.01', '2100')]);
    assert.equal(!out.ok && out.code, 'STRATEGY_NOT_FILLED');
    assert.equal(state(v), before);
    const price = strategy(v, A, [leg(k2, 'sell', '1', '800.1'), leg(k1, 'buy', '1', '2100')]);
    assert.equal(!price.ok && price.code, 'STRATEGY_NOT_FILLED');
    assert.equal(state(v), before);
  });

  test('liquidity taken first leaves the strategy unfilled', () => {
    const { v, k1, k2 } = venue();
    v.fund(A, '20000', 'options');
    v.fund(X, '20000', 'options');
    v.order(X, { market: k1, side: 'buy', qty: '1.5', price: '2000', tif: 'ioc' });
    const out = strategy(v, A, [leg(k1, 'buy', '1', '2000'), leg(k2, 'sell', '1', '800')]);
    assert.equal(!out.ok && out.code, 'STRATEGY_NOT_FILLED');
    assert.equal(v.position(A, k2), null);
  });

  test('leg validation', () => {
    const { v, k1, k2 } = venue();
    v.fund(A, '20000', 'options');
    const code = (legs: StrategyLeg[], extra?: Partial<StrategyRequest>) => {
      const out = strategy(v, A, legs, extra);
      return out.ok ? 'ok' : out.code;
    };
    assert.equal(code([leg(k1, 'buy', '1', '2000')]), 'VALIDATION_ERROR');
    assert.equal(code(Array.from({ length: 9 }, () => leg(k1, 'buy', '0.01', '2000'))), 'VALIDATION_ERROR');
    assert.equal(code([leg(k1, 'buy', '1', '2000'), leg(k1, 'sell', '1', '2000')]), 'VALIDATION_ERROR');
    assert.equal(
      code([leg(k1, 'buy', '1', '2000'), leg(k2, 'sell', '1', '800')], { allOrNone: false }),
      'VALIDATION_ERROR',
    );
    assert.equal(code([leg(k1, 'buy', '1', '2000.05'), leg(k2, 'sell', '1', '800')]), 'INVALID_TICK');
    assert.equal(
      code([leg(k1, 'buy', '1', '2000'), leg('BTC-01JAN20-1-C', 'sell', '1', '800')]),
      'NOT_FOUND',
    );
  });
});

describe('the combined gate', () => {
  test('the sell leg\'s premium funds the buy leg: exact edge, and one unit short', () => {
    // short k2: max(15 000 − 4 000, 10 000) + best bid 800 = 11 800; buy k1 holds 2 000 + 30 +
    // 0.0002; the k2 sale brings at least 800 − 100 (fee cap) − 0.0002.
    const edge = '13130.0004';
    for (const [funds, expected] of [[edge, 'ok'], ['13130.0003', 'INSUFFICIENT_MARGIN']] as const) {
      const { v, k1, k2 } = venue();
      v.fund(A, funds, 'options');
      const before = state(v);
      const out = strategy(v, A, [leg(k1, 'buy', '1', '2000'), leg(k2, 'sell', '1', '800')]);
      assert.equal(out.ok ? 'ok' : out.code, expected, `with ${funds}`);
      if (!out.ok) assert.equal(state(v), before);
    }
  });

  test('a risk-reducing strategy still pays its premiums in cash: beyond the options cash it is refused', () => {
    const { v, k1 } = venue();
    const put = v.option('BTC', 'put', '95000');
    v.fund(A, '20000', 'options');
    v.fund(X, '1000000', 'options');
    v.order(X, { market: put, side: 'buy', qty: '1', price: '3000' });
    v.order(A, { market: put, side: 'sell', qty: '1', price: '3000', tif: 'ioc' }); // A is short the put
    // anyone's high bid lifts the put's risk price: A's free collateral goes far below zero
    v.order(X, { market: put, side: 'buy', qty: '0.01', price: '60000' });
    v.order(X, { market: put, side: 'sell', qty: '1', price: '60100' });
    const before = state(v);
    // buying the put back reduces A's margin by more than it costs, but costs more than A's cash
    const out = strategy(v, A, [leg(put, 'buy', '1', '60100'), leg(k1, 'buy', '0.01', '2000')]);
    assert.equal(!out.ok && out.code, 'INSUFFICIENT_MARGIN');
    assert.equal(state(v), before, 'nothing changed');
  });

  test('spot and option legs: a covered call funded by the spot and options buckets', () => {
    const { v, k1 } = venue();
    v.order(M, { market: 'BTC-USDC', side: 'sell', qty: '1', price: '100000' });
    v.fund(A, '100050.2', 'spot'); // 100 000 + taker 5 bp + two units per lot of rounding room
    v.fund(A, '17000', 'options');
    const out = strategy(v, A, [leg('BTC-USDC', 'buy', '1', '100000'), leg(k1, 'sell', '1', '1900')]);
    assert.equal(!out.ok && out.code, 'STRATEGY_NOT_FILLED'); // k1 has no bid
    v.order(M, { market: k1, side: 'buy', qty: '1', price: '1900' });
    const poor = strategy(v, A, [leg('BTC-USDC', 'buy', '1.0001', '100000'), leg(k1, 'sell', '1', '1900')]);
    assert.equal(!poor.ok && poor.code, 'STRATEGY_NOT_FILLED'); // only 1 BTC offered
    const ok = strategy(v, A, [leg('BTC-USDC', 'buy', '1', '100000'), leg(k1, 'sell', '1', '1900')]);
    assert.ok(ok.ok, ok.ok ? '' : ok.message);
    assert.equal(v.balance(A, 'spot', 'BTC'), '1');
    assert.equal(v.balance(A, 'spot'), '0.2'); // paid 100 000 + taker 5 bp
    assert.equal(v.position(A, k1)?.size, '-1');
  });
});

describe('interactions', () => {
  test('the caller\'s own resting order on a leg market is skipped and cancelled', () => {
    const { v, k1, k2 } = venue();
    v.fund(A, '40000', 'options');
    const own = v.order(A, { market: k2, side: 'buy', qty: '1', price: '900' });
    const out = strategy(v, A, [leg(k1, 'buy', '1', '2000'), leg(k2, 'sell', '1', '800')]);
    assert.ok(out.ok);
    const r = out.result as StrategyResult;
    assert.equal(d(r.legs[1]!.fills[0]!.price), '800');
    assert.equal(v.clob.findAccount(v.id(A))!.orders.has(Number(own.order.id)), false);
  });

  test('a protection trip on the first leg does not take the second leg\'s liquidity', () => {
    const v = new ClobVenue(T0);
    v.index('BTC', '100000');
    v.tick();
    v.fund(M, '1000000', 'options');
    v.fund(A, '100000', 'options');
    const k1 = v.option('BTC', 'call', '100000');
    const k2 = v.option('BTC', 'call', '101000');
    const k3 = v.option('BTC', 'call', '102000');
    v.ok({
      type: 'clob.mmp_set',
      account: M,
      underlying: 'BTC',
      config: {
        windowMs: 60_000,
        frozenMs: 60_000,
        quantityLimit: fx('1'),
        deltaLimit: null,
        vegaLimit: null,
      },
    });
    for (const [m, p] of [[k1, '2000'], [k2, '1500'], [k3, '1000']] as const) {
      v.ok({
        type: 'clob.quote',
        account: M,
        quote: {
          marketId: m,
          quoteId: null,
          cancelAll: false,
          replaceQuoteId: null,
          levels: [clobRequest({ market: m, side: 'sell', qty: '1', price: p })],
        },
      });
    }
    const out = strategy(v, A, [leg(k1, 'buy', '1', '2000'), leg(k2, 'buy', '1', '1500')]);
    assert.ok(out.ok, out.ok ? '' : out.message);
    assert.equal(v.clob.findAccount(v.id(M))!.orders.size, 0); // k3's quote went after the strategy
    assert.equal(out.events.filter((e) => e.type === 'mmp').length, 1);
  });
});
