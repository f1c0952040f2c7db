/**
 * The chain watcher against the real simulated chain and a real sequencer (journal in a temporary
 * SQLite file): a reorg deeper than the confirmation depth. A credited deposit whose transaction
 * left the chain raises the core's alarm once (the credit stands); a confirmed withdrawal whose
 * payout left the chain is reported to the operator once and not paid again. And a payout the
 * hot wallet cannot cover, retried at a growing interval until the wallet is refilled.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SimulatedChain } from '../adapters/chain/simulated-chain.ts';
import { openDatabase } from '../adapters/store/database.ts';
import { Journal } from '../adapters/store/journal.ts';
import { InlineJournalWriter } from '../adapters/store/journal-writer.ts';
import { historyProjectors } from '../adapters/store/projections/index.ts';
import { coreConfig } from '../config/core.ts';
import type { ExchangeEvent } from '../core/events.ts';
import { Exchange } from '../core/exchange.ts';
import { fx } from '../core/money.ts';
import { ChainWatcher } from './chain-watcher.ts';
import { Sequencer } from './sequencer.ts';

const CONFIRMATIONS = 3;
const dir = mkdtempSync(join(os.tmpdir(), 'chain-watcher-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function setUp(name: string) {
  let now = Date.UTC(2026, 5, 1);
  const db = openDatabase(join(dir, `${name}.sqlite`));
  const journal = new Journal(db, historyProjectors(db));
  const exchange = new Exchange(coreConfig({ depositConfirmations: CONFIRMATIONS }));
  const options = { earlyFlushAt: 16, maxInFlight: 4, onFatal: () => {}, replayCheck: 'strict' as const };
  const sequencer = new Sequencer(exchange, journal, new InlineJournalWriter(journal), { now: () => now }, options);
  await sequencer.recover();
  const chain = new SimulatedChain({ path: join(dir, `${name}-chain.sqlite`), chainId: 1, asset: 'USDC', blockMs: 1000, now: () => now });
  const events: ExchangeEvent[] = [];
  sequencer.subscribe((batch) => events.push(...batch));
  const alarms: string[] = [];
  const newWatcher = () => new ChainWatcher(chain, sequencer, {
    depositConfirmations: CONFIRMATIONS,
    reorgWatch: 16,
    retryMaxDelayMs: 8000,
    now: () => now,
    log: () => {},
    alarm: (message) => alarms.push(message),
  });
  let watcher = newWatcher();
  /** One watcher pass, as the block listener of a running service would start it. */
  const pass = async () => {
    await watcher.poll();
    await sequencer.drain();
  };
  const mine = async (blocks: number) => {
    for (let i = 0; i < blocks; i++) {
      now += 1000;
      chain.mineBlock();
      await pass();
    }
  };
  /** Blocks mined while the watcher is held up (a slow journal, a burst of blocks): no pass runs. */
  const mineUnwatched = (blocks: number) => {
    for (let i = 0; i < blocks; i++) {
      now += 1000;
      chain.mineBlock();
    }
  };
  /** A watcher as a restarted service builds it: it learns what was confirmed from the wallet. */
  const restartWatcher = () => (watcher = newWatcher());
  const coreAlarms = () => events.filter((e) => e.type === 'alarm').map((e) => (e.type === 'alarm' ? e.kind : ''));
  return { exchange, sequencer, chain, pass, mine, mineUnwatched, restartWatcher, alarms, coreAlarms, close: () => { chain.stop(); db.close(); } };
}

const A = `0x${'a'.repeat(40)}`;
const B = `0x${'b'.repeat(40)}`;

test('a credited deposit reorged past the confirmation depth raises one alarm; the credit stands', async () => {
  const v = await setUp('deposit');
  const tx = v.chain.deposit(A, fx('500'));
  await v.mine(CONFIRMATIONS);
  assert.equal(v.exchange.wallet.depositByTx(tx)?.status, 'confirmed');
  v.chain.reorg(CONFIRMATIONS);
  assert.equal(v.chain.txState(tx).state, 'dropped');
  await v.mine(3);
  assert.deepEqual(v.coreAlarms(), ['deposit_reorged_after_credit'], 'reported once over three passes');
  assert.equal(v.exchange.wallet.depositByTx(tx)?.status, 'confirmed', 'a credit is not taken back by the chain watcher');
  v.close();
});

test('a watcher started after the credit still sees the deposit leave the chain', async () => {
  const v = await setUp('restart');
  const tx = v.chain.deposit(A, fx('500'));
  await v.mine(CONFIRMATIONS);
  v.restartWatcher();
  v.chain.reorg(CONFIRMATIONS);
  await v.mine(1);
  assert.equal(v.exchange.wallet.depositByTx(tx)?.status, 'confirmed');
  assert.deepEqual(v.coreAlarms(), ['deposit_reorged_after_credit']);
  v.close();
});

test('a confirmed withdrawal whose payout a deep reorg dropped is reported once and not paid again', async () => {
  const v = await setUp('withdrawal');
  v.chain.deposit(B, fx('1000'));
  await v.mine(CONFIRMATIONS + 1);
  const placed = await v.sequencer.submit({ type: 'wallet.withdraw', account: B, amount: fx('300') });
  assert.ok(placed.ok, 'withdrawal accepted');
  const id = (placed.result as { id: string }).id;
  await v.mine(CONFIRMATIONS + 2);
  const confirmed = v.exchange.wallet.get(id)!;
  assert.equal(confirmed.status, 'confirmed');
  v.chain.reorg(CONFIRMATIONS + 1);
  assert.equal(v.chain.txState(confirmed.txHash!).state, 'dropped');
  await v.mine(CONFIRMATIONS + 2);
  assert.equal(v.alarms.length, 1, 'reported once');
  assert.match(v.alarms[0]!, new RegExp(`withdrawal ${id} was confirmed but its payout`));
  const after = v.exchange.wallet.get(id)!;
  assert.deepEqual([after.status, after.txHash], ['confirmed', confirmed.txHash], 'not moved back to be broadcast again');
  v.close();
});

test('a withdrawal the hot wallet cannot cover is retried later and later, then paid once the wallet is refilled', async () => {
  const v = await setUp('short-hot-wallet');
  // Credited without a deposit on this chain (as a treasury grant would be): the hot wallet is empty.
  assert.ok((await v.sequencer.submit({ type: 'chain.deposit_observed', txHash: '0xfeed', account: B, amount: fx('1000'), confirmations: CONFIRMATIONS })).ok);
  const placed = await v.sequencer.submit({ type: 'wallet.withdraw', account: B, amount: fx('300') });
  assert.ok(placed.ok, 'withdrawal accepted');
  const id = (placed.result as { id: string }).id;
  await v.mine(60); // a minute of one-second blocks
  const waiting = v.exchange.wallet.get(id)!;
  assert.equal(waiting.status, 'insufficient_liquidity');
  // Before: one attempt a block, so the core's 20-attempt limit failed and refunded it after 20 s.
  // Now 1, 2, 4 and then 8 s (this test's maximum) apart: 10 attempts in the minute.
  assert.equal(waiting.attempts, 10);
  v.chain.deposit(A, fx('1000'));
  await v.mine(CONFIRMATIONS + 12);
  assert.equal(v.exchange.wallet.get(id)!.status, 'confirmed', 'paid at the next attempt after the refill');
  v.close();
});

// Before: later passes scanned a fixed window below the current head and looked at known pending
// deposits only for `dropped`, so a deposit whose block fell below the window while the watcher
// was held up stayed pending with its old count, and one mined and buried meanwhile was never seen.
const STALL_BLOCKS = CONFIRMATIONS + 16 + 10;

test('a pending deposit buried below the scan window while the watcher was held up is still credited', async () => {
  const v = await setUp('stall-pending');
  const tx = v.chain.deposit(A, fx('100'));
  await v.mine(1);
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['pending', 1]);
  v.mineUnwatched(STALL_BLOCKS);
  await v.pass();
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['confirmed', STALL_BLOCKS + 1]);
  assert.equal(v.exchange.walletBalances(A).walletBalance, fx('100'));
  v.close();
});

test('a deposit mined and buried while the watcher was held up is found and credited', async () => {
  const v = await setUp('stall-new');
  await v.mine(1); // the first pass (the whole chain) is behind us
  const tx = v.chain.deposit(A, fx('100'));
  v.mineUnwatched(STALL_BLOCKS);
  await v.pass();
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['confirmed', STALL_BLOCKS]);
  assert.equal(v.exchange.walletBalances(A).walletBalance, fx('100'));
  v.close();
});

// Before: the count shown never went down (the core kept the highest seen and the watcher reported
// only higher ones), so a reorg that kept the deposit's block left a count the chain no longer had.
test('a reorg that keeps a pending deposit\'s block lowers its confirmations; the credit waits for the full depth', async () => {
  const v = await setUp('shallow-reorg');
  const tx = v.chain.deposit(A, fx('100'));
  await v.mine(CONFIRMATIONS - 1);
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['pending', CONFIRMATIONS - 1]);
  v.chain.reorg(1);
  await v.pass();
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['pending', CONFIRMATIONS - 2]);
  await v.mine(1);
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['pending', CONFIRMATIONS - 1]);
  assert.equal(v.exchange.walletBalances(A).walletBalance, 0n);
  await v.mine(1);
  assert.deepEqual(depositState(v.exchange.wallet.depositByTx(tx)), ['confirmed', CONFIRMATIONS]);
  assert.equal(v.exchange.walletBalances(A).walletBalance, fx('100'));
  v.close();
});

function depositState(s: { status: string; confirmations: number } | undefined) {
  return [s?.status, s?.confirmations];
}
