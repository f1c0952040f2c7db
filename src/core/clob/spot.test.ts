/**
 * Unit tests of spot trading on the CLOB engine, in-process through the exchange core: locks on
 * placement (a buy holds quantity x limit plus the fee reserve, a sell holds the base), release on
 * fills (price improvement and unused fee reserve) and on cancel, exact to the smallest unit; the
 * swap and fee postings; rounding of a notional finer than USDC's precision (residue to the
 * insurance fund); market buys funded by their sweep; refusals that change nothing (selling what is
 * not held, insufficient balance, band, tick, step, size, reduceOnly, post-only, fok, ioc,
 * duplicate client id); self-trade prevention; transfers out limited by locks.
 *
 * How: test/support/clob-venue.ts drives `new Exchange(coreConfig(...))` with explicit command
 * times and checks the engine's invariants after every command (ledger zero per asset, no negative
 * bucket, holds = sum of order reserves). Expected figures are computed here from the fee
 * schedule (maker 2 bp, taker 5 bp, reserve at the highest rate 5 bp), never read back from the
 * engine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SPOT_FEE_TIERS } from '../../config/clob-markets.ts';
import { addr, ClobVenue, clobRequest, d } from '../../../test/support/clob-venue.ts';
import { formatDecimal, fx } from '../money.ts';
import type { OrderRecord } from '../records.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];
const BTC = 'BTC-USDC';
const ETH = 'ETH-USDC';

function venue(): ClobVenue {
  const v = new ClobVenue(T0);
  v.index('BTC', '100000');
  v.index('ETH', '3000');
  return v;
}

/** Ledger balances and books, to prove a refusal changed nothing. */
function state(v: ClobVenue): string {
  const ledger = [...v.ex.ledger.entries()].map(([k, x]) => `${k}=${x}`).sort();
  const books = [...v.ex.clob.markets.values()].filter((m) => !m.isOption).map((m) => {
    const out: number[] = [];
    const n = [0, 1].map((s) => m.book.depth(s as 0 | 1, 100, out) + ':' + out.slice(0, 200).join(','));
    return `${m.spec.id}:${n.join('|')}`;
  });
  const orders = [...v.ex.clob.allAccounts()].map((a) => `${a.id}:${[...a.orders.keys()].join(',')}`);
  return JSON.stringify({ ledger, books, orders });
}

describe('spot fee schedule used by these expectations', () => {
  test('maker 2 bp, taker 5 bp at the base tier', () => {
    assert.equal(d(SPOT_FEE_TIERS[0]!.makerBps), '2');
    assert.equal(d(SPOT_FEE_TIERS[0]!.takerBps), '5');
  });
});

describe('open-order limits', () => {
  test('at the per-account limit an order that cannot rest still passes; one that rests does not', () => {
    const v = new ClobVenue(T0, 3_600_000, { maxOpenOrdersPerAccount: 2 });
    v.index('BTC', '100000');
    v.fund(A, '20000');
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.1', price: '100000' });
    for (const price of ['99000', '98900']) v.order(A, { market: BTC, side: 'buy', qty: '0.01', price });
    const before = state(v);
    const refused = v.run({ type: 'clob.place', account: A, request: clobRequest({ market: BTC, side: 'buy', qty: '0.01', price: '98800' }) });
    assert.equal(!refused.ok && refused.code, 'TOO_MANY_OPEN_ORDERS');
    assert.equal(state(v), before, 'a refusal changes nothing');
    const ioc = v.order(A, { market: BTC, side: 'buy', qty: '0.01', price: '100000', tif: 'ioc' });
    assert.equal(ioc.order.status, 'filled', 'an ioc at the limit leaves nothing behind');
  });
});

describe('locks and releases', () => {
  test('a resting buy holds quantity x limit plus the fee reserve; cancel releases it exactly', () => {
    const v = venue();
    v.fund(A, '20000');
    const r = v.order(A, { market: BTC, side: 'buy', qty: '0.1', price: '101000' });
    assert.equal(r.order.status, 'open');
    // 10 000 lots x (1.01 + ceil6(1.01 x 0.0005) = 0.000505)
    assert.equal(v.locked(A, 'spot'), '10105.05');
    assert.equal(v.available(A, 'spot'), '9894.95');
    const out = v.run({ type: 'clob.cancel', account: A, orderId: Number(r.order.id) });
    assert.ok(out.ok, 'cancelled');
    const result = out.result as OrderRecord;
    assert.equal(result.status, 'cancelled');
    const event = out.events.find((e) => e.type === 'order' && e.order.id === r.order.id);
    assert.equal(event?.type === 'order' ? event.order : null, result, 'one record for the result and the event');
    assert.equal(v.locked(A, 'spot'), '0');
    assert.equal(v.balance(A, 'spot'), '20000');
  });

  test('a sweeping buy pays the makers\' prices; improvement and fee reserve are released', () => {
    const v = venue();
    v.fund(A, '20000');
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.04', price: '100000' });
    v.order(B, { market: BTC, side: 'sell', qty: '0.03', price: '100500' });
    assert.equal(v.locked(B, 'spot', 'BTC'), '0.07');
    const r = v.order(A, { market: BTC, side: 'buy', qty: '0.1', price: '101000' });
    assert.deepEqual(
      r.fills.map((f: { price: bigint; quantity: bigint }) => [d(f.price), d(f.quantity)]),
      [['100000', '0.04'], ['100500', '0.03']],
    );
    // paid 4000 + 2 (taker 5 bp) and 3015 + 1.5075; the rest (0.03) rests at 101000.
    assert.equal(v.balance(A, 'spot'), formatDecimal(fx('20000') - fx('4002') - fx('3016.5075')));
    assert.equal(v.locked(A, 'spot'), '3031.515');
    assert.equal(v.balance(A, 'spot', 'BTC'), '0.07');
    // B received the notional minus the maker fee (2 bp): 4000 - 0.8 + 3015 - 0.603.
    assert.equal(v.balance(B, 'spot'), '7013.597');
    assert.equal(v.balance(B, 'spot', 'BTC'), '0.93');
    assert.equal(v.locked(B, 'spot', 'BTC'), '0');
    assert.equal(v.system('fees'), formatDecimal(fx('2') + fx('1.5075') + fx('0.8') + fx('0.603')));
    v.ok({ type: 'clob.cancel', account: A, orderId: Number(r.order.id) });
    assert.equal(v.locked(A, 'spot'), '0');
  });

  test('a maker buy filled below its reserve rate releases the unused fee reserve', () => {
    const v = venue();
    v.fund(A, '1000');
    v.grant(B, 'ETH', '1');
    const bid = v.order(A, { market: ETH, side: 'buy', qty: '0.1', price: '3000' });
    // 1000 lots x (0.3 + 0.00015)
    assert.equal(v.locked(A, 'spot'), '300.15');
    v.order(B, { market: ETH, side: 'sell', qty: '0.04', price: '2999', tif: 'ioc' });
    // filled 0.04 at the maker's 3000: paid 120 + maker fee 0.024; 600 lots of the hold remain.
    assert.equal(v.balance(A, 'spot'), formatDecimal(fx('1000') - fx('120.024')));
    assert.equal(v.locked(A, 'spot'), '180.09');
    assert.equal(v.balance(B, 'spot'), formatDecimal(fx('120') - fx('0.06')));
    v.ok({ type: 'clob.cancel', account: A, orderId: Number(bid.order.id) });
    assert.equal(v.locked(A, 'spot'), '0');
  });

  test('a notional finer than USDC precision: buyer pays up, seller gets down, residue to insurance', () => {
    const v = venue();
    v.fund(A, '100');
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.00011', price: '100000.01' });
    const before = fx(v.system('insurance'));
    v.order(A, { market: BTC, side: 'buy', qty: '0.00011', price: '100000.01', tif: 'fok' });
    // 11 lots x 1.0000001 = 11.0000011: paid 11.000002, received 11.000001.
    const takerFee = fx('0.005501'); // ceil6(11.0000011 x 0.0005)
    const makerFee = fx('0.002201'); // ceil6(11.0000011 x 0.0002)
    assert.equal(v.balance(A, 'spot'), formatDecimal(fx('100') - fx('11.000002') - takerFee));
    assert.equal(v.balance(B, 'spot'), formatDecimal(fx('11.000001') - makerFee));
    assert.equal(fx(v.system('insurance')) - before, fx('0.000001'));
    assert.equal(v.balance(A, 'spot', 'BTC'), '0.00011');
  });

  test('a market buy is funded by its sweep (cost plus fee bound); refused without it, unchanged', () => {
    const v = venue();
    v.fund(A, '1501.25');
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.01', price: '100000' });
    v.order(B, { market: BTC, side: 'sell', qty: '0.01', price: '100100' });
    const before = state(v);
    // bound = 1500.5 + ceil6(0.75025) + 2 x 1500 lots x 0.000001 = 1501.25325
    const refused = v.place(A, { market: BTC, side: 'buy', qty: '0.015' });
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.code, 'INSUFFICIENT_BALANCE');
    assert.equal(state(v), before);
    v.fund(A, '0.01');
    const r = v.order(A, { market: BTC, side: 'buy', qty: '0.015' });
    assert.equal(r.order.status, 'filled');
    // paid 1000 + 0.5 and 500.5 + 0.25025
    assert.equal(v.balance(A, 'spot'), formatDecimal(fx('1501.26') - fx('1501.25025')));
    assert.equal(v.locked(A, 'spot'), '0');
  });
});

describe('refusals change nothing', () => {
  test('selling what is not held, or more than is free, is INSUFFICIENT_BALANCE', () => {
    const v = venue();
    v.fund(C, '1000');
    let before = state(v);
    const out = v.place(C, { market: BTC, side: 'sell', qty: '0.1', price: '100000' });
    assert.equal(!out.ok && out.code, 'INSUFFICIENT_BALANCE');
    assert.equal(state(v), before);
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.7', price: '100000' });
    before = state(v);
    const more = v.place(B, { market: BTC, side: 'sell', qty: '0.4', price: '100000' });
    assert.equal(!more.ok && more.code, 'INSUFFICIENT_BALANCE');
    assert.equal(state(v), before);
    assert.equal(v.place(B, { market: BTC, side: 'sell', qty: '0.3', price: '100000' }).ok, true);
  });

  test('a buy the spot bucket cannot hold is INSUFFICIENT_BALANCE', () => {
    const v = venue();
    v.fund(A, '1000.49');
    // 0.01 BTC at 100000: 1000 lots x 1.0005 = 1000.5
    const out = v.place(A, { market: BTC, side: 'buy', qty: '0.01', price: '100000' });
    assert.equal(!out.ok && out.code, 'INSUFFICIENT_BALANCE');
    v.fund(A, '0.01');
    assert.equal(v.place(A, { market: BTC, side: 'buy', qty: '0.01', price: '100000' }).ok, true);
    assert.equal(v.available(A, 'spot'), '0');
  });

  test('shape, tick, step, size and band checks, in order', () => {
    const v = venue();
    v.fund(A, '100000');
    const code = (o: Parameters<ClobVenue['place']>[1]) => {
      const out = v.place(A, o);
      return out.ok ? 'ok' : out.code;
    };
    assert.equal(
      code({ market: BTC, side: 'buy', qty: '0.1', price: '100000', reduceOnly: true, tif: 'ioc' }),
      'VALIDATION_ERROR',
    );
    assert.equal(code({ market: BTC, side: 'buy', qty: '0.1', price: '100000.001' }), 'INVALID_TICK');
    assert.equal(code({ market: BTC, side: 'buy', qty: '0.000001', price: '100000' }), 'INVALID_STEP');
    assert.equal(code({ market: BTC, side: 'buy', qty: '0.00009', price: '100000' }), 'SIZE_OUT_OF_RANGE');
    assert.equal(code({ market: BTC, side: 'buy', qty: '100.00001', price: '100000' }), 'SIZE_OUT_OF_RANGE');
    assert.equal(code({ market: BTC, side: 'buy', qty: '0.1', price: '110000.01' }), 'PRICE_OUT_OF_BAND');
    assert.equal(code({ market: BTC, side: 'sell', qty: '0.1', price: '89999.99' }), 'PRICE_OUT_OF_BAND');
    assert.equal(code({ market: 'XRP-USDC', side: 'buy', qty: '1', price: '1' }), 'NOT_FOUND');
    assert.equal(code({ market: BTC, side: 'buy', qty: '0.1', price: '110000' }), 'ok');
  });

  test('without a fresh index spot still trades, with no band', () => {
    const v = venue();
    v.fund(A, '100000');
    v.tick(v.t + 3_700_000);
    assert.equal(v.place(A, { market: BTC, side: 'buy', qty: '0.1', price: '150000' }).ok, true);
  });

  test('post-only, fill-or-kill and immediate-or-cancel', () => {
    const v = venue();
    v.fund(A, '100000');
    v.grant(B, 'BTC', '1');
    v.order(B, { market: BTC, side: 'sell', qty: '0.05', price: '100000' });
    const before = state(v);
    const po = v.place(A, { market: BTC, side: 'buy', qty: '0.01', price: '100000', postOnly: true });
    assert.equal(!po.ok && po.code, 'POST_ONLY_WOULD_CROSS');
    const fok = v.place(A, { market: BTC, side: 'buy', qty: '0.06', price: '100000', tif: 'fok' });
    assert.equal(!fok.ok && fok.code, 'FOK_NOT_FILLED');
    const ioc = v.place(A, { market: BTC, side: 'buy', qty: '0.06', price: '99999', tif: 'ioc' });
    assert.equal(!ioc.ok && ioc.code, 'NO_LIQUIDITY');
    assert.equal(state(v), before);
    const part = v.order(A, { market: BTC, side: 'buy', qty: '0.06', price: '100000', tif: 'ioc' });
    assert.equal(part.order.status, 'cancelled');
    assert.equal(d(part.order.filledQuantity), '0.05');
    assert.equal(v.locked(A, 'spot'), '0');
  });

  test('clientOrderId is unique among live orders and for 24 h after the order ends', () => {
    const v = venue();
    v.fund(A, '100000');
    const r = v.order(A, { market: BTC, side: 'buy', qty: '0.01', price: '99000', cid: 'x-1' });
    const dup = v.place(A, { market: ETH, side: 'buy', qty: '0.01', price: '3000', cid: 'x-1' });
    assert.equal(!dup.ok && dup.code, 'DUPLICATE_CLIENT_ORDER_ID');
    v.ok({ type: 'clob.cancel', account: A, orderId: Number(r.order.id) });
    const again = v.place(A, { market: BTC, side: 'buy', qty: '0.01', price: '99000', cid: 'x-1' });
    assert.equal(!again.ok && again.code, 'DUPLICATE_CLIENT_ORDER_ID');
    v.t += 86_400_000;
    v.index('BTC', '100000');
    assert.equal(v.place(A, { market: BTC, side: 'buy', qty: '0.01', price: '99000', cid: 'x-1' }).ok, true);
  });
});

describe('self-trade prevention and transfers', () => {
  test('cancel_maker removes the caller\'s own resting order and releases its hold', () => {
    const v = venue();
    v.fund(A, '100000');
    v.grant(A, 'BTC', '1');
    v.grant(B, 'BTC', '1');
    const own = v.order(A, { market: BTC, side: 'sell', qty: '0.1', price: '100000' });
    v.order(B, { market: BTC, side: 'sell', qty: '0.1', price: '100010' });
    const r = v.order(A, { market: BTC, side: 'buy', qty: '0.1', price: '100010', tif: 'ioc' });
    assert.equal(r.order.status, 'filled');
    assert.equal(d(r.fills[0]!.price), '100010');
    assert.equal(v.locked(A, 'spot', 'BTC'), '0');
    const cancelled = v.ex.clob.findAccount(v.id(A))!.orders.get(Number(own.order.id));
    assert.equal(cancelled, undefined);
  });

  test('a transfer out of spot cannot take locked funds', () => {
    const v = venue();
    v.fund(A, '20000');
    v.order(A, { market: BTC, side: 'buy', qty: '0.1', price: '101000' });
    const out = v.run({
      type: 'wallet.transfer',
      account: A,
      from: 'spot',
      to: 'wallet',
      amount: fx('9894.96'),
    });
    assert.equal(!out.ok && out.code, 'INSUFFICIENT_BALANCE');
    v.ok({ type: 'wallet.transfer', account: A, from: 'spot', to: 'wallet', amount: fx('9894.95') });
    assert.equal(v.available(A, 'spot'), '0');
  });

  test('treasury grants only spot base assets', () => {
    const v = venue();
    const out = v.run({ type: 'treasury.grant', account: A, asset: 'USDC', amount: fx('1') });
    assert.equal(!out.ok && out.code, 'VALIDATION_ERROR');
    v.grant(A, 'ETH', '2.5');
    assert.equal(v.balance(A, 'spot', 'ETH'), '2.5');
    assert.equal(v.system('treasury', 'ETH'), '-2.5');
  });
});
