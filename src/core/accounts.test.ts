/**
 * Account ids depend only on accepted (journaled) commands: a rejected command from a new address
 * must not open an account, or replay after a restart would give later accounts other ids.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../config/core.ts';
import { Exchange } from './exchange.ts';
import { fx } from './money.ts';
import type { OrderRequest } from './linear/order.ts';

const X = '0x' + 'a'.repeat(40);
const Y = '0x' + 'b'.repeat(40);

test('a rejected order from a new address opens no account; replay gives the same ids', () => {
  const live = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const request: OrderRequest = {
    marketId: 'BTC-PERP', side: 0, type: 'limit', quantity: fx('1'), price: fx('100000'), timeInForce: 'gtc',
    postOnly: false, reduceOnly: false, marginMode: 'cross', clientOrderId: null, stopPrice: null,
    takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null,
  };
  const rejected = live.execute({ type: 'perp.place', account: X, request }, 1);
  assert.equal(rejected.ok, false, 'no index: the order is refused');
  assert.equal(live.accounts.find(X), undefined);
  const deposit = { type: 'chain.deposit_observed' as const, txHash: '0x1', account: Y, amount: fx('5'), confirmations: 1 };
  assert.ok(live.execute(deposit, 2).ok);
  const replayed = new Exchange(coreConfig({ depositConfirmations: 1 }));
  assert.ok(replayed.execute(deposit, 2).ok);
  assert.equal(live.accounts.find(Y)?.id, replayed.accounts.find(Y)?.id);
});
