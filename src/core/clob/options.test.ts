/**
 * Unit tests of options on the CLOB engine, in-process through the exchange core: the listing
 * ladder (ids, strike spacing by tenor, nothing listed without an index, ladders fixed at listing
 * time); premium and fee flows between the options buckets; the fee cap at 12.5 % of the premium;
 * the buy hold (premium plus capped fee); standard short margin (mechanics.md 3.6 vectors, the
 * gate at its exact edge and one step beyond, marks from the pricing layer, the risk price without
 * one: the held last mark, else max(intrinsic, best bid), never a trade); reduce-only; static price bounds; MARKET_CLOSED at expiry; realised PnL;
 * what may leave the options bucket.
 *
 * How: test/support/clob-venue.ts (real configuration, explicit times, invariants after every
 * command). Fees expected from the schedule: maker 1 bp, taker 3 bp of the index, cap 12.5 %.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OPTION_UNDERLYINGS } from '../../config/clob-markets.ts';
import { addr, ClobVenue, d } from '../../../test/support/clob-venue.ts';
import { formatDecimal, fx } from '../money.ts';
import { initialPerContract, maintenancePerContract } from './margin.ts';
import { optionInstruments } from './views.ts';

const T0 = Date.UTC(2026, 0, 6, 12); // a Tuesday
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];
const BTC_TERMS = OPTION_UNDERLYINGS[0]!;

function venue(btc = '100000'): ClobVenue {
  const v = new ClobVenue(T0);
  v.index('BTC', btc);
  v.index('ETH', '3000');
  v.tick();
  return v;
}

const code = (out: { ok: boolean; code?: string }) => (out.ok ? 'ok' : out.code);

describe('listing', () => {
  test('a ladder of 17 strikes per expiry, calls and puts, spaced by tenor', () => {
    const v = venue();
    const btc = optionInstruments(v.clob, 'BTC');
    const expiries = [...new Set(btc.map((i) => i.expiry))];
    assert.equal(expiries.length, 8);
    assert.equal(btc.length, 8 * 17 * 2);
    const strikes = (expiry: number, type: string) =>
      btc.filter((i) => i.expiry === expiry && i.type === type).map((i) => d(i.strike));
    const near = strikes(Date.UTC(2026, 0, 7, 8), 'call');
    assert.deepEqual(near, Array.from({ length: 17 }, (_, i) => String(92000 + 1000 * i)));
    const far = strikes(Date.UTC(2026, 0, 16, 8), 'put');
    assert.deepEqual(far, Array.from({ length: 17 }, (_, i) => String(80000 + 2500 * i)));
    assert.ok(v.clob.markets.has('BTC-07JAN26-100000-C'));
    assert.ok(v.clob.markets.has('ETH-26JUN26-3800-P'));
    const m = v.clob.markets.get('BTC-07JAN26-100000-C')!;
    assert.equal(d(m.units.tick), '0.1');
    assert.equal(d(m.units.step), '0.01');
    assert.equal(d(m.spec.minSize), '0.01');
  });

  test('nothing is listed without an index; a ladder stays where it was listed', () => {
    const v = new ClobVenue(T0);
    v.tick();
    assert.equal(optionInstruments(v.clob).length, 0);
    v.index('BTC', '100400');
    v.tick();
    assert.equal(optionInstruments(v.clob, 'ETH').length, 0);
    assert.ok(v.clob.markets.has('BTC-07JAN26-100000-C'));
    v.index('BTC', '130000');
    v.tick();
    assert.ok(!v.clob.markets.has('BTC-07JAN26-130000-C'));
    assert.equal(optionInstruments(v.clob, 'BTC').length, 8 * 34);
  });
});

describe('premiums and fees', () => {
  test('the buyer pays premium + taker fee, the seller receives premium − maker fee', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    v.fund(A, '10000', 'options');
    v.fund(B, '20000', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    const r = v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    // taker 3 bp x 100 000 = 30 (cap 250); maker 1 bp = 10.
    assert.equal(d(r.fills[0]!.taker.fee), '30');
    assert.equal(d(r.fills[0]!.maker.fee), '10');
    assert.equal(v.balance(A, 'options'), '7970');
    assert.equal(v.balance(B, 'options'), '21990');
    assert.deepEqual(v.position(A, call), { size: '1', entry: '2000', realized: '0' });
    assert.deepEqual(v.position(B, call), { size: '-1', entry: '2000', realized: '0' });
  });

  test('the fee is capped at 12.5 % of the premium', () => {
    const v = venue();
    const otm = v.option('BTC', 'call', '108000');
    v.fund(A, '1000', 'options');
    v.fund(B, '40000', 'options');
    v.order(B, { market: otm, side: 'sell', qty: '2', price: '100' });
    const r = v.order(A, { market: otm, side: 'buy', qty: '2', price: '100', tif: 'ioc' });
    // taker: min(30, 12.5) x 2 = 25; maker: min(10, 12.5) x 2 = 20.
    assert.equal(d(r.fills[0]!.taker.fee), '25');
    assert.equal(d(r.fills[0]!.maker.fee), '20');
    assert.equal(v.balance(A, 'options'), '775');
  });

  test('a resting buy holds premium plus the fee at its cap; a fill releases the unused part', () => {
    const v = venue();
    const otm = v.option('BTC', 'call', '108000');
    v.fund(A, '1000', 'options');
    v.fund(B, '40000', 'options');
    const bid = v.order(A, { market: otm, side: 'buy', qty: '2', price: '100' });
    assert.equal(bid.order.status, 'open');
    assert.equal(v.locked(A, 'options'), '225'); // 200 lots x (1 + 0.125)
    v.order(B, { market: otm, side: 'sell', qty: '1', price: '100', tif: 'ioc' });
    // A was maker: 100 + min(10, 12.5) = 110 paid; 100 lots still held.
    assert.equal(v.balance(A, 'options'), '890');
    assert.equal(v.locked(A, 'options'), '112.5');
  });

  test('realised PnL on a closing trade, against the premium basis', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    v.fund(A, '10000', 'options');
    v.fund(B, '40000', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    v.order(B, { market: call, side: 'buy', qty: '0.4', price: '2500' });
    const r = v.order(A, { market: call, side: 'sell', qty: '0.4', price: '2500', tif: 'ioc' });
    assert.equal(d(r.fills[0]!.taker.realizedPnl), '200');
    assert.equal(d(r.fills[0]!.maker.realizedPnl), '-200');
    assert.deepEqual(v.position(A, call), { size: '0.6', entry: '2000', realized: '200' });
  });
});

describe('short margin', () => {
  test('mechanics.md 3.6 vectors', () => {
    const S = fx('60000');
    const call = {
      underlying: 'BTC',
      expiry: 0,
      strike: fx('65000'),
      type: 'call' as const,
      params: BTC_TERMS,
    };
    const put = { ...call, strike: fx('55000'), type: 'put' as const };
    assert.equal(d(initialPerContract(call, S, fx('1612.52'))), '7612.52');
    assert.equal(d(maintenancePerContract(call, S, fx('1612.52'))), '6112.52');
    assert.equal(d(initialPerContract(put, S, fx('1371.29'))), '7371.29');
    assert.equal(d(maintenancePerContract(put, S, fx('1371.29'))), '5871.29');
  });

  test('the gate at its exact edge and one step beyond; nothing changes on refusal', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    // ATM, no mark, no bid, no trade: IM = max(15 000 − 0, 10 000) + 0 per contract.
    v.fund(B, '15000', 'options');
    assert.equal(v.order(B, { market: call, side: 'sell', qty: '1', price: '3000' }).order.status, 'open');
    assert.equal(v.locked(B, 'options'), '15000');
    assert.equal(v.available(B, 'options'), '0');
    assert.equal(
      code(v.place(B, { market: call, side: 'sell', qty: '0.01', price: '3000' })),
      'INSUFFICIENT_MARGIN',
    );
    v.fund(C, '14999.999999', 'options');
    assert.equal(
      code(v.place(C, { market: call, side: 'sell', qty: '1', price: '3000' })),
      'INSUFFICIENT_MARGIN',
    );
    assert.equal(v.locked(C, 'options'), '0');
  });

  test('an out-of-the-money put needs less; a mark from the pricing layer adds to the margin', () => {
    const v = venue();
    const put = v.option('BTC', 'put', '92000');
    const call = v.option('BTC', 'call', '100000');
    v.fund(B, '100000', 'options');
    v.order(B, { market: put, side: 'sell', qty: '1', price: '500' });
    assert.equal(v.locked(B, 'options'), '10000'); // max(15 000 − 8 000, 10 000)
    v.usePricing({ optionMark: (id) => (id === call ? fx('1612.5') : null), heldMark: () => null, optionGreeks: () => null });
    v.order(B, { market: call, side: 'sell', qty: '2', price: '3000' });
    assert.equal(v.locked(B, 'options'), formatDecimal(fx('10000') + 2n * fx('16612.5')));
  });

  test('never marked, a short is valued at max(intrinsic, best bid); a trade, however small, does not count', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '95000'); // 5 000 in the money
    v.fund(A, '100000', 'options');
    v.fund(B, '100000', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '6000' });
    // max(15 000 − 0, 10 000) + intrinsic 5 000
    assert.equal(v.locked(B, 'options'), '20000');
    v.order(A, { market: call, side: 'buy', qty: '0.5', price: '5800' });
    // the best bid now values B's short: 15 000 + 5 800; A holds 0.5 x (5 800 + 12.5 %).
    assert.equal(v.locked(B, 'options'), '20800');
    assert.equal(v.locked(A, 'options'), formatDecimal(fx('2900') + fx('362.5')));
  });

  test('a 0.01-contract wash print far from value leaves other shorts\' margin where it was', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '108000'); // out of the money: intrinsic 0
    const [X, Y] = [addr(0xe1), addr(0xe2)];
    for (const who of [A, B, X, Y]) v.fund(who, '50000', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '300' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '300', tif: 'ioc' });
    const before = [v.locked(B, 'options'), v.available(B, 'options')];
    assert.equal(before[0], '10000'); // max(15 000 − 8 000, 10 000) + 0
    v.order(X, { market: call, side: 'sell', qty: '0.01', price: '99000' });
    v.order(Y, { market: call, side: 'buy', qty: '0.01', price: '99000', tif: 'ioc' });
    assert.equal(v.clob.markets.get(call)!.lastTrade?.price, fx('99000'));
    assert.deepEqual([v.locked(B, 'options'), v.available(B, 'options')], before);
  });

  test('once the pricing layer has marked an option, a lapsed mark is held: bids and trades no longer count', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    v.fund(B, '100000', 'options');
    v.fund(C, '200000', 'options');
    let fresh = true;
    v.usePricing({
      optionMark: (id) => (fresh && id === call ? fx('1612.5') : null),
      heldMark: (id) => (id === call ? fx('1612.5') : null),
      optionGreeks: () => null,
    });
    v.order(B, { market: call, side: 'sell', qty: '1', price: '3000' });
    assert.equal(v.locked(B, 'options'), '16612.5');
    fresh = false; // e.g. the index went stale: the board serves no mark
    v.order(C, { market: call, side: 'buy', qty: '0.01', price: '99000' });
    assert.equal(v.locked(B, 'options'), '16612.5', 'valued at the held mark, not the 99 000 bid');
    v.index('BTC', '120000');
    // intrinsic 20 000 now exceeds the held mark: max(18 000, 12 000) + 20 000
    assert.equal(v.locked(B, 'options'), '38000');
  });

  test('a long needs only its premium and fee; a transfer out cannot take margin in use', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    // an immediate buy holds premium + fee at the index rate (30) + two units per lot for rounding.
    v.fund(A, '2030.0002', 'options');
    v.fund(B, '20000', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'fok' });
    assert.equal(v.balance(A, 'options'), '0.0002');
    // B: 21 990 with IM 15 000 in use (no mark, no bid; the last trade does not count).
    const out = v.run({
      type: 'wallet.transfer',
      account: B,
      from: 'options',
      to: 'wallet',
      amount: fx('6990.000001'),
    });
    assert.equal(code(out), 'INSUFFICIENT_BALANCE');
    v.ok({ type: 'wallet.transfer', account: B, from: 'options', to: 'wallet', amount: fx('6990') });
  });
});

describe('order rules', () => {
  test('reduce-only applies to immediate orders and is clipped to the position', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    v.fund(A, '10000', 'options');
    v.fund(B, '100000', 'options');
    assert.equal(
      code(v.place(A, { market: call, side: 'sell', qty: '1', price: '2000', tif: 'ioc', reduceOnly: true })),
      'REDUCE_ONLY_REJECTED',
    );
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    assert.equal(
      code(v.place(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc', reduceOnly: true })),
      'REDUCE_ONLY_REJECTED',
    );
    assert.equal(
      code(v.place(A, { market: call, side: 'sell', qty: '1', price: '2000', reduceOnly: true })),
      'VALIDATION_ERROR',
    );
    v.order(B, { market: call, side: 'buy', qty: '3', price: '1900' });
    const r = v.order(
      A,
      { market: call, side: 'sell', qty: '3', price: '1900', tif: 'ioc', reduceOnly: true },
    );
    assert.equal(d(r.order.quantity), '1');
    assert.equal(r.order.status, 'filled');
    assert.equal(v.position(A, call), null);
  });

  test('static price bounds: a call at most the underlying, a put at most its strike', () => {
    const v = venue();
    v.fund(A, '1000000', 'options');
    const call = v.option('BTC', 'call', '100000');
    const put = v.option('BTC', 'put', '92000');
    assert.equal(
      code(v.place(A, { market: call, side: 'buy', qty: '0.01', price: '100000.1' })),
      'PRICE_OUT_OF_BAND',
    );
    assert.equal(
      code(v.place(A, { market: put, side: 'buy', qty: '0.01', price: '92000.1' })),
      'PRICE_OUT_OF_BAND',
    );
    assert.equal(code(v.place(A, { market: put, side: 'buy', qty: '0.01', price: '92000' })), 'ok');
    assert.equal(
      code(v.place(A, { market: call, side: 'buy', qty: '0.01', price: '2000.05' })),
      'INVALID_TICK',
    );
    assert.equal(
      code(v.place(A, { market: call, side: 'buy', qty: '0.001', price: '2000' })),
      'INVALID_STEP',
    );
  });

  test('trading stops at expiry, before the tick that settles', () => {
    const v = venue();
    const call = v.option('BTC', 'call', '100000');
    v.fund(A, '10000', 'options');
    v.t = Date.UTC(2026, 0, 7, 8) - 2;
    assert.equal(code(v.place(A, { market: call, side: 'buy', qty: '0.01', price: '100' })), 'ok');
    assert.equal(code(v.place(A, { market: call, side: 'buy', qty: '0.01', price: '100' })), 'MARKET_CLOSED');
  });
});
