/**
 * State-machine tests of deposits, withdrawals and bucket transfers, driven through the real core:
 * `new Exchange(coreConfig({ depositConfirmations: 3 }))` receives commands with explicit times.
 * Deposits: credited exactly once at the configured depth however often and in whatever order the
 * chain adapter reports it; a reorg before that fails it for good; a reorg after the credit raises
 * an alarm and moves no money. Withdrawals: every (status, move) pair of the table in wallet.ts is
 * tried from a withdrawal brought to that status; allowed moves land in the right status with the
 * right ledger effect, refused ones return CONFLICT with no events and no change. After every
 * command the ledger sums to zero per asset and no user bucket is negative.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import type { Command } from '../commands.ts';
import { Exchange, type Outcome } from '../exchange.ts';
import type { ExchangeEvent, SettlementRecord } from '../events.ts';
import type { Bucket } from '../ledger/ledger.ts';
import { fx, type Fixed } from '../money.ts';
import type { SettlementStatus, WithdrawalMove } from './wallet.ts';

const CONFIRMATIONS = 3;
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const ALICE = addr(0xa11ce);
const BOB = addr(0xb0b);

const observe = (txHash: string, account: string, amount: string, confirmations: number): Command => ({
  type: 'chain.deposit_observed',
  txHash,
  account,
  amount: fx(amount),
  confirmations,
});
const transferCmd = (from: Bucket, to: Bucket, amount: Fixed, account = ALICE): Command => ({
  type: 'wallet.transfer',
  account,
  from,
  to,
  amount,
});
const moveCmd = (id: string, move: WithdrawalMove): Command => ({ type: 'withdrawal.move', id, move });

class Driver {
  readonly ex = new Exchange(coreConfig({ depositConfirmations: CONFIRMATIONS }));
  time = 1_000;
  private txSeq = 0;

  run(command: Command): Outcome<unknown> {
    this.time += 1_000;
    const outcome = this.ex.execute(command, this.time);
    this.checkInvariants();
    return outcome;
  }

  ok<R = SettlementRecord>(command: Command): { result: R; events: readonly ExchangeEvent[] } {
    const outcome = this.run(command);
    if (!outcome.ok) assert.fail(`${command.type} rejected: ${outcome.code} ${outcome.message}`);
    return { result: outcome.result as R, events: outcome.events };
  }

  /** Credits `amount` to the wallet bucket through a deposit seen at full depth. */
  fund(address: string, amount: string): string {
    const txHash = this.txHash();
    this.ok(observe(txHash, address, amount, CONFIRMATIONS));
    return txHash;
  }

  txHash(): string {
    return `0x${(++this.txSeq).toString(16).padStart(64, '0')}`;
  }

  bucket(address: string, bucket: Bucket): Fixed {
    const id = this.ex.accounts.find(address)?.id;
    return id === undefined ? 0n : this.ex.ledger.userBalance(id, bucket, 'USDC');
  }

  pending(address: string): Fixed {
    return this.ex.walletBalances(address).pendingWithdrawalTotal;
  }

  /** Canonical text of every ledger balance: equal dumps mean nothing moved. */
  dump(): string {
    const rows = [...this.ex.ledger.entries()].map(([k, v]) => `${k}=${v}`).sort();
    return rows.join('\n');
  }

  private checkInvariants(): void {
    for (const [asset, total] of this.ex.ledger.totalsByAsset()) {
      assert.equal(total, 0n, `ledger total of ${asset}`);
    }
    assert.deepEqual(this.ex.ledger.negativeUserAccounts(), []);
  }
}

type LedgerEvent = Extract<ExchangeEvent, { type: 'ledger' }>;
const ledgerEvents = (events: readonly ExchangeEvent[]) =>
  events.filter((e): e is LedgerEvent => e.type === 'ledger');
const ledgerTypes = (events: readonly ExchangeEvent[]) => ledgerEvents(events).map((e) => e.entry.type);

describe('deposits', () => {
  const cases: { name: string; observations: number[]; creditAt: number | null }[] = [
    { name: 'in order 1, 2, 3', observations: [1, 2, 3], creditAt: 2 },
    { name: 'first seen at full depth', observations: [3], creditAt: 0 },
    { name: 'first seen deeper than required', observations: [7], creditAt: 0 },
    { name: 'repeated and out of order', observations: [2, 1, 2, 1, 4, 3, 2, 9, 3], creditAt: 4 },
    { name: 'same depth many times', observations: [1, 1, 3, 3, 3, 3], creditAt: 2 },
    { name: 'never deep enough', observations: [1, 2, 2, 1, 2], creditAt: null },
  ];
  for (const c of cases) {
    test(`credited exactly once at ${CONFIRMATIONS} confirmations: ${c.name}`, () => {
      const d = new Driver();
      const txHash = d.txHash();
      c.observations.forEach((confirmations, i) => {
        const { result, events } = d.ok(observe(txHash, ALICE, '25', confirmations));
        const credited = c.creditAt !== null && i >= c.creditAt;
        assert.equal(result.id, 'dep_1', 'one settlement per transaction');
        assert.equal(result.status, credited ? 'confirmed' : 'pending');
        assert.deepEqual(ledgerTypes(events), i === c.creditAt ? ['deposit', 'deposit'] : []);
        // A lower count after a higher one is a reorg that kept the block: shown as the chain has it.
        if (!credited) assert.equal(result.confirmations, confirmations);
        assert.equal(d.bucket(ALICE, 'wallet'), credited ? fx('25') : 0n);
        const b = d.ex.walletBalances(ALICE);
        assert.equal(b.onchainDepositTotal, credited ? fx('25') : 0n);
        assert.equal(b.pendingDepositTotal, credited ? 0n : fx('25'));
      });
    });
  }

  test('a second transaction of the same account is a second settlement and a second credit', () => {
    const d = new Driver();
    d.fund(ALICE, '1');
    d.fund(ALICE, '2');
    assert.equal(d.bucket(ALICE, 'wallet'), fx('3'));
    assert.equal(d.ex.settlement('dep_2')?.amount, fx('2'));
  });

  test('a repeated observation keeps the first owner and amount', () => {
    const d = new Driver();
    const txHash = d.txHash();
    d.ok({ type: 'chain.deposit_observed', txHash, account: ALICE, amount: fx('5'), confirmations: 1 });
    const { result } = d.ok(observe(txHash, BOB, '500', 3));
    assert.equal(result.walletAddress, ALICE);
    assert.equal(d.bucket(ALICE, 'wallet'), fx('5'));
    assert.equal(d.bucket(BOB, 'wallet'), 0n);
  });

  for (const seenBefore of [[1], [1, 2], [2, 2, 1]]) {
    test(`reorged before confirmation (seen at ${seenBefore.join(', ')}) -> failed, never credited`, () => {
      const d = new Driver();
      const txHash = d.txHash();
      for (const confirmations of seenBefore) {
        d.ok({ type: 'chain.deposit_observed', txHash, account: ALICE, amount: fx('9'), confirmations });
      }
      const { result, events } = d.ok({ type: 'chain.deposit_reorged', txHash });
      assert.equal(result.status, 'failed');
      assert.equal(result.failureReason, 'reorged');
      assert.deepEqual(ledgerTypes(events), []);
      assert.deepEqual(events.map((e) => e.type), ['settlement']);
      // the adapter keeps reporting it (stale view, or the same hash mined again): still never credited
      for (const confirmations of [3, 5, 1]) {
        const again = d.ok(observe(txHash, ALICE, '9', confirmations));
        assert.equal(again.result.status, 'failed');
        assert.deepEqual(again.events, []);
      }
      const twice = d.ok({ type: 'chain.deposit_reorged', txHash });
      assert.equal(twice.result.status, 'failed');
      assert.deepEqual(twice.events, []);
      assert.equal(d.bucket(ALICE, 'wallet'), 0n);
      assert.equal(d.ex.walletBalances(ALICE).pendingDepositTotal, 0n);
      assert.equal(d.ex.walletBalances(ALICE).onchainDepositTotal, 0n);
    });
  }

  test('reorg after credit -> alarm event, no double credit, no debit', () => {
    const d = new Driver();
    const txHash = d.fund(ALICE, '40');
    const before = d.dump();
    const { result, events } = d.ok({ type: 'chain.deposit_reorged', txHash });
    assert.equal(result.status, 'confirmed');
    assert.deepEqual(events.map((e) => e.type), ['alarm']);
    const alarm = events[0];
    assert.ok(alarm?.type === 'alarm');
    assert.equal(alarm.kind, 'deposit_reorged_after_credit');
    assert.match(alarm.message, /dep_1/);
    assert.equal(d.dump(), before);
    const again = d.ok(observe(txHash, ALICE, '40', 5));
    assert.deepEqual(again.events, []);
    assert.equal(d.bucket(ALICE, 'wallet'), fx('40'));
    assert.equal(d.ex.walletBalances(ALICE).onchainDepositTotal, fx('40'));
  });

  test('a reorg of an unknown transaction is a no-op', () => {
    const d = new Driver();
    const reorg: Command = { type: 'chain.deposit_reorged', txHash: d.txHash() };
    const { result, events } = d.ok<SettlementRecord | null>(reorg);
    assert.equal(result, null);
    assert.deepEqual(events, []);
  });
});

describe('transfers', () => {
  test('moves between every ordered pair of buckets, exactly', () => {
    const d = new Driver();
    d.fund(ALICE, '100');
    const buckets: Bucket[] = ['wallet', 'perps', 'options', 'spot'];
    for (const from of buckets) {
      for (const to of buckets) {
        if (from === to) continue;
        const before = { from: d.bucket(ALICE, from), to: d.bucket(ALICE, to) };
        const amount = before.from / 2n;
        const { events } = d.ok({ type: 'wallet.transfer', account: ALICE, from, to, amount });
        assert.deepEqual(ledgerTypes(events), ['transfer', 'transfer']);
        assert.equal(d.bucket(ALICE, from), before.from - amount);
        assert.equal(d.bucket(ALICE, to), before.to + amount);
      }
    }
    const total = buckets.reduce((sum, b) => sum + d.bucket(ALICE, b), 0n);
    assert.equal(total, fx('100'));
  });

  const refusals: { name: string; cmd: (d: Driver) => Command; code: string; message?: RegExp }[] = [
    {
      name: 'from == to',
      cmd: () => ({ type: 'wallet.transfer', account: ALICE, from: 'perps', to: 'perps', amount: fx('1') }),
      code: 'VALIDATION_ERROR',
    },
    {
      name: 'overdraft by one unit',
      cmd: () => transferCmd('wallet', 'spot', fx('10') + 1n),
      code: 'INSUFFICIENT_BALANCE',
      message: /insufficient wallet balance: requested 10\.000000000000000001, available 10/,
    },
    {
      name: 'from an empty bucket',
      cmd: () => transferCmd('options', 'wallet', fx('0.000001')),
      code: 'INSUFFICIENT_BALANCE',
      message: /options/,
    },
    {
      name: 'unknown account',
      cmd: () => ({ type: 'wallet.transfer', account: BOB, from: 'wallet', to: 'perps', amount: fx('1') }),
      code: 'INSUFFICIENT_BALANCE',
    },
    {
      name: 'zero amount',
      cmd: () => ({ type: 'wallet.transfer', account: ALICE, from: 'wallet', to: 'perps', amount: 0n }),
      code: 'VALIDATION_ERROR',
    },
    {
      name: 'negative amount',
      cmd: () => ({ type: 'wallet.transfer', account: ALICE, from: 'perps', to: 'wallet', amount: -fx('1') }),
      code: 'VALIDATION_ERROR',
    },
    {
      name: 'withdrawal above the wallet bucket',
      cmd: () => ({ type: 'wallet.withdraw', account: ALICE, amount: fx('10.5') }),
      code: 'INSUFFICIENT_BALANCE',
      message: /wallet/,
    },
    {
      name: 'zero withdrawal',
      cmd: () => ({ type: 'wallet.withdraw', account: ALICE, amount: 0n }),
      code: 'VALIDATION_ERROR',
    },
    {
      name: 'withdrawal by an unknown account',
      cmd: () => ({ type: 'wallet.withdraw', account: BOB, amount: fx('1') }),
      code: 'INSUFFICIENT_BALANCE',
    },
  ];
  for (const r of refusals) {
    test(`refused, nothing changes: ${r.name}`, () => {
      const d = new Driver();
      d.fund(ALICE, '15');
      d.ok({ type: 'wallet.transfer', account: ALICE, from: 'wallet', to: 'perps', amount: fx('5') });
      const before = d.dump();
      const outcome = d.run(r.cmd(d));
      assert.equal(outcome.ok, false);
      if (outcome.ok) return;
      assert.equal(outcome.code, r.code);
      if (r.message !== undefined) assert.match(outcome.message, r.message);
      assert.equal(d.dump(), before);
      assert.equal(d.ex.settlement('wd_1'), undefined);
    });
  }

  test('withdrawals draw only from the wallet bucket', () => {
    const d = new Driver();
    d.fund(ALICE, '10');
    d.ok({ type: 'wallet.transfer', account: ALICE, from: 'wallet', to: 'perps', amount: fx('9') });
    const outcome = d.run({ type: 'wallet.withdraw', account: ALICE, amount: fx('2') });
    assert.equal(outcome.ok, false);
    assert.equal(d.bucket(ALICE, 'perps'), fx('9'));
  });

  test('holds kept by a bucket\'s engine limit what may leave it', () => {
    const d = new Driver();
    // the spot bucket's holds belong to the CLOB engine: a resting buy of 0.0001 BTC at 39 980
    // holds 10 lots x (0.3998 + its fee reserve 0.0002) = 4 USDC.
    const bucket = 'spot' as const;
    d.fund(ALICE, '10');
    d.ok({ type: 'wallet.transfer', account: ALICE, from: 'wallet', to: bucket, amount: fx('10') });
    const request = {
      marketId: 'BTC-USDC', side: 0 as const, type: 'limit' as const, quantity: fx('0.0001'),
      price: fx('39980'), timeInForce: 'gtc' as const, postOnly: false, reduceOnly: false,
      marginMode: 'cross' as const, clientOrderId: null, stopPrice: null, takeProfitPrice: null,
      stopLossPrice: null, selfTradePrevention: 'cancel_maker' as const, quoteId: null,
    };
    d.ok({ type: 'clob.place', account: ALICE, request });
    const refused = d.run(transferCmd(bucket, 'wallet', fx('6.01')));
    assert.equal(refused.ok, false);
    const message = new RegExp(`insufficient ${bucket} balance: .*available 6$`);
    if (!refused.ok) assert.match(refused.message, message);
    d.ok({ type: 'wallet.transfer', account: ALICE, from: bucket, to: 'wallet', amount: fx('6') });
    const row = d.ex.assetBalances(ALICE).find((a) => a.bucket === bucket && a.asset === 'USDC');
    assert.deepEqual(row, { asset: 'USDC', bucket, total: fx('4'), locked: fx('4'), available: 0n });
  });
});

describe('withdrawals', () => {
  const STATUSES: SettlementStatus[] = [
    'pending', 'processing', 'sent', 'insufficient_liquidity', 'confirmed', 'failed',
  ];
  const MOVES: Record<WithdrawalMove['to'], WithdrawalMove> = {
    processing: { to: 'processing' },
    sent: { to: 'sent', txHash: '0xfeed' },
    confirmed: { to: 'confirmed', confirmations: 3 },
    insufficient_liquidity: { to: 'insufficient_liquidity' },
    failed: { to: 'failed', reason: 'operator' },
  };
  /** decisions.md "Money" and wallet.ts: from status -> moves allowed from it. */
  const ALLOWED: Record<SettlementStatus, WithdrawalMove['to'][]> = {
    pending: ['processing', 'failed'],
    processing: ['sent', 'insufficient_liquidity', 'failed'],
    sent: ['processing', 'confirmed', 'failed'],
    insufficient_liquidity: ['processing', 'failed'],
    confirmed: [],
    failed: [],
  };
  /** Moves that bring a fresh withdrawal to each status. */
  const PATH: Record<SettlementStatus, WithdrawalMove['to'][]> = {
    pending: [],
    processing: ['processing'],
    sent: ['processing', 'sent'],
    insufficient_liquidity: ['processing', 'insufficient_liquidity'],
    confirmed: ['processing', 'sent', 'confirmed'],
    failed: ['failed'],
  };

  function withdrawalAt(status: SettlementStatus) {
    const d = new Driver();
    d.fund(ALICE, '100');
    const { result } = d.ok({ type: 'wallet.withdraw', account: ALICE, amount: fx('30') });
    for (const to of PATH[status]) d.ok({ type: 'withdrawal.move', id: result.id, move: MOVES[to] });
    assert.equal(d.ex.settlement(result.id)?.status, status);
    return { d, id: result.id };
  }

  for (const from of STATUSES) {
    for (const to of Object.keys(MOVES) as WithdrawalMove['to'][]) {
      const allowed = ALLOWED[from].includes(to);
      test(`${from} -> ${to}: ${allowed ? 'allowed' : 'refused'}`, () => {
        const { d, id } = withdrawalAt(from);
        const before = d.dump();
        const pendingBefore = d.pending(ALICE);
        const outcome = d.run({ type: 'withdrawal.move', id, move: MOVES[to] });
        if (!allowed) {
          assert.equal(outcome.ok, false);
          if (!outcome.ok) assert.equal(outcome.code, 'CONFLICT');
          assert.equal(d.dump(), before);
          assert.equal(d.ex.settlement(id)?.status, from);
          assert.equal(d.pending(ALICE), pendingBefore);
          return;
        }
        assert.equal(outcome.ok, true);
        if (!outcome.ok) return;
        const record = outcome.result as SettlementRecord;
        // one insufficient_liquidity report is a retry, not yet a failure (withdrawalMaxAttempts = 20)
        assert.equal(record.status, to);
        const types = ledgerTypes(outcome.events);
        if (to === 'confirmed') {
          assert.deepEqual(types, ['withdrawal', 'withdrawal']);
          assert.equal(record.confirmations, 3);
          assert.equal(d.pending(ALICE), 0n);
          assert.equal(d.bucket(ALICE, 'wallet'), fx('70'));
        } else if (to === 'failed') {
          assert.deepEqual(types, ['withdrawal_refund', 'withdrawal_refund']);
          assert.equal(record.failureReason, 'operator');
          assert.equal(d.pending(ALICE), 0n);
          assert.equal(d.bucket(ALICE, 'wallet'), fx('100'));
        } else {
          assert.deepEqual(types, []);
          assert.equal(d.dump(), before);
          assert.equal(d.pending(ALICE), fx('30'));
        }
        if (to === 'sent') assert.equal(record.txHash, '0xfeed');
      });
    }
  }

  test('request debits the wallet at once and counts in pendingWithdrawalTotal', () => {
    const d = new Driver();
    d.fund(ALICE, '100');
    const { result, events } = d.ok({ type: 'wallet.withdraw', account: ALICE, amount: fx('12.5') });
    assert.equal(result.status, 'pending');
    assert.equal(result.kind, 'withdraw');
    assert.deepEqual(ledgerTypes(events), ['withdrawal', 'withdrawal']);
    assert.equal(d.bucket(ALICE, 'wallet'), fx('87.5'));
    assert.equal(d.pending(ALICE), fx('12.5'));
  });

  test('failed -> refunded exactly once with a withdrawal_refund entry', () => {
    const { d, id } = withdrawalAt('sent');
    const { events } = d.ok({ type: 'withdrawal.move', id, move: MOVES.failed });
    const refunds = ledgerEvents(events).filter((e) => e.entry.type === 'withdrawal_refund');
    assert.equal(refunds.length, 2);
    const userLine = refunds.find((e) => e.entry.account.kind === 'user');
    assert.equal(userLine?.entry.amount, fx('30'));
    assert.equal(userLine?.entry.ref, id);
    for (const move of Object.values(MOVES)) {
      const again = d.run({ type: 'withdrawal.move', id, move });
      assert.equal(again.ok, false);
    }
    assert.equal(d.bucket(ALICE, 'wallet'), fx('100'));
    assert.equal(d.pending(ALICE), 0n);
  });

  test('insufficient_liquidity is retried, then fails and refunds after withdrawalMaxAttempts', () => {
    const d = new Driver();
    const max = d.ex.config.withdrawalMaxAttempts;
    d.fund(ALICE, '100');
    const { result } = d.ok({ type: 'wallet.withdraw', account: ALICE, amount: fx('60') });
    for (let attempt = 1; attempt < max; attempt++) {
      d.ok({ type: 'withdrawal.move', id: result.id, move: MOVES.processing });
      const { result: r, events } = d.ok(moveCmd(result.id, MOVES.insufficient_liquidity));
      assert.equal(r.status, 'insufficient_liquidity', `attempt ${attempt}`);
      assert.deepEqual(ledgerTypes(events), []);
      assert.equal(d.pending(ALICE), fx('60'));
    }
    d.ok({ type: 'withdrawal.move', id: result.id, move: MOVES.processing });
    const { result: last, events } = d.ok(moveCmd(result.id, MOVES.insufficient_liquidity));
    assert.equal(last.status, 'failed');
    assert.equal(last.failureReason, 'insufficient_liquidity');
    assert.deepEqual(ledgerTypes(events), ['withdrawal_refund', 'withdrawal_refund']);
    assert.equal(d.bucket(ALICE, 'wallet'), fx('100'));
    assert.equal(d.pending(ALICE), 0n);
  });

  test('a sent payout that left the chain goes back to processing and is sent again', () => {
    const { d, id } = withdrawalAt('sent');
    d.ok({ type: 'withdrawal.move', id, move: MOVES.processing });
    const { result } = d.ok({ type: 'withdrawal.move', id, move: { to: 'sent', txHash: '0xbeef' } });
    assert.equal(result.txHash, '0xbeef');
    d.ok({ type: 'withdrawal.move', id, move: MOVES.confirmed });
    assert.equal(d.bucket(ALICE, 'wallet'), fx('70'));
    assert.equal(d.pending(ALICE), 0n);
  });

  test('pendingWithdrawalTotal is the exact sum of the account\'s open withdrawals', () => {
    const d = new Driver();
    d.fund(ALICE, '1000');
    d.fund(BOB, '1000');
    const amounts = ['0.000001', '1.5', '2.25', '10', '100', '0.3'];
    const withdraw = (amount: string): Command => ({
      type: 'wallet.withdraw',
      account: ALICE,
      amount: fx(amount),
    });
    const ids = amounts.map((a) => d.ok(withdraw(a)).result.id);
    const bobId = d.ok({ type: 'wallet.withdraw', account: BOB, amount: fx('7') }).result.id;
    const open = new Map(ids.map((id, i) => [id, fx(amounts[i] as string)]));
    const expectOpen = () => {
      const sum = [...open.values()].reduce((s, v) => s + v, 0n);
      assert.equal(d.pending(ALICE), sum);
      assert.equal(d.pending(BOB), fx('7'));
      assert.equal(d.bucket(ALICE, 'wallet') + sum + confirmed, fx('1000'));
    };
    let confirmed = 0n;
    expectOpen();
    const finish = (id: string, moves: WithdrawalMove['to'][], confirms: boolean) => {
      for (const to of moves) d.ok({ type: 'withdrawal.move', id, move: MOVES[to] });
      if (confirms) confirmed += open.get(id) ?? 0n;
      open.delete(id);
      expectOpen();
    };
    finish(ids[1] as string, ['processing', 'sent', 'confirmed'], true);
    finish(ids[0] as string, ['failed'], false);
    for (const to of ['processing', 'insufficient_liquidity'] as const) {
      d.ok({ type: 'withdrawal.move', id: ids[2] as string, move: MOVES[to] });
    }
    expectOpen();
    finish(ids[2] as string, ['failed'], false);
    finish(ids[4] as string, ['processing', 'sent', 'confirmed'], true);
    finish(ids[3] as string, ['processing', 'sent', 'failed'], false);
    finish(ids[5] as string, ['processing', 'sent', 'processing', 'sent', 'confirmed'], true);
    assert.equal(d.pending(ALICE), 0n);
    assert.equal(d.bucket(ALICE, 'wallet'), fx('1000') - fx('1.5') - fx('100') - fx('0.3'));
    assert.equal(d.ex.settlement(bobId)?.status, 'pending');
  });

  test('unknown ids and deposit ids are NOT_FOUND', () => {
    const d = new Driver();
    d.fund(ALICE, '1');
    for (const id of ['wd_1', 'dep_1', '', 'wd_01']) {
      const outcome = d.run({ type: 'withdrawal.move', id, move: MOVES.processing });
      assert.equal(outcome.ok, false);
      if (!outcome.ok) assert.equal(outcome.code, 'NOT_FOUND');
    }
  });
});

describe('time', () => {
  test('a command stamped earlier than the previous one is applied at the previous time', () => {
    const ex = new Exchange(coreConfig({ depositConfirmations: CONFIRMATIONS }));
    const first = ex.execute(observe('0x1', ALICE, '1', 3), 5_000);
    assert.equal(first.ok && (first.result as SettlementRecord).createdAt, 5_000);
    const second = ex.execute({ type: 'wallet.withdraw', account: ALICE, amount: fx('1') }, 4_000);
    assert.equal(second.ok && second.result.createdAt, 5_000);
    assert.equal(ex.now(), 5_000);
  });
});

describe('client ids of transfers and withdrawals (movement-ids.ts)', () => {
  const DAY = 86_400_000;
  const tagged = (amount: string, clientId: string, account = ALICE): Command =>
    ({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx(amount), clientId });

  test('an accepted id is refused for a day, across transfers and withdrawals, per account; then free again', () => {
    const d = new Driver();
    d.fund(ALICE, '100');
    d.fund(BOB, '100');
    d.ok(tagged('10', 'move-1'));
    const again = d.run(tagged('10', 'move-1'));
    assert.equal(again.ok ? 'moved twice' : again.code, 'CONFLICT');
    assert.match(again.ok ? '' : again.message, /move-1 was already used by transfer ledger entry \d+/);
    const asWithdrawal = d.run({ type: 'wallet.withdraw', account: ALICE, amount: fx('5'), clientId: 'move-1' });
    assert.equal(asWithdrawal.ok ? 'withdrawn' : asWithdrawal.code, 'CONFLICT', 'one id space for both');
    assert.equal(d.bucket(ALICE, 'perps'), fx('10'));
    assert.equal(d.bucket(ALICE, 'wallet'), fx('90'));
    d.ok(tagged('10', 'move-1', BOB)); // another account's ids are its own
    const w = d.ok({ type: 'wallet.withdraw', account: ALICE, amount: fx('5'), clientId: 'w-1' });
    const retried = d.run({ type: 'wallet.withdraw', account: ALICE, amount: fx('5'), clientId: 'w-1' });
    assert.match(retried.ok ? '' : retried.message, new RegExp(`by withdrawal ${w.result.id} at`));
    assert.equal(d.pending(ALICE), fx('5'));
    d.time += DAY;
    d.ok({ type: 'clock.tick' }); // prunes
    d.ok(tagged('1', 'move-1'));
  });

  test('a refused attempt reserves nothing: its retry is a new attempt', () => {
    const d = new Driver();
    d.fund(ALICE, '10');
    const short = d.run(tagged('20', 'big'));
    assert.equal(short.ok ? 'moved' : short.code, 'INSUFFICIENT_BALANCE');
    d.fund(ALICE, '10');
    d.ok(tagged('20', 'big'));
    assert.equal(d.bucket(ALICE, 'perps'), fx('20'));
  });
});
