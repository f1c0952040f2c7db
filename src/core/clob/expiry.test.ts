/**
 * Unit tests of option expiry with the clock: `clock.tick` and `index.publish` commands are driven
 * across an expiry; the settlement price is the 30-minute index TWAP before it (computed here by
 * hand from the published path); resting orders expire, longs receive and shorts pay the payoff
 * through the instrument's clearing account (rounding residue to insurance), positions close with
 * their PnL against the premium, and the instrument leaves the listing. Without a fresh index
 * inside the window nothing settles (the instruments stay `settling`); a short that cannot pay is
 * made whole by the insurance fund and its now unfunded option buys are cancelled, but one that
 * receives on another instrument of the expiry pays from that first (the fund covers a net deficit).
 *
 * How: test/support/clob-venue.ts (real configuration, invariants after every command).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, ClobVenue, clobRequest, d } from '../../../test/support/clob-venue.ts';
import { formatDecimal, fx } from '../money.ts';
import { optionInstruments } from './views.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const E = Date.UTC(2026, 0, 7, 8); // the nearest expiry
const MIN = 60_000;
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];

function venue(funds: string | null = '100000') {
  const v = new ClobVenue(T0);
  v.index('BTC', '100000');
  v.index('ETH', '3000');
  v.tick();
  if (funds !== null) for (const who of [A, B, C]) v.fund(who, funds, 'options');
  const call = v.option('BTC', 'call', '100000');
  const put = v.option('BTC', 'put', '98000');
  return { v, call, put };
}

/** The index path of the final 40 minutes: 101 000, then 103 000 from E − 20 min. */
function drivePath(v: ClobVenue, late = '103000') {
  v.index('BTC', '101000', E - 40 * MIN);
  for (const t of [E - 35 * MIN, E - 30 * MIN, E - 25 * MIN]) v.tick(t);
  v.index('BTC', late, E - 20 * MIN);
  v.tick(E - 10 * MIN);
}

describe('settlement at the index TWAP', () => {
  test('longs receive, shorts pay, positions close, the instrument leaves the listing', () => {
    const { v, call, put } = venue();
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    v.order(C, { market: put, side: 'buy', qty: '0.5', price: '500' });
    v.order(A, { market: put, side: 'sell', qty: '0.5', price: '500', tif: 'ioc' });
    const resting = v.order(A, { market: call, side: 'buy', qty: '1', price: '1000' });
    drivePath(v);
    const before = {
      a: fx(v.balance(A, 'options')),
      b: fx(v.balance(B, 'options')),
      c: fx(v.balance(C, 'options')),
      ins: fx(v.system('insurance')),
    };
    const out = v.run({ type: 'clock.tick' }, E);
    assert.ok(out.ok);
    // TWAP = (101 000 x 10 min + 103 000 x 20 min) / 30 min = 102 333.33…; call payoff 2 333.33…
    assert.equal(fx(v.balance(A, 'options')) - before.a, fx('2333.333333'));
    assert.equal(fx(v.balance(B, 'options')) - before.b, -fx('2333.333334'));
    assert.equal(fx(v.balance(C, 'options')) - before.c, 0n); // the 98 000 put expired worthless
    assert.equal(fx(v.system('insurance')) - before.ins, fx('0.000001'));
    assert.equal(v.ex.ledger.balance({ kind: 'system', name: `clearing:${call}`, asset: 'USDC' }), 0n);
    const positions = out.events.flatMap((e) => (e.type === 'position' ? [e.position] : []));
    const pnl = Object.fromEntries(positions.map((p) => [
      `${p!.accountId}:${p!.marketId}`,
      [p!.status, d(p!.realizedPnl)],
    ]));
    assert.deepEqual(pnl[`${v.id(A)}:${call}`], ['closed', '333.333333']);
    assert.deepEqual(pnl[`${v.id(B)}:${call}`], ['closed', '-333.333334']);
    assert.deepEqual(pnl[`${v.id(A)}:${put}`], ['closed', '250']);
    assert.deepEqual(pnl[`${v.id(C)}:${put}`], ['closed', '-250']);
    const expired = out.events.find((e) => e.type === 'order' && e.order.id === resting.order.id);
    assert.equal(expired?.type === 'order' && expired.order.status, 'expired');
    assert.equal(v.locked(A, 'options'), '0');
    assert.equal(v.clob.markets.has(call), false);
    assert.ok(optionInstruments(v.clob, 'BTC').every((i) => i.expiry > E));
    assert.equal(v.position(A, call), null);
    const settlementLines = out.events.filter((e) => e.type === 'ledger' && e.entry.type === 'settlement');
    assert.equal(settlementLines.length, 3); // A, B and the clearing account
  });

  test('an expiry first reached after downtime longer than the index history still settles at its window TWAP', () => {
    const { v, call } = venue();
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    drivePath(v);
    const before = fx(v.balance(A, 'options'));
    // Down from E − 10 min until past the two hours of index history kept: the first command after
    // it is an index input, which prunes that history before the tick that settles.
    const back = E + 2 * 60 * MIN + 5 * MIN;
    v.index('BTC', '120000', back);
    v.tick(back + 1);
    assert.equal(v.clob.markets.has(call), false, 'settled');
    assert.equal(fx(v.balance(A, 'options')) - before, fx('2333.333333'), 'paid at the window TWAP 102 333.33, not 103 000');
  });

  test('trading stops at the expiry instant; orders are expired at the next tick', () => {
    const { v, call } = venue();
    v.order(A, { market: call, side: 'buy', qty: '1', price: '1000' });
    drivePath(v);
    const late = v.run(
      {
        type: 'clob.place',
        account: C,
        request: clobRequest({ market: call, side: 'buy', qty: '1', price: '1000' }),
      },
      E,
    );
    assert.equal(!late.ok && late.code, 'MARKET_CLOSED');
    v.tick(E + 1);
    assert.equal(v.clob.findAccount(v.id(A))!.orders.size, 0);
  });
});

describe('no settlement without a fresh index in the window', () => {
  test('the instruments stay settling, positions intact, until an operator acts', () => {
    const { v, call } = venue();
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    v.tick(E - 3 * 3_600_000); // the index (max age 1 h) went stale long before the window
    v.tick(E);
    v.index('BTC', '150000', E + MIN); // a price after expiry is not a settlement price
    v.tick(E + 2 * MIN);
    const m = v.clob.markets.get(call)!;
    assert.equal(m.status, 'settling');
    assert.deepEqual(v.position(A, call), { size: '1', entry: '2000', realized: '0' });
    const out = v.place(A, { market: call, side: 'sell', qty: '1', price: '2000' });
    assert.equal(!out.ok && out.code, 'MARKET_CLOSED');
  });
});

describe('a short that cannot pay', () => {
  test('the insurance fund pays the shortfall; the short\'s now unfunded option buys are cancelled', () => {
    const { v, call } = venue(null);
    v.fund(A, '10000', 'options');
    v.fund(B, '16135', 'options');
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2000' });
    v.order(A, { market: call, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    // B has 18 125 with 17 000 of margin in use; a buy of a later option holds 1 000 + 125.
    const far = v.option('BTC', 'call', '120000', 5);
    const bid = v.order(B, { market: far, side: 'buy', qty: '1', price: '1000' });
    drivePath(v, '130000');
    const ins = fx(v.system('insurance'));
    const out = v.run({ type: 'clock.tick' }, E);
    assert.ok(out.ok);
    // TWAP = (101 000 x 10 + 130 000 x 20) / 30 = 120 333.33…; B owes 20 333.333334, has 18 125.
    assert.equal(v.balance(A, 'options'), formatDecimal(fx('7970') + fx('20333.333333')));
    assert.equal(v.balance(B, 'options'), '0');
    assert.equal(fx(v.system('insurance')) - ins, fx('0.000001') - (fx('20333.333334') - fx('18125')));
    const cancelled = out.events.find((e) => e.type === 'order' && e.order.id === bid.order.id);
    assert.equal(cancelled?.type === 'order' && cancelled.order.status, 'cancelled');
    assert.equal(cancelled?.type === 'order' && cancelled.order.rejectReason, 'INSUFFICIENT_MARGIN');
    assert.equal(v.locked(B, 'options'), '0');
  });

  test('an account paying on one instrument and receiving more on another of the expiry pays from its receipt, not the fund', () => {
    // A put spread, short 98 000 and long 100 000 (listed in that order, so the short leg settles
    // first), settling at 60 000: U owes 38 000 and receives 40 000, net +2 000 on 18 940.
    const { v } = venue(null);
    const U = addr(0xd);
    v.fund(U, '20000', 'options');
    for (const who of [A, B]) v.fund(who, '100000', 'options');
    const p98 = v.option('BTC', 'put', '98000');
    const p100 = v.option('BTC', 'put', '100000');
    v.order(A, { market: p98, side: 'buy', qty: '1', price: '1000' });
    v.order(U, { market: p98, side: 'sell', qty: '1', price: '1000', tif: 'ioc' });
    v.order(B, { market: p100, side: 'sell', qty: '1', price: '2000' });
    v.order(U, { market: p100, side: 'buy', qty: '1', price: '2000', tif: 'ioc' });
    const far = v.option('BTC', 'call', '120000', 5);
    const bid = v.order(U, { market: far, side: 'buy', qty: '1', price: '1000' });
    v.index('BTC', '60000', E - 40 * MIN);
    for (const t of [E - 30 * MIN, E - 20 * MIN, E - 10 * MIN]) v.tick(t);
    const u = fx(v.balance(U, 'options'));
    const ins = fx(v.system('insurance'));
    const out = v.run({ type: 'clock.tick' }, E);
    assert.ok(out.ok);
    assert.equal(fx(v.balance(U, 'options')) - u, fx('2000'), 'U is paid its net payoff');
    assert.equal(fx(v.system('insurance')), ins, 'the fund pays no shortfall for a net-positive account');
    assert.equal(out.events.some((e) => e.type === 'ledger' && e.entry.type === 'insurance_fund'), false);
    assert.equal(out.events.some((e) => e.type === 'order' && e.order.id === bid.order.id), false, 'its funded buy stays');
    assert.equal(v.clob.findAccount(v.id(U))!.orders.size, 1);
    const pnl = out.events.flatMap((e) => (e.type === 'position' && e.position.accountId === v.id(U)
      ? [[e.position.marketId, d(e.position.realizedPnl)]]
      : []));
    assert.deepEqual(Object.fromEntries(pnl), { [p98]: '-37000', [p100]: '38000' }, 'each leg closes at its own payoff');
  });
});
