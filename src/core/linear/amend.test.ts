/**
 * Amending a resting perp order (engine.ts amend, `perp.modify`) through the exchange core: the
 * CLOB's rules (clob/amend.ts) on the linear engine. Same price and a smaller size keeps time
 * priority; any other change re-queues the order with the same id after every check of a new order
 * (margin gate with the old order counted as gone, band, post-only, filled quantity), and a
 * crossing price trades at once; a refused amend leaves the order, its queue place, the account's
 * resting totals and risk exactly as they were; conditional orders and other accounts' orders are refused. Each test
 * ends with the engine's audit of its kept sums.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import { UNDERLYINGS } from '../../config/markets.ts';
import type { Command } from '../commands.ts';
import { Exchange, type Outcome } from '../exchange.ts';
import { formatDecimal, fx, type Fixed } from '../money.ts';
import { PLAIN_ORDER, type LinearOrder, type OrderRequest } from './order.ts';
import type { PlaceResult } from './engine.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];
const BTC_LEVERAGE = UNDERLYINGS.find((u) => u.symbol === 'BTC')!.marginTiers[0]!.maxLeverage;
const im = (notional: string) => formatDecimal(fx(notional) / BigInt(BTC_LEVERAGE));
const config = () => coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 });

interface Fields { side: 'buy' | 'sell'; qty: string; price?: string; postOnly?: boolean; reduceOnly?: boolean; stop?: string; tif?: 'gtc' | 'ioc' }

function request(o: Fields): OrderRequest {
  const type = o.price === undefined ? 'market' : 'limit';
  return {
    marketId: 'BTC-PERP', side: o.side === 'buy' ? 0 : 1, type, quantity: fx(o.qty), price: o.price === undefined ? null : fx(o.price),
    timeInForce: o.tif ?? (type === 'market' ? 'ioc' : 'gtc'), postOnly: o.postOnly ?? false, reduceOnly: o.reduceOnly ?? false,
    marginMode: 'cross', ...PLAIN_ORDER, stopPrice: o.stop === undefined ? null : fx(o.stop),
  };
}

class Venue {
  readonly ex = new Exchange(config());
  t = T0;
  private txs = 0;

  constructor() {
    this.run({ type: 'index.publish', underlying: 'BTC', price: fx('100000'), sourceTs: T0 + 1 });
  }

  /** Runs a command 1 ms after the last one (`advance` false: at the same time, so a no-op leaves the clock too). */
  run(command: Command, advance = true): Outcome<unknown> {
    if (advance) this.t++;
    const outcome = this.ex.execute(command, this.t);
    assert.deepEqual(this.ex.linear.audit(true), [], 'kept sums equal a fresh walk');
    return outcome as Outcome<unknown>;
  }

  fund(address: string, usdc: string): void {
    const txHash = `0x${(++this.txs).toString(16).padStart(64, '0')}`;
    ok(this.run({ type: 'chain.deposit_observed', txHash, account: address, amount: fx(usdc), confirmations: 1 }));
    ok(this.run({ type: 'wallet.transfer', account: address, from: 'wallet', to: 'perps', amount: fx(usdc) }));
  }

  order(address: string, o: Fields): PlaceResult {
    return ok(this.run({ type: 'perp.place', account: address, request: request(o) })) as PlaceResult;
  }

  amend(address: string, id: string, price: string | null, quantity: string | null, advance = true): Outcome<PlaceResult> {
    const command: Command = { type: 'perp.modify', account: address, orderId: Number(id), price: price === null ? null : fx(price), quantity: quantity === null ? null : fx(quantity) };
    return this.run(command, advance) as Outcome<PlaceResult>;
  }

  /** Who a taker selling `qty` at `price` meets first: the makers' order ids, in fill order. */
  sellInto(price: string, qty: string): string[] {
    const r = this.order(C, { side: 'sell', qty, price, tif: 'ioc' });
    return r.fills.map((f) => f.maker.orderId);
  }

  /**
   * What an amend could change, as text: every resting order in book order with its figures, time
   * priority and request, each account's resting totals and risk. (The state image also holds the
   * margin caches, which any refused order may refresh, so it is not compared.)
   */
  visible(): string {
    const book: unknown[] = [];
    this.ex.linear.markets.get('BTC-PERP')!.book.forEachResting((n) => {
      const o = n as LinearOrder;
      book.push([o.id, o.owner, o.side, o.priceTicks, o.remainingLots, o.originalLots, o.filledLots, o.seq, o.reservedLots, o.countedReduceOnlyLots, o.status, o.request]);
    });
    const accounts = [A, B, C].map((a) => {
      const id = this.ex.accounts.find(a)?.id;
      const account = id === undefined ? undefined : this.ex.linear.findAccount(id);
      if (account === undefined) return null;
      const totals = [...account.totals.values()].map((t) => [t.mode, t.buyLots, t.buyNotional, t.sellLots, t.sellNotional]);
      return [[...account.orders.keys()], totals, this.ex.linear.risk(account.id), [...account.positions.values()].map((p) => [p.size, p.restingReduceOnlyLots])];
    });
    return JSON.stringify([book, accounts], (_, x: unknown) => (typeof x === 'bigint' ? String(x) : x));
  }
}

function ok<R>(outcome: Outcome<R>): R {
  if (!outcome.ok) assert.fail(`rejected ${outcome.code}: ${outcome.message}`);
  return outcome.result;
}

/** The amend `[who, id, price, quantity]` is refused with `code` and the state image is unchanged. */
function refused(v: Venue, amend: [string, string, string | null, string | null], code: string): void {
  const before = v.visible();
  const o = v.amend(...amend, false);
  assert.equal(o.ok, false, 'expected a rejection');
  if (!o.ok) assert.equal(o.code, code, o.message);
  assert.equal(v.visible(), before, 'a refused amend changes nothing');
}

const d = (v: Fixed | null) => (v === null ? null : formatDecimal(v));

function funded(): Venue {
  const v = new Venue();
  for (const a of [A, B, C]) v.fund(a, '100000');
  return v;
}

describe('amending a resting perp order', () => {
  test('same price, smaller size: shrunk in place, time priority kept', () => {
    const v = funded();
    const a = v.order(A, { side: 'buy', qty: '1', price: '99000' });
    const b = v.order(B, { side: 'buy', qty: '1', price: '99000' });
    const r = ok(v.amend(A, a.order.id, null, '0.4'));
    assert.equal(r.order.id, a.order.id);
    assert.equal(d(r.order.quantity), '0.4');
    assert.equal(d(r.order.remainingQuantity), '0.4');
    assert.deepEqual(v.sellInto('99000', '0.5'), [a.order.id, b.order.id], 'A still first in the queue');
  });

  test('a larger size re-queues the order behind the others, same id', () => {
    const v = funded();
    const a = v.order(A, { side: 'buy', qty: '1', price: '99000' });
    const b = v.order(B, { side: 'buy', qty: '1', price: '99000' });
    const r = ok(v.amend(A, a.order.id, null, '2'));
    assert.equal(r.order.id, a.order.id);
    assert.equal(d(r.order.quantity), '2');
    assert.deepEqual(v.sellInto('99000', '1.5'), [b.order.id, a.order.id], 'B now first');
  });

  test('a new price moves the order; a crossing price trades at once as a taker', () => {
    const v = funded();
    const a = v.order(A, { side: 'buy', qty: '1', price: '99000' });
    const moved = ok(v.amend(A, a.order.id, '99500', null));
    assert.equal(d(moved.order.price), '99500');
    assert.equal(moved.fills.length, 0);
    v.order(B, { side: 'sell', qty: '0.3', price: '100000' });
    const crossed = ok(v.amend(A, a.order.id, '100000', null));
    assert.equal(crossed.order.id, a.order.id);
    assert.equal(crossed.fills.length, 1);
    assert.equal(crossed.fills[0]!.taker.orderId, a.order.id, 'the amended order is the taker');
    assert.equal(d(crossed.order.filledQuantity), '0.3');
    assert.equal(d(crossed.order.remainingQuantity), '0.7');
    assert.equal(crossed.order.status, 'open');
    // The quantity is the total: with 0.3 filled, 0.3 is refused and 0.5 leaves 0.2 resting.
    refused(v, [A, a.order.id, null, '0.3'], 'VALIDATION_ERROR');
    const shrunk = ok(v.amend(A, a.order.id, null, '0.5'));
    assert.equal(d(shrunk.order.remainingQuantity), '0.2');
  });

  test('the margin gate counts the old order as gone: a price change at the edge of free collateral passes', () => {
    const v = new Venue();
    v.fund(A, im('100000'));
    const a = v.order(A, { side: 'buy', qty: '1', price: '100000', postOnly: true });
    const r = ok(v.amend(A, a.order.id, '99000', null));
    assert.equal(d(r.order.price), '99000');
    refused(v, [A, a.order.id, null, '1.5'], 'INSUFFICIENT_MARGIN');
  });

  test('a refused amend leaves the order where it was: same price, size and place in the queue', () => {
    const v = funded();
    const a = v.order(A, { side: 'buy', qty: '1', price: '99000', postOnly: true });
    const b = v.order(B, { side: 'buy', qty: '1', price: '99000' });
    v.order(B, { side: 'sell', qty: '1', price: '100000' });
    refused(v, [A, a.order.id, '100000', null], 'POST_ONLY_WOULD_CROSS');
    refused(v, [A, a.order.id, '120000', null], 'PRICE_OUT_OF_BAND');
    refused(v, [A, a.order.id, '99000.05', null], 'INVALID_TICK');
    refused(v, [A, a.order.id, null, '100000'], 'SIZE_OUT_OF_RANGE');
    refused(v, [A, a.order.id, null, null], 'VALIDATION_ERROR');
    assert.deepEqual(v.sellInto('99000', '1.5'), [a.order.id, b.order.id]);
  });

  test('another account\'s order, an ended order and a conditional order are refused', () => {
    const v = funded();
    const a = v.order(A, { side: 'buy', qty: '1', price: '99000' });
    refused(v, [B, a.order.id, '99100', null], 'NOT_FOUND');
    const stop = v.order(A, { side: 'buy', qty: '1', stop: '101000' });
    assert.equal(stop.order.status, 'untriggered');
    refused(v, [A, stop.order.id, null, '2'], 'VALIDATION_ERROR');
    ok(v.run({ type: 'perp.cancel', account: A, orderId: Number(a.order.id) }));
    refused(v, [A, a.order.id, '99100', null], 'NOT_FOUND');
  });

  test('a reduce-only order amended past its position is clipped to it, as a new one would be', () => {
    const v = funded();
    v.order(B, { side: 'sell', qty: '1', price: '100000' });
    v.order(A, { side: 'buy', qty: '1', price: '100000', tif: 'ioc' });
    const exit = v.order(A, { side: 'sell', qty: '0.5', price: '101000', reduceOnly: true });
    const r = ok(v.amend(A, exit.order.id, '100900', '3'));
    assert.equal(d(r.order.remainingQuantity), '1');
    assert.equal(d(r.order.price), '100900');
  });
});
