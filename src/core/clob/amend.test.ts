/**
 * Unit tests of amending resting orders (`clob.modify`, research/mechanics.md 7): time priority is
 * kept only when the price is unchanged and the size decreases; a size increase or a price change
 * re-queues the order behind the level (same id, fill history and creation time kept); a crossing
 * re-queue trades, a post-only one is refused; increases pass the funding gate with the old hold
 * counted as released; refusals change nothing; holds follow every amend exactly.
 *
 * How: test/support/clob-venue.ts (real configuration, invariants after every command). Priority
 * is observed through who a later taker fills first.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, ClobVenue, d } from '../../../test/support/clob-venue.ts';
import type { PlaceResult } from '../linear/engine.ts';
import { fx } from '../money.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];

function venue() {
  const v = new ClobVenue(T0);
  v.index('BTC', '100000');
  v.index('ETH', '3000');
  v.tick();
  const call = v.option('BTC', 'call', '100000');
  for (const who of [A, B, C]) v.fund(who, '100000', 'options');
  return { v, call };
}

function modify(v: ClobVenue, who: string, id: string, price?: string, qty?: string) {
  return v.run({
    type: 'clob.modify',
    account: who,
    orderId: Number(id),
    price: price === undefined ? null : fx(price),
    quantity: qty === undefined ? null : fx(qty),
  });
}

/** Which account's order the next taker fills first at that level. */
function firstFilled(v: ClobVenue, call: string, side: 'buy' | 'sell', price: string): number {
  const r = v.order(C, { market: call, side, qty: '0.01', price, tif: 'ioc' });
  return r.fills[0]!.maker.accountId;
}

describe('priority', () => {
  test('same price, smaller size: keeps its place; the hold shrinks exactly', () => {
    const { v, call } = venue();
    const a = v.order(A, { market: call, side: 'buy', qty: '1', price: '2000' });
    v.order(B, { market: call, side: 'buy', qty: '1', price: '2000' });
    assert.equal(v.locked(A, 'options'), '2250');
    const out = modify(v, A, a.order.id, undefined, '0.5');
    assert.ok(out.ok);
    assert.equal(d((out.result as { order: { quantity: bigint } }).order.quantity), '0.5');
    assert.equal(v.locked(A, 'options'), '1125');
    assert.equal(firstFilled(v, call, 'sell', '2000'), v.id(A));
  });

  test('same price, larger size: re-queued behind the level', () => {
    const { v, call } = venue();
    const a = v.order(A, { market: call, side: 'buy', qty: '1', price: '2000' });
    v.order(B, { market: call, side: 'buy', qty: '1', price: '2000' });
    assert.ok(modify(v, A, a.order.id, undefined, '2').ok);
    assert.equal(v.locked(A, 'options'), '4500');
    assert.equal(firstFilled(v, call, 'sell', '2000'), v.id(B));
  });

  test('a price change re-queues with the same id, creation time and fill history', () => {
    const { v, call } = venue();
    const a = v.order(A, { market: call, side: 'sell', qty: '1', price: '2100' });
    v.order(B, { market: call, side: 'buy', qty: '0.3', price: '2100', tif: 'ioc' });
    v.order(B, { market: call, side: 'sell', qty: '1', price: '2050' });
    const out = modify(v, A, a.order.id, '2050');
    assert.ok(out.ok);
    const o = (out.result as PlaceResult).order;
    assert.equal(o.id, a.order.id);
    assert.equal(o.status, 'open');
    assert.equal(o.createdAt, a.order.createdAt);
    assert.equal(d(o.filledQuantity), '0.3');
    assert.equal(d(o.remainingQuantity), '0.7');
    assert.equal(d(o.price), '2050');
    assert.equal(firstFilled(v, call, 'buy', '2050'), v.id(B));
  });
});

describe('checks', () => {
  test('size must exceed what has filled; unknown or other accounts\' orders are not found', () => {
    const { v, call } = venue();
    const a = v.order(A, { market: call, side: 'sell', qty: '1', price: '2100' });
    v.order(B, { market: call, side: 'buy', qty: '0.3', price: '2100', tif: 'ioc' });
    const low = modify(v, A, a.order.id, undefined, '0.3');
    assert.equal(!low.ok && low.code, 'VALIDATION_ERROR');
    const other = modify(v, B, a.order.id, '2000');
    assert.equal(!other.ok && other.code, 'NOT_FOUND');
    const none = modify(v, A, a.order.id);
    assert.equal(!none.ok && none.code, 'VALIDATION_ERROR');
    assert.equal(modify(v, A, a.order.id, '2100', '1').ok, true); // unchanged: a no-op
  });

  test('a crossing re-queue trades; a post-only one is refused and nothing changes', () => {
    const { v, call } = venue();
    v.order(B, { market: call, side: 'sell', qty: '0.5', price: '2000' });
    const po = v.order(A, { market: call, side: 'buy', qty: '1', price: '1900', postOnly: true });
    const before = v.locked(A, 'options');
    const refused = modify(v, A, po.order.id, '2000');
    assert.equal(!refused.ok && refused.code, 'POST_ONLY_WOULD_CROSS');
    assert.equal(v.locked(A, 'options'), before);
    const plain = v.order(C, { market: call, side: 'buy', qty: '1', price: '1800' });
    const out = modify(v, C, plain.order.id, '2000');
    assert.ok(out.ok);
    const r = out.result as { order: { status: string; filledQuantity: bigint }; fills: unknown[] };
    assert.equal(r.fills.length, 1);
    assert.equal(d(r.order.filledQuantity), '0.5');
    assert.equal(r.order.status, 'open');
  });

  test('an increase passes the margin gate with the old hold released; a refusal changes nothing', () => {
    const { v, call } = venue();
    v.fund(addr(0xd), '30000', 'options');
    const D = addr(0xd);
    const s = v.order(D, { market: call, side: 'sell', qty: '1', price: '3000' }); // IM 15 000
    assert.equal(v.locked(D, 'options'), '15000');
    assert.equal(modify(v, D, s.order.id, undefined, '2').ok, true);
    assert.equal(v.locked(D, 'options'), '30000');
    const over = modify(v, D, s.order.id, undefined, '2.01');
    assert.equal(!over.ok && over.code, 'INSUFFICIENT_MARGIN');
    assert.equal(v.locked(D, 'options'), '30000');
    assert.equal(modify(v, D, s.order.id, '3100', '2').ok, true);
  });

  test('an order the band has moved away from can still shrink in place; a re-queue there is refused', () => {
    const v = new ClobVenue(T0);
    v.index('BTC', '100000');
    v.fund(A, '10000');
    const bid = v.order(A, { market: 'BTC-USDC', side: 'buy', qty: '0.02', price: '104000' });
    v.index('BTC', '90000'); // a buy may now be priced at most 10 % above: 99 000
    const bigger = modify(v, A, bid.order.id, undefined, '0.03');
    assert.equal(!bigger.ok && bigger.code, 'PRICE_OUT_OF_BAND', 'growing re-queues at a price outside the band');
    const smaller = modify(v, A, bid.order.id, undefined, '0.01');
    assert.ok(smaller.ok, `shrinking in place adds nothing to the book: ${smaller.ok ? '' : smaller.code}`);
    assert.equal(d((smaller.result as PlaceResult).order.remainingQuantity), '0.01');
  });

  test('spot: a sell can grow only into free base; the hold follows the new size', () => {
    const v = new ClobVenue(T0);
    v.index('BTC', '100000');
    v.grant(A, 'BTC', '1');
    const s = v.order(A, { market: 'BTC-USDC', side: 'sell', qty: '0.5', price: '101000' });
    assert.equal(modify(v, A, s.order.id, undefined, '0.8').ok, true);
    assert.equal(v.locked(A, 'spot', 'BTC'), '0.8');
    const over = modify(v, A, s.order.id, undefined, '1.00001');
    assert.equal(!over.ok && over.code, 'INSUFFICIENT_BALANCE');
    assert.equal(modify(v, A, s.order.id, undefined, '0.2').ok, true);
    assert.equal(v.locked(A, 'spot', 'BTC'), '0.2');
  });
});
