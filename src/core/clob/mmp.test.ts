/**
 * Unit tests of market-maker protection: maker fills of quote orders count per (account,
 * underlying) over a sliding window; reaching the quantity (or delta, with Greeks) limit cancels
 * the account's quote orders on that underlying's options in the same command - after the taker
 * order that tripped it has finished, so a fill-or-kill sweep stays whole - and refuses new quotes
 * with MMP_TRIGGERED until the freeze ends or a reset; plain orders, other underlyings and taker
 * fills are unaffected; fills older than the window drop out.
 *
 * How: test/support/clob-venue.ts, with `clob.mmp_set`, `clob.quote` and `clob.mmp_reset`
 * commands at explicit times.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, ClobVenue, clobRequest, type ClobOrderFields } from '../../../test/support/clob-venue.ts';
import { fx } from '../money.ts';
import type { MmpConfig } from './mmp.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [MM, T] = [addr(0xa), addr(0xb)];

function venue(config: Partial<MmpConfig> = {}) {
  const v = new ClobVenue(T0);
  v.index('BTC', '100000');
  v.index('ETH', '3000');
  v.tick();
  v.fund(MM, '1000000', 'options');
  v.fund(T, '1000000', 'options');
  const full: MmpConfig = {
    windowMs: 1000,
    frozenMs: 5000,
    quantityLimit: fx('1'),
    deltaLimit: null,
    vegaLimit: null,
    ...config,
  };
  v.ok({ type: 'clob.mmp_set', account: MM, underlying: 'BTC', config: full });
  return {
    v,
    call: v.option('BTC', 'call', '100000'),
    put: v.option('BTC', 'put', '95000'),
    eth: v.option('ETH', 'call', '3000'),
  };
}

function quote(v: ClobVenue, market: string, levels: Omit<ClobOrderFields, 'market'>[], cancelAll = false) {
  return v.run({
    type: 'clob.quote',
    account: MM,
    quote: {
      marketId: market,
      quoteId: 'q',
      cancelAll,
      replaceQuoteId: null,
      levels: levels.map((l) => clobRequest({ ...l, market, quoteId: 'q' })),
    },
  });
}

const live = (v: ClobVenue) => {
  const orders = [...v.clob.findAccount(v.id(MM))!.orders.values()];
  return orders.map((o) => o.market.spec.id).sort();
};

describe('market-maker protection', () => {
  test('reaching the quantity limit cancels the underlying\'s quotes and freezes quoting', () => {
    const { v, call, put, eth } = venue();
    assert.ok(quote(
      v,
      call,
      [{ side: 'sell', qty: '2', price: '2000' }, { side: 'buy', qty: '2', price: '1900' }],
    ).ok);
    assert.ok(quote(v, put, [{ side: 'sell', qty: '1', price: '900' }]).ok);
    v.ok({
      type: 'clob.mmp_set',
      account: MM,
      underlying: 'ETH',
      config: { windowMs: 1000, frozenMs: 0, quantityLimit: fx('100'), deltaLimit: null, vegaLimit: null },
    });
    assert.ok(quote(v, eth, [{ side: 'sell', qty: '1', price: '100' }]).ok);
    v.order(MM, { market: put, side: 'buy', qty: '1', price: '100' }); // a plain order
    v.order(T, { market: call, side: 'buy', qty: '0.6', price: '2000', tif: 'ioc' });
    assert.equal(live(v).length, 5);
    const out = v.run({
      type: 'clob.place',
      account: T,
      request: clobRequest({ market: call, side: 'buy', qty: '0.4', price: '2000', tif: 'ioc' }),
    });
    assert.ok(out.ok);
    const mmp = out.events.filter((e) => e.type === 'mmp');
    assert.equal(mmp.length, 1);
    assert.deepEqual(live(v), [eth, put].sort()); // ETH quote and the plain order survive
    const refused = quote(v, call, [{ side: 'sell', qty: '1', price: '2000' }]);
    assert.equal(!refused.ok && refused.code, 'MMP_TRIGGERED');
    assert.equal(v.place(MM, { market: call, side: 'sell', qty: '1', price: '2000' }).ok, true);
    v.t += 5000;
    assert.ok(quote(v, call, [{ side: 'sell', qty: '1', price: '2000' }]).ok);
  });

  test('an amend that trades into the quotes trips it in the same command; a later rejected order changes nothing', () => {
    const { v, call } = venue({ quantityLimit: fx('0.5') });
    assert.ok(quote(v, call, [{ side: 'sell', qty: '0.5', price: '2000' }, { side: 'sell', qty: '0.5', price: '2010' }]).ok);
    const bid = v.order(T, { market: call, side: 'buy', qty: '0.5', price: '1000' });
    const amended = v.run({ type: 'clob.modify', account: T, orderId: Number(bid.order.id), price: fx('2000'), quantity: null });
    assert.ok(amended.ok);
    assert.equal(amended.events.filter((e) => e.type === 'mmp').length, 1, 'tripped by the amend');
    assert.deepEqual(live(v), [], 'the other quote is cancelled in the same command');
    const refused = v.place(T, { market: call, side: 'buy', qty: '0.5', tif: 'ioc' });
    assert.equal(!refused.ok && refused.code, 'NO_LIQUIDITY');
  });

  test('fills older than the window drop out; taker fills never count', () => {
    const { v, call } = venue();
    assert.ok(quote(v, call, [{ side: 'sell', qty: '5', price: '2000' }]).ok);
    v.order(T, { market: call, side: 'buy', qty: '0.6', price: '2000', tif: 'ioc' });
    v.t += 1000;
    v.order(T, { market: call, side: 'buy', qty: '0.6', price: '2000', tif: 'ioc' });
    assert.equal(live(v).length, 1);
    v.order(T, { market: call, side: 'sell', qty: '3', price: '1500' });
    assert.ok(quote(v, call, [{ side: 'buy', qty: '3', price: '1500' }]).ok); // takes as a quote: not counted
    assert.equal(live(v).length, 1);
  });

  test('a sweep that trips it completes first (fill-or-kill stays whole), then the quotes go', () => {
    const { v, call, put } = venue({ quantityLimit: fx('0.7') });
    assert.ok(quote(v, call, [
      { side: 'sell', qty: '0.5', price: '2000' },
      { side: 'sell', qty: '0.5', price: '2010' },
      { side: 'sell', qty: '0.5', price: '2020' },
    ]).ok);
    assert.ok(quote(v, put, [{ side: 'buy', qty: '1', price: '500' }]).ok);
    const r = v.order(T, { market: call, side: 'buy', qty: '1.5', price: '2020', tif: 'fok' });
    assert.equal(r.order.status, 'filled');
    assert.equal(r.fills.length, 3);
    assert.deepEqual(live(v), []);
  });

  test('the delta limit counts signed contracts x delta; frozenMs 0 holds until a reset', () => {
    const { v, call } = venue({ quantityLimit: fx('10'), deltaLimit: fx('0.4'), frozenMs: 0 });
    v.usePricing({ optionMark: () => null, heldMark: () => null, optionGreeks: () => ({ delta: fx('0.5'), vega: fx('60') }) });
    assert.ok(quote(
      v,
      call,
      [{ side: 'buy', qty: '2', price: '1900' }, { side: 'sell', qty: '2', price: '2000' }],
    ).ok);
    v.order(T, { market: call, side: 'sell', qty: '0.5', price: '1900', tif: 'ioc' }); // +0.25 delta
    assert.equal(live(v).length, 2);
    v.order(T, { market: call, side: 'buy', qty: '0.5', price: '2000', tif: 'ioc' }); // −0.25: net 0
    assert.equal(live(v).length, 2);
    v.order(T, { market: call, side: 'sell', qty: '1', price: '1900', tif: 'ioc' }); // +0.5: trips
    assert.deepEqual(live(v), []);
    v.t += 3_600_000;
    v.index('BTC', '100000');
    const refused = quote(v, call, [{ side: 'sell', qty: '1', price: '2000' }]);
    assert.equal(!refused.ok && refused.code, 'MMP_TRIGGERED');
    v.ok({ type: 'clob.mmp_reset', account: MM, underlying: 'BTC' });
    assert.ok(quote(v, call, [{ side: 'sell', qty: '1', price: '2000' }]).ok);
  });

  test('setting protection on an underlying without options, or resetting none, is NOT_FOUND', () => {
    const { v } = venue();
    const out = v.run({ type: 'clob.mmp_set', account: T, underlying: 'XRP', config: null });
    assert.equal(!out.ok && out.code, 'NOT_FOUND');
    const reset = v.run({ type: 'clob.mmp_reset', account: T, underlying: 'BTC' });
    assert.equal(!reset.ok && reset.code, 'NOT_FOUND');
  });
});
