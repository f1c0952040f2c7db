/**
 * Unit tests of the double-entry ledger: a transaction that does not balance per asset is refused
 * with an InvariantError and changes nothing; zero lines are dropped (an all-zero transaction
 * records nothing and uses no id); balances, entry ids, tx ids, balanceAfter and metadata are
 * exact; `assertTouchedNonNegative` catches a negative user bucket touched by the command while
 * system accounts (chain, fees, clearing) may go negative. Each test builds a fresh Ledger and
 * collects the entries it emits.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvariantError } from '../assert.ts';
import { fx } from '../money.ts';
import {
  Ledger,
  ledgerKey,
  type Bucket,
  systemAccount,
  userAccount,
  type LedgerEntry,
} from './ledger.ts';

const USDC = 'USDC';
const alice = (bucket: Bucket, asset = USDC) => userAccount(1, bucket, asset);
const chain = systemAccount('chain', USDC);

function fresh(): { ledger: Ledger; entries: LedgerEntry[] } {
  const entries: LedgerEntry[] = [];
  return { ledger: new Ledger((e) => entries.push(e)), entries };
}

function dump(ledger: Ledger): [string, bigint][] {
  return [...ledger.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('ledger: balanced transactions only', () => {
  test('an unbalanced post throws InvariantError and changes nothing', () => {
    const { ledger, entries } = fresh();
    ledger.move('deposit', chain, alice('wallet'), fx('10'), 1);
    const before = dump(ledger);
    const entriesBefore = entries.length;
    assert.throws(
      () =>
        ledger.post('transfer', [
          { account: alice('wallet'), delta: fx('-5') },
          { account: alice('perps'), delta: fx('4') },
        ], 2),
      (err: unknown) => err instanceof InvariantError && /unbalanced in USDC/.test(err.message),
    );
    assert.deepEqual(dump(ledger), before);
    assert.equal(entries.length, entriesBefore);
    // the next transaction still gets the next id: the refused one consumed none
    ledger.move('transfer', alice('wallet'), alice('perps'), fx('1'), 3);
    assert.equal(entries.at(-1)?.txId, 2);
  });

  test('balance is checked per asset: +1 USDC against -1 BTC is refused', () => {
    const { ledger } = fresh();
    assert.throws(
      () =>
        ledger.post('trade', [
          { account: alice('spot', USDC), delta: 1n },
          { account: systemAccount('clearing:BTC-USDC', 'BTC'), delta: -1n },
        ], 1),
      InvariantError,
    );
    assert.deepEqual(dump(ledger), []);
  });

  test('a multi-asset transaction that balances in each asset is accepted', () => {
    const { ledger } = fresh();
    ledger.post('trade', [
      { account: alice('spot', USDC), delta: fx('-100') },
      { account: userAccount(2, 'spot', USDC), delta: fx('100') },
      { account: alice('spot', 'BTC'), delta: fx('0.001') },
      { account: userAccount(2, 'spot', 'BTC'), delta: fx('-0.001') },
    ], 1);
    assert.deepEqual(ledger.totalsByAsset(), new Map([['USDC', 0n], ['BTC', 0n]]));
  });

  test('move refuses a negative amount and a cross-asset move', () => {
    const { ledger } = fresh();
    assert.throws(() => ledger.move('transfer', alice('wallet'), alice('perps'), -1n, 1), InvariantError);
    const btc = alice('spot', 'BTC');
    assert.throws(() => ledger.move('transfer', btc, alice('spot', USDC), 1n, 1), InvariantError);
    assert.deepEqual(dump(ledger), []);
  });
});

describe('ledger: zero lines', () => {
  test('zero lines are dropped and do not produce entries', () => {
    const { ledger, entries } = fresh();
    const txId = ledger.post('funding', [
      { account: chain, delta: fx('-3') },
      { account: alice('perps'), delta: 0n },
      { account: alice('wallet'), delta: fx('3') },
      { account: systemAccount('fees', USDC), delta: 0n },
    ], 7);
    assert.equal(txId, 1);
    assert.equal(entries.length, 2);
    assert.deepEqual(entries.map((e) => ledgerKey(e.account)), ['s:chain:USDC', 'u:1:wallet:USDC']);
    assert.equal([...ledger.entries()].some(([k]) => k === 'u:1:perps:USDC' || k === 's:fees:USDC'), false);
  });

  test('an all-zero transaction returns 0, records nothing and uses no tx id', () => {
    const { ledger, entries } = fresh();
    assert.equal(ledger.move('transfer', alice('wallet'), alice('perps'), 0n, 1), 0);
    assert.equal(ledger.post('funding', [], 1), 0);
    assert.equal(entries.length, 0);
    assert.deepEqual(dump(ledger), []);
    assert.equal(ledger.move('deposit', chain, alice('wallet'), 5n, 2), 1);
  });
});

describe('ledger: balances and entries', () => {
  test('balances, entry ids, tx ids, balanceAfter, ref, txHash and time are exact', () => {
    const { ledger, entries } = fresh();
    const meta1 = { ref: 'dep_1', txHash: '0xabc' };
    const t1 = ledger.move('deposit', chain, alice('wallet'), fx('100.5'), 1000, meta1);
    const meta2 = { ref: 'wallet->perps' };
    const t2 = ledger.move('transfer', alice('wallet'), alice('perps'), fx('0.5'), 2000, meta2);
    assert.deepEqual([t1, t2], [1, 2]);
    assert.equal(ledger.balance(alice('wallet')), fx('100'));
    assert.equal(ledger.userBalance(1, 'perps', USDC), fx('0.5'));
    assert.equal(ledger.balance(chain), fx('-100.5'));
    assert.equal(ledger.userBalance(1, 'options', USDC), 0n);
    assert.deepEqual(
      entries.map((e) => [
        e.entryId, e.txId, e.type, ledgerKey(e.account), e.amount, e.balanceAfter, e.ref, e.txHash, e.at,
      ]),
      [
        [1, 1, 'deposit', 's:chain:USDC', fx('-100.5'), fx('-100.5'), 'dep_1', '0xabc', 1000],
        [2, 1, 'deposit', 'u:1:wallet:USDC', fx('100.5'), fx('100.5'), 'dep_1', '0xabc', 1000],
        [3, 2, 'transfer', 'u:1:wallet:USDC', fx('-0.5'), fx('100'), 'wallet->perps', null, 2000],
        [4, 2, 'transfer', 'u:1:perps:USDC', fx('0.5'), fx('0.5'), 'wallet->perps', null, 2000],
      ],
    );
    assert.deepEqual(ledger.totalsByAsset(), new Map([['USDC', 0n]]));
  });

  test('totalsByAsset is zero per asset with system account names that contain colons', () => {
    const { ledger } = fresh();
    ledger.move('realized_pnl', systemAccount('clearing:BTC-PERP', USDC), alice('perps'), fx('7'), 1);
    ledger.move('trade_fee', alice('perps'), systemAccount('fees', USDC), fx('0.25'), 1);
    assert.deepEqual(ledger.totalsByAsset(), new Map([['USDC', 0n]]));
    assert.equal(ledger.balance(systemAccount('clearing:BTC-PERP', USDC)), fx('-7'));
  });

  test('exportState hands a copy that restores an identical ledger', () => {
    const { ledger } = fresh();
    ledger.move('deposit', chain, alice('wallet'), fx('3'), 1);
    const state = ledger.exportState();
    ledger.move('transfer', alice('wallet'), alice('spot'), fx('1'), 2);
    const restored = new Ledger(() => undefined, state);
    assert.equal(restored.balance(alice('wallet')), fx('3'));
    assert.equal(restored.balance(alice('spot')), 0n);
    const ids: number[] = [];
    const again = new Ledger((e) => ids.push(e.txId, e.entryId), ledger.exportState());
    again.move('transfer', alice('spot'), alice('wallet'), fx('1'), 3);
    assert.deepEqual(ids, [3, 5, 3, 6]); // [txId, entryId] per line: numbering continues
  });
});

describe('ledger: non-negative user buckets', () => {
  test('assertTouchedNonNegative catches a negative user bucket', () => {
    const { ledger } = fresh();
    ledger.move('deposit', chain, alice('wallet'), fx('1'), 1);
    ledger.assertTouchedNonNegative();
    ledger.move('transfer', alice('wallet'), alice('perps'), fx('1.000001'), 2);
    assert.deepEqual(ledger.negativeUserAccounts(), ['u:1:wallet:USDC']);
    assert.throws(
      () => ledger.assertTouchedNonNegative(),
      (err: unknown) => err instanceof InvariantError && err.message.includes('u:1:wallet:USDC'),
    );
  });

  test('system accounts may go negative', () => {
    const { ledger } = fresh();
    ledger.move('deposit', chain, alice('wallet'), fx('50'), 1);
    ledger.move('fee_rebate', systemAccount('fees', USDC), alice('perps'), fx('2'), 1);
    ledger.move('insurance_fund', systemAccount('insurance', USDC), alice('perps'), fx('3'), 1);
    ledger.move('withdrawal', systemAccount('withdrawals_pending', USDC), chain, fx('1'), 1);
    ledger.assertTouchedNonNegative();
    assert.deepEqual(ledger.negativeUserAccounts(), []);
    assert.ok(ledger.balance(chain) < 0n);
    assert.ok(ledger.balance(systemAccount('fees', USDC)) < 0n);
    assert.ok(ledger.balance(systemAccount('withdrawals_pending', USDC)) < 0n);
  });

  test('a bucket that dips below zero and recovers within one command passes', () => {
    const { ledger } = fresh();
    ledger.move('transfer', alice('wallet'), alice('perps'), fx('5'), 1);
    ledger.move('deposit', chain, alice('wallet'), fx('5'), 1);
    ledger.assertTouchedNonNegative();
  });

  test('only buckets touched since the last check are checked; forgetTouched clears them', () => {
    const { ledger } = fresh();
    ledger.move('transfer', alice('wallet'), alice('perps'), fx('1'), 1);
    ledger.forgetTouched();
    ledger.assertTouchedNonNegative(); // the negative wallet is not part of this command
    ledger.move('deposit', chain, userAccount(2, 'wallet', USDC), fx('1'), 2);
    ledger.assertTouchedNonNegative();
    ledger.move('transfer', alice('perps'), alice('wallet'), fx('0.5'), 3);
    assert.throws(() => ledger.assertTouchedNonNegative(), InvariantError);
  });
});
