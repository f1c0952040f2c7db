/**
 * An isolated order's chosen leverage (OrderRequest.leverage) through the exchange core: its fills
 * post notional / leverage of isolated margin (never less than the tiers' initial margin), the
 * margin gate reserves that while it rests and refuses what the cross cash cannot fund, the
 * preview's estimated liquidation price is the one the position view then shows, an amend keeps
 * the leverage, and a cross order with a leverage, or a leverage below 1 or above the tier's
 * maximum, is refused (400 VALIDATION_ERROR). Without a leverage nothing changes. Each command ends
 * with the engine's audit of its kept sums.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import type { Command } from '../commands.ts';
import { Exchange, type Outcome } from '../exchange.ts';
import { formatDecimal, fx, type Fixed } from '../money.ts';
import type { PlaceResult } from './engine.ts';
import { PLAIN_ORDER, type OrderRequest } from './order.ts';
import { positionViewFor } from './views.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const [A, B] = [addr(0xa), addr(0xb)];
const d = (v: Fixed | null | undefined) => (v === null || v === undefined ? null : formatDecimal(v));

interface Fields { side: 'buy' | 'sell'; qty: string; price?: string; mode?: 'cross' | 'isolated'; leverage?: string; tif?: 'gtc' | 'ioc' }

function request(o: Fields): OrderRequest {
  const type = o.price === undefined ? 'market' : 'limit';
  return {
    marketId: 'BTC-PERP', side: o.side === 'buy' ? 0 : 1, type, quantity: fx(o.qty), price: o.price === undefined ? null : fx(o.price),
    timeInForce: o.tif ?? (type === 'market' ? 'ioc' : 'gtc'), postOnly: false, reduceOnly: false, marginMode: o.mode ?? 'isolated',
    ...PLAIN_ORDER, ...(o.leverage === undefined ? {} : { leverage: fx(o.leverage) }),
  };
}

class Venue {
  readonly ex = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 }));
  t = T0;

  constructor() {
    this.run({ type: 'index.publish', underlying: 'BTC', price: fx('100000'), sourceTs: T0 + 1 });
  }

  run(command: Command): Outcome<unknown> {
    const outcome = this.ex.execute(command, ++this.t);
    assert.deepEqual(this.ex.linear.audit(true), [], 'kept sums equal a fresh walk');
    return outcome as Outcome<unknown>;
  }

  fund(address: string, usdc: string): void {
    ok(this.run({ type: 'chain.deposit_observed', txHash: `0x${address.slice(-4)}${this.t}`, account: address, amount: fx(usdc), confirmations: 1 }));
    ok(this.run({ type: 'wallet.transfer', account: address, from: 'wallet', to: 'perps', amount: fx(usdc) }));
  }

  place(address: string, o: Fields): Outcome<PlaceResult> {
    return this.run({ type: 'perp.place', account: address, request: request(o) }) as Outcome<PlaceResult>;
  }

  preview(address: string, o: Fields) {
    return this.ex.previewPerpOrder(address, request(o), this.t);
  }

  view(address: string) {
    return positionViewFor(this.ex.linear, this.ex.accounts.find(address)!.id, 'BTC-PERP', 'isolated', this.t);
  }

  orderMargin(address: string): string | null {
    return d(this.ex.linear.risk(this.ex.accounts.find(address)!.id).orderIM);
  }
}

function ok<R>(outcome: Outcome<R>): R {
  if (!outcome.ok) assert.fail(`rejected ${outcome.code}: ${outcome.message}`);
  return outcome.result;
}

function refused(outcome: Outcome<unknown>, code: string, message?: RegExp): void {
  assert.equal(outcome.ok, false, 'expected a rejection');
  if (outcome.ok) return;
  assert.equal(outcome.code, code, outcome.message);
  if (message !== undefined) assert.match(outcome.message, message);
}

function funded(): Venue {
  const v = new Venue();
  v.fund(A, '50000');
  v.fund(B, '1000000');
  return v;
}

describe('leverage of isolated orders', () => {
  test('a 5x isolated buy posts notional / 5; its liquidation price is the preview\'s estimate', () => {
    const v = funded();
    ok(v.place(B, { side: 'sell', qty: '1', price: '100000', mode: 'cross' }));
    const preview = v.preview(A, { side: 'buy', qty: '1', leverage: '5' });
    assert.equal(preview.rejection, null);
    assert.equal(d(preview.plan?.marginRequired), '20000', '100000 / 5');
    const filled = ok(v.place(A, { side: 'buy', qty: '1', leverage: '5' }));
    assert.equal(filled.order.status, 'filled');
    const view = v.view(A)!;
    assert.equal(d(view.margin), '20000', 'the isolated margin is notional / leverage');
    assert.equal(d(view.liquidationPrice), d(preview.estimate?.liquidationPrice));
    assert.equal(d(view.leverage), d(preview.estimate?.leverage));
    assert.equal(d(view.leverage), '5');
  });

  test('without a leverage the tiers\' margin stands (50x: 2 %); a leverage above the tier posts the tiers\' margin', () => {
    const v = funded();
    ok(v.place(B, { side: 'sell', qty: '2', price: '100000', mode: 'cross' }));
    ok(v.place(A, { side: 'buy', qty: '1' }));
    assert.equal(d(v.view(A)!.margin), '2000');
    const v2 = funded();
    ok(v2.place(B, { side: 'sell', qty: '1', price: '100000', mode: 'cross' }));
    ok(v2.place(A, { side: 'buy', qty: '1', leverage: '50' }));
    assert.equal(d(v2.view(A)!.margin), '2000', '50x is the tier: notional / 50 is its margin');
  });

  test('a resting 4x bid reserves notional / 4 until it fills or leaves; partial fills release their share', () => {
    const v = funded();
    ok(v.place(A, { side: 'buy', qty: '1', price: '99000', leverage: '4' }));
    // The tiers' reservation (2 % of the bid valued at the mark, 100000, as for any bid) and what the
    // leverage asks beyond the tiers' margin of the order's notional: 2000 + (24750 - 1980).
    assert.equal(v.orderMargin(A), '24770', 'at least 99000 / 4');
    refused(v.place(A, { side: 'buy', qty: '1.2', price: '99000', leverage: '4' }), 'INSUFFICIENT_MARGIN');
    ok(v.place(B, { side: 'sell', qty: '0.4', price: '99000', mode: 'cross', tif: 'ioc' }));
    assert.equal(d(v.view(A)!.margin), '9900', '0.4 x 99000 / 4');
    assert.equal(v.orderMargin(A), '14862', 'the rest: 1200 + (0.6 x 99000 / 4 - 1188)');
    ok(v.run({ type: 'perp.cancel_all', account: A, filter: {} }));
    assert.equal(v.orderMargin(A), '0');
  });

  test('an amend keeps the order\'s leverage', () => {
    const v = funded();
    const placed = ok(v.place(A, { side: 'buy', qty: '1', price: '99000', leverage: '4' }));
    ok(v.run({ type: 'perp.modify', account: A, orderId: Number(placed.order.id), price: fx('98000'), quantity: null }));
    assert.equal(v.orderMargin(A), '24540', '2000 + (98000 / 4 - 1960)');
    ok(v.run({ type: 'perp.modify', account: A, orderId: Number(placed.order.id), price: null, quantity: fx('0.5') }));
    assert.equal(v.orderMargin(A), '12270', 'shrunk in place: 1000 + (0.5 x 98000 / 4 - 980)');
  });

  test('a cross order with a leverage, a leverage below 1 or above the tier\'s maximum are refused', () => {
    const v = funded();
    refused(v.place(A, { side: 'buy', qty: '0.1', price: '99000', mode: 'cross', leverage: '5' }), 'VALIDATION_ERROR', /isolated orders only.*whole account/);
    refused(v.place(A, { side: 'buy', qty: '0.1', price: '99000', leverage: '0.5' }), 'VALIDATION_ERROR', /at least 1/);
    refused(v.place(A, { side: 'buy', qty: '0.1', price: '99000', leverage: '51' }), 'VALIDATION_ERROR', /may not exceed 50x/);
    assert.equal(v.preview(A, { side: 'buy', qty: '0.1', price: '99000', leverage: '51' }).rejection?.code, 'VALIDATION_ERROR');
  });
});
