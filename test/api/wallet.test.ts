/**
 * HTTP tests of the wallet endpoints against the real service (test/support/harness.ts: loopback
 * port, temporary SQLite DATA_DIR, real SIWE keys, simulated chain with 40 ms blocks and 2
 * confirmations). Covers deposits (pending -> confirmed, reorg -> failed and never credited), the
 * deposit address, transfers between every pair of buckets and their refusals, the asset
 * inventory, withdrawals through their whole settlement life, history and settlement listings
 * with their limits and paging, account isolation of settlement records, a 50-way race to
 * overdraw one bucket and a seeded bank test (concurrent transfers plus reads that must always
 * sum to the deposits). Where a test needs to see an intermediate state it stops the simulated
 * chain's block timer and mines blocks by hand, so nothing depends on timing luck.
 *
 * Seeded: the bank test prints its seed; replay with SEED=<n>.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExchangeEvent } from '../../src/core/events.ts';
import type { SimulatedChain } from '../../src/adapters/chain/simulated-chain.ts';
import { mulberry32 } from '../../src/adapters/feed/price-model.ts';
import {
  admin, call, fund, signIn, startService, waitFor, type TestService, type Trader,
} from '../support/harness.ts';

const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : Date.now() % 2 ** 31;
const BUCKETS = ['wallet', 'perps', 'options', 'spot'] as const;
/** Generous: a loaded CI machine must not turn a slow deposit into a failure. */
const FUND_TIMEOUT_MS = 15_000;
const WAIT_MS = 10_000;
type Bucket = (typeof BUCKETS)[number];

/** A response decimal as integer micro-USDC; refuses anything that is not plain notation. */
function micro(value: unknown): bigint {
  assert.equal(typeof value, 'string', `not a decimal string: ${JSON.stringify(value)}`);
  const m = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]{1,6}))?$/.exec(value as string);
  assert.ok(m !== null, `not a plain USDC decimal: ${JSON.stringify(value)}`);
  const v = BigInt(m[2] as string) * 1_000_000n + BigInt((m[3] ?? '').padEnd(6, '0') || '0');
  assert.ok(!(m[1] === '-' && v === 0n), '-0 in a response');
  return m[1] === '-' ? -v : v;
}

/** Integer micro-USDC to the wire form. */
function usdc(units: bigint): string {
  const int = units / 1_000_000n;
  const frac = (units % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return frac.length > 0 ? `${int}.${frac}` : `${int}`;
}

let ts: TestService;
let url: string;
let chain: SimulatedChain;

before(async () => {
  ts = await startService({ RATE_LIMIT_ACCOUNT: '100000' });
  url = ts.url;
  chain = ts.service.ctx.simulatedChain as SimulatedChain;
});
after(async () => {
  await ts.close();
});

/** Runs `body` with the block timer stopped; blocks are mined only by `chain.mineBlock()`. */
async function withManualBlocks(body: () => Promise<void>): Promise<void> {
  chain.stop();
  try {
    await body();
  } finally {
    chain.start();
  }
}

async function balances(t: Trader): Promise<Record<string, bigint>> {
  const r = await call(url, '/wallet/balance', { token: t.token });
  assert.equal(r.status, 200);
  return Object.fromEntries(Object.entries(r.body as Record<string, string>).map(([k, v]) => [k, micro(v)]));
}

async function bucketsOf(t: Trader): Promise<Record<Bucket, bigint>> {
  const b = await balances(t);
  const get = (k: string) => b[k] as bigint;
  return {
    wallet: get('walletBalance'),
    perps: get('perpsBalance'),
    options: get('optionsBalance'),
    spot: get('spotBalance'),
  };
}

const transfer = (t: Trader, from: string, to: string, amount: unknown) =>
  call(url, '/wallet/transfer', { token: t.token, body: { from, to, amount } });
const withdraw = (t: Trader, amount: string) =>
  call(url, '/wallet/withdraw', { token: t.token, body: { amount } });
const adminDeposit = (t: Trader, amount: string) =>
  call(url, '/admin/chain/deposits', { body: { walletAddress: t.address, amount }, headers: admin });
const settlement = (t: Trader, id: string) =>
  call<SettlementView>(url, `/wallet/settlements/${id}`, { token: t.token });

async function settlementsOf(t: Trader, query = ''): Promise<SettlementView[]> {
  const r = await call(url, `/wallet/settlements${query}`, { token: t.token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

async function historyOf(t: Trader, query = ''): Promise<HistoryView[]> {
  const r = await call(url, `/wallet/history${query}`, { token: t.token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

interface SettlementView {
  id: string;
  kind: string;
  status: string;
  amount: string;
  asset: string;
  walletAddress: string;
  txHash: string | null;
  confirmations: number;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}
interface HistoryView {
  id: string;
  type: string;
  amount: string;
  txHash: string | null;
  createdAt: string;
  bucket: string;
  asset: string;
  balanceAfter: string;
  ref: string | null;
}
interface AssetView {
  asset: string;
  bucket: string;
  available: string;
  locked: string;
  total: string;
}

/** The single element of a list (asserts there is exactly one). */
function only<T>(items: readonly T[]): T {
  assert.equal(items.length, 1, `expected one item, got ${JSON.stringify(items)}`);
  return items[0] as T;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('deposits', () => {
  test('deposit address: stable per account, different across accounts, documented shape', async () => {
    const [a, b] = await Promise.all([signIn(url), signIn(url)]);
    const first = await call(url, '/wallet/deposit-address', { token: a.token });
    const again = await call(url, '/wallet/deposit-address', { token: a.token });
    const other = await call(url, '/wallet/deposit-address', { token: b.token });
    assert.equal(first.status, 200);
    const fields = ['address', 'asset', 'chainId', 'confirmationsRequired'];
    assert.deepEqual(Object.keys(first.body).sort(), fields);
    assert.match(first.body.address, /^0x[0-9a-fA-F]{40}$/);
    const shape = { address: first.body.address, chainId: 1, asset: 'USDC', confirmationsRequired: 2 };
    assert.deepEqual(first.body, shape);
    assert.deepEqual(again.body, first.body);
    assert.notEqual(other.body.address.toLowerCase(), first.body.address.toLowerCase());
    assert.notEqual(first.body.address.toLowerCase(), a.lower, 'not the user\'s own wallet');
    const dep = await adminDeposit(a, '1');
    assert.equal(dep.status, 200);
    assert.equal(dep.body.depositAddress.toLowerCase(), first.body.address.toLowerCase());
    assert.equal((await call(url, '/wallet/deposit-address')).status, 401);
  });

  test('pending (not spendable) until 2 confirmations, then confirmed and credited once', async () => {
    const t = await signIn(url);
    await withManualBlocks(async () => {
      const dep = await adminDeposit(t, '25.5');
      assert.equal(dep.status, 200);
      assert.match(dep.body.txHash, /^0x[0-9a-f]{64}$/);
      chain.mineBlock();
      await waitFor(async () => (await settlementsOf(t, '?kind=deposit')).length === 1, WAIT_MS);
      const pending = only(await settlementsOf(t, '?kind=deposit'));
      assert.equal(pending.status, 'pending');
      assert.equal(pending.confirmations, 1);
      assert.equal(pending.txHash, dep.body.txHash);
      let b = await balances(t);
      assert.equal(b.walletBalance, 0n);
      assert.equal(b.onchainDepositTotal, 0n);
      assert.equal(b.pendingDepositTotal, 25_500_000n);
      assert.equal((await transfer(t, 'wallet', 'perps', '1')).body.error, 'INSUFFICIENT_BALANCE');
      assert.equal((await withdraw(t, '1')).status, 400);

      chain.mineBlock();
      const status = async () => (await settlementsOf(t, '?kind=deposit'))[0]?.status;
      await waitFor(async () => (await status()) === 'confirmed', WAIT_MS);
      const confirmed = only(await settlementsOf(t, '?kind=deposit'));
      assert.equal(confirmed.id, pending.id);
      assert.equal(confirmed.kind, 'deposit');
      assert.equal(confirmed.amount, '25.5');
      assert.equal(confirmed.asset, 'USDC');
      assert.equal(confirmed.walletAddress, t.address);
      assert.equal(confirmed.txHash, dep.body.txHash);
      assert.equal(confirmed.confirmations, 2);
      b = await balances(t);
      assert.equal(b.walletBalance, 25_500_000n);
      assert.equal(b.onchainDepositTotal, 25_500_000n);
      assert.equal(b.pendingDepositTotal, 0n);

      for (let i = 0; i < 4; i++) chain.mineBlock();
      await sleep(100);
    });
    await sleep(120); // and a few timer blocks: still credited exactly once
    assert.equal((await balances(t)).walletBalance, 25_500_000n);
    const deposits = (await historyOf(t)).filter((e) => e.type === 'deposit');
    assert.equal(only(deposits).amount, '25.5');
  });

  test('reorged before confirmation -> settlement failed, balance never credited', async () => {
    const t = await signIn(url);
    await withManualBlocks(async () => {
      const dep = await adminDeposit(t, '40');
      chain.mineBlock();
      await waitFor(async () => (await settlementsOf(t, '?kind=deposit')).length === 1, WAIT_MS);
      assert.equal((await balances(t)).pendingDepositTotal, 40_000_000n);
      const reorg = await call(url, '/admin/chain/reorg', { body: { depth: 1 }, headers: admin });
      assert.equal(reorg.status, 200);
      assert.ok(reorg.body.droppedTxs >= 1);
      await waitFor(async () => (await settlementsOf(t, '?kind=deposit'))[0]?.status === 'failed', WAIT_MS);
      const failed = only(await settlementsOf(t, '?kind=deposit'));
      assert.equal(failed.txHash, dep.body.txHash);
      assert.equal(failed.failureReason, 'reorged');
      for (let i = 0; i < 4; i++) chain.mineBlock();
      await sleep(100);
    });
    await sleep(120);
    const b = await balances(t);
    assert.equal(b.walletBalance, 0n);
    assert.equal(b.onchainDepositTotal, 0n);
    assert.equal(b.pendingDepositTotal, 0n);
    assert.deepEqual(await historyOf(t), []);
    assert.equal((await settlementsOf(t, '?kind=deposit&status=failed')).length, 1);
    assert.equal((await settlementsOf(t, '?status=confirmed')).length, 0);
  });
});

describe('transfers', () => {
  test('between every ordered pair of buckets, with exact balances in each response', async () => {
    const t = await signIn(url);
    await fund(url, t, '100', FUND_TIMEOUT_MS);
    const expected: Record<Bucket, bigint> = { wallet: 100_000_000n, perps: 0n, options: 0n, spot: 0n };
    const pairs: [Bucket, Bucket][] = [];
    for (const from of BUCKETS) for (const to of BUCKETS) if (from !== to) pairs.push([from, to]);
    pairs.sort(([a], [b]) => (a === 'wallet' ? -1 : 0) - (b === 'wallet' ? -1 : 0)); // fill buckets first
    for (const [from, to] of pairs) {
      const amount = from === 'wallet' ? 20_000_001n : 1_234_567n;
      const r = await transfer(t, from, to, usdc(amount));
      assert.equal(r.status, 200, `${from}->${to}: ${JSON.stringify(r.body)}`);
      expected[from] -= amount;
      expected[to] += amount;
      assert.equal(micro(r.body.walletBalance), expected.wallet);
      assert.equal(micro(r.body.perpsBalance), expected.perps);
      assert.equal(micro(r.body.optionsBalance), expected.options);
      assert.equal(micro(r.body.spotBalance), expected.spot);
    }
    assert.deepEqual(await bucketsOf(t), expected);
    const transfers = (await historyOf(t)).filter((e) => e.type === 'transfer');
    assert.equal(transfers.length, 2 * pairs.length);
  });

  test('from == to is 400 for every bucket; malformed amounts and buckets are 400', async () => {
    const t = await signIn(url);
    await fund(url, t, '10', FUND_TIMEOUT_MS);
    for (const b of BUCKETS) {
      const r = await transfer(t, b, b, '1');
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'VALIDATION_ERROR');
    }
    for (const amount of ['0', '-1', '1e2', '.5', '0.0000001', 1, '']) {
      const r = await transfer(t, 'wallet', 'perps', amount);
      assert.equal(r.status, 400, `amount ${JSON.stringify(amount)}`);
      assert.equal(r.body.error, 'INVALID_DECIMAL', `amount ${JSON.stringify(amount)}`);
    }
    assert.equal((await transfer(t, 'wallet', 'savings', '1')).status, 400);
    const body = { from: 'wallet', to: 'perps' };
    const noAmount = await call(url, '/wallet/transfer', { token: t.token, body });
    assert.equal(noAmount.status, 400);
    assert.deepEqual(await bucketsOf(t), { wallet: 10_000_000n, perps: 0n, options: 0n, spot: 0n });
  });

  test('amount > balance -> 400 INSUFFICIENT_BALANCE naming the bucket, nothing changed', async () => {
    const t = await signIn(url);
    await fund(url, t, '10', FUND_TIMEOUT_MS);
    assert.equal((await transfer(t, 'wallet', 'options', '4')).status, 200);
    const before = await bucketsOf(t);
    const historyBefore = await historyOf(t);
    const cases: [Bucket, Bucket, string][] = [
      ['wallet', 'perps', '6.000001'],
      ['options', 'spot', '4.000001'],
      ['perps', 'wallet', '0.000001'],
      ['spot', 'options', '1000000'],
    ];
    for (const [from, to, amount] of cases) {
      const r = await transfer(t, from, to, amount);
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'INSUFFICIENT_BALANCE');
      assert.match(r.body.message, new RegExp(`\\b${from}\\b`), r.body.message);
      assert.ok(!new RegExp(`\\b${to}\\b`).test(r.body.message.replace(from, '')), r.body.message);
    }
    assert.deepEqual(await bucketsOf(t), before);
    assert.deepEqual(await historyOf(t), historyBefore);
  });

  test('an account that never deposited cannot move anything', async () => {
    const t = await signIn(url);
    const r = await transfer(t, 'wallet', 'perps', '1');
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'INSUFFICIENT_BALANCE');
    assert.deepEqual(await bucketsOf(t), { wallet: 0n, perps: 0n, options: 0n, spot: 0n });
  });

  test('/wallet/assets: four USDC buckets and spot BTC/ETH, total = available + locked', async () => {
    const t = await signIn(url);
    await fund(url, t, '50', FUND_TIMEOUT_MS);
    await transfer(t, 'wallet', 'spot', '7.5');
    await transfer(t, 'wallet', 'perps', '2.25');
    const r = await call(url, '/wallet/assets', { token: t.token });
    assert.equal(r.status, 200);
    const rows = r.body as AssetView[];
    assert.deepEqual(
      rows.map((a) => `${a.asset}/${a.bucket}`).sort(),
      ['BTC/spot', 'ETH/spot', 'USDC/options', 'USDC/perps', 'USDC/spot', 'USDC/wallet'],
    );
    for (const a of rows) {
      assert.deepEqual(Object.keys(a).sort(), ['asset', 'available', 'bucket', 'locked', 'total']);
      assert.equal(micro(a.total), micro(a.available) + micro(a.locked), JSON.stringify(a));
      assert.ok(micro(a.available) >= 0n && micro(a.locked) >= 0n);
    }
    const usdcTotal = (b: string) => micro(rows.find((a) => a.asset === 'USDC' && a.bucket === b)?.total);
    assert.deepEqual(
      BUCKETS.map(usdcTotal),
      [40_250_000n, 2_250_000n, 0n, 7_500_000n],
    );
  });
});

describe('withdrawals', () => {
  test('withdraw > wallet is 400 INSUFFICIENT_BALANCE; other buckets do not count', async () => {
    const t = await signIn(url);
    await fund(url, t, '30', FUND_TIMEOUT_MS);
    await transfer(t, 'wallet', 'perps', '20');
    const r = await withdraw(t, '10.000001');
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'INSUFFICIENT_BALANCE');
    assert.match(r.body.message, /wallet/);
    assert.equal((await withdraw(t, '0')).status, 400);
    assert.deepEqual(await bucketsOf(t), { wallet: 10_000_000n, perps: 20_000_000n, options: 0n, spot: 0n });
    assert.deepEqual(await settlementsOf(t, '?kind=withdraw'), []);
  });

  test('debited at once; pending -> processing -> sent -> confirmed (txHash); pending total 0', async () => {
    const t = await signIn(url);
    await fund(url, t, '80', FUND_TIMEOUT_MS);
    const seen: string[] = [];
    let id = '';
    const unsubscribe = ts.service.ctx.sequencer.subscribe((events: readonly ExchangeEvent[]) => {
      for (const e of events) {
        if (e.type !== 'settlement' || e.settlement.kind !== 'withdraw') continue;
        seen.push(`${e.settlement.id}:${e.settlement.status}`);
      }
    });
    try {
      await withManualBlocks(async () => {
        const r = await withdraw(t, '12.345678');
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(Object.keys(r.body), ['withdrawalId']);
        id = r.body.withdrawalId;
        const b = await balances(t);
        assert.equal(b.walletBalance, 80_000_000n - 12_345_678n);
        assert.equal(b.pendingWithdrawalTotal, 12_345_678n);
        const pending = (await settlement(t, id)).body;
        assert.equal(pending.status, 'pending');
        assert.equal(pending.kind, 'withdraw');
        assert.equal(pending.amount, '12.345678');
        assert.equal(pending.txHash, null);
        assert.equal(pending.walletAddress, t.address);

        chain.mineBlock(); // the watcher moves it to processing, broadcasts it: sent
        await waitFor(async () => (await settlement(t, id)).body.status === 'sent', WAIT_MS);
        const sent = (await settlement(t, id)).body;
        assert.match(sent.txHash ?? '', /^0x[0-9a-f]{64}$/);
        assert.equal((await balances(t)).pendingWithdrawalTotal, 12_345_678n);

        chain.mineBlock(); // mined: 1 confirmation
        chain.mineBlock(); // 2 confirmations
        await waitFor(async () => (await settlement(t, id)).body.status === 'confirmed', WAIT_MS);
        const confirmed = (await settlement(t, id)).body;
        assert.equal(confirmed.txHash, sent.txHash);
        assert.ok(confirmed.confirmations >= 2);
      });
    } finally {
      unsubscribe();
    }
    const path = seen.filter((s) => s.startsWith(`${id}:`)).map((s) => s.slice(id.length + 1));
    assert.deepEqual(path, ['pending', 'processing', 'sent', 'confirmed']);
    const b = await balances(t);
    assert.equal(b.pendingWithdrawalTotal, 0n);
    assert.equal(b.walletBalance, 80_000_000n - 12_345_678n);
    const entry = (await historyOf(t)).find((e) => e.type === 'withdrawal');
    assert.equal(entry?.amount, '-12.345678');
    assert.equal(entry?.ref, id);
    assert.equal(entry?.bucket, 'wallet');
  });
});

describe('client transfer ids (idempotent retries)', () => {
  const tagged = (t: Trader, path: string, body: Record<string, unknown>) => call(url, path, { token: t.token, body });

  test('a retried transfer or withdrawal with the same clientTransferId is 409 CONFLICT and moves nothing twice', async () => {
    const [t, other] = await Promise.all([signIn(url), signIn(url)]);
    await Promise.all([fund(url, t, '100', FUND_TIMEOUT_MS), fund(url, other, '100', FUND_TIMEOUT_MS)]);
    const body = { from: 'wallet', to: 'perps', amount: '10', clientTransferId: 'rebalance:2026-11-23/1' };
    assert.equal((await tagged(t, '/wallet/transfer', body)).status, 200);
    const again = await tagged(t, '/wallet/transfer', body);
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.error, 'CONFLICT');
    assert.match(again.body.message, /already used by transfer ledger entry \d+/);
    const sameIdWithdrawal = await tagged(t, '/wallet/withdraw', { amount: '1', clientTransferId: body.clientTransferId });
    assert.equal(sameIdWithdrawal.status, 409, 'transfers and withdrawals share the id space');
    assert.equal((await tagged(other, '/wallet/transfer', body)).status, 200, 'ids are per account');

    const w = await tagged(t, '/wallet/withdraw', { amount: '5', clientTransferId: 'wd-1' });
    assert.equal(w.status, 200, JSON.stringify(w.body));
    const retried = await tagged(t, '/wallet/withdraw', { amount: '5', clientTransferId: 'wd-1' });
    assert.equal(retried.status, 409);
    assert.ok(retried.body.message.includes(`withdrawal ${w.body.withdrawalId}`), retried.body.message);
    const b = await bucketsOf(t);
    assert.equal(b.perps, 10_000_000n);
    assert.equal(b.wallet, 85_000_000n, 'moved once, withdrawn once');
  });

  test('malformed clientTransferId is 400 and moves nothing', async () => {
    const t = await signIn(url);
    await fund(url, t, '10', FUND_TIMEOUT_MS);
    for (const id of ['', 'x'.repeat(37), 'has space', 'naïve', 42, null, ['a']]) {
      const r = await tagged(t, '/wallet/transfer', { from: 'wallet', to: 'perps', amount: '1', clientTransferId: id });
      assert.equal(r.status, 400, `${JSON.stringify(id)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'VALIDATION_ERROR');
      const w = await tagged(t, '/wallet/withdraw', { amount: '1', clientTransferId: id });
      assert.equal(w.status, 400, JSON.stringify(id));
    }
    assert.equal((await bucketsOf(t)).wallet, 10_000_000n);
  });

  test('the ids survive a restart (rebuilt from the journal)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transfer-ids-'));
    let svc = await startService({}, dir);
    const t = await signIn(svc.url);
    await fund(svc.url, t, '50', FUND_TIMEOUT_MS);
    const body = { from: 'wallet', to: 'spot', amount: '20', clientTransferId: 'once' };
    assert.equal((await call(svc.url, '/wallet/transfer', { token: t.token, body })).status, 200);
    await svc.close();
    svc = await startService({}, dir);
    try {
      const again = await call(svc.url, '/wallet/transfer', { token: t.token, body });
      assert.equal(again.status, 409, JSON.stringify(again.body));
      const b = await call(svc.url, '/wallet/balance', { token: t.token });
      assert.deepEqual([b.body.walletBalance, b.body.spotBalance], ['30', '20']);
    } finally {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('history and settlements listings', () => {
  let t: Trader;
  let other: Trader;
  before(async () => {
    [t, other] = await Promise.all([signIn(url), signIn(url)]);
    await Promise.all([fund(url, t, '100', FUND_TIMEOUT_MS), fund(url, other, '5', FUND_TIMEOUT_MS)]);
    for (let i = 1; i <= 8; i++) await transfer(t, 'wallet', BUCKETS[1 + (i % 3)] as string, `${i}.5`);
    assert.equal((await withdraw(t, '3')).status, 200);
    assert.equal((await withdraw(other, '1')).status, 200);
  });

  test('/wallet/history: newest first with the documented fields', async () => {
    const all = await historyOf(t, '?limit=500');
    assert.equal(all.length, 1 + 16 + 1);
    const ids = all.map((e) => Number(e.id));
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a));
    assert.equal(new Set(ids).size, ids.length);
    for (const e of all) {
      const fields = ['id', 'type', 'amount', 'txHash', 'createdAt', 'bucket', 'asset', 'balanceAfter'];
      fields.push('ref');
      for (const field of fields) {
        assert.ok(field in e, `${field} missing in ${JSON.stringify(e)}`);
      }
      assert.equal(typeof e.id, 'string');
      assert.match(e.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      micro(e.amount);
      micro(e.balanceAfter);
    }
    const oldest = all.at(-1) as HistoryView;
    assert.equal(oldest.type, 'deposit');
    assert.match(oldest.txHash ?? '', /^0x[0-9a-f]{64}$/);
    assert.equal(all[0]?.type, 'withdrawal');
    assert.equal((await historyOf(t)).length, all.length, 'default limit covers 18 entries');
  });

  test('/wallet/history: limit 1..500 and `before` paging; bad limits are 400', async () => {
    const all = await historyOf(t, '?limit=500');
    assert.equal((await historyOf(t, '?limit=1')).length, 1);
    assert.deepEqual((await historyOf(t, '?limit=1'))[0], all[0]);
    const paged: HistoryView[] = [];
    let cursor = '';
    for (;;) {
      const page = await historyOf(t, `?limit=4${cursor}`);
      paged.push(...page);
      if (page.length < 4) break;
      cursor = `&before=${(page.at(-1) as HistoryView).id}`;
    }
    assert.deepEqual(paged, all);
    const bad = ['limit=0', 'limit=501', 'limit=x', 'limit=-1', 'limit=1.5', 'limit=1e2', 'limit=0x10'];
    for (const q of [...bad, 'before=0', 'before=abc', 'since=1']) {
      const r = await call(url, `/wallet/history?${q}`, { token: t.token });
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'VALIDATION_ERROR', q);
    }
    assert.equal((await call(url, '/wallet/history')).status, 401);
  });

  test('/wallet/settlements: kind and status filters, limit 1..200', async () => {
    const all = await settlementsOf(t);
    assert.deepEqual(all.map((s) => s.kind).sort(), ['deposit', 'withdraw']);
    assert.deepEqual((await settlementsOf(t, '?kind=deposit')).map((s) => s.kind), ['deposit']);
    assert.deepEqual((await settlementsOf(t, '?kind=withdraw')).map((s) => s.amount), ['3']);
    assert.deepEqual((await settlementsOf(t, '?kind=deposit&status=confirmed')).length, 1);
    assert.deepEqual(await settlementsOf(t, '?kind=deposit&status=failed'), []);
    assert.equal((await settlementsOf(t, '?limit=1')).length, 1);
    assert.equal((await settlementsOf(t, '?limit=200')).length, 2);
    for (const q of ['limit=0', 'limit=201', 'limit=x', 'limit=2.5', 'kind=transfer', 'status=done']) {
      const r = await call(url, `/wallet/settlements?${q}`, { token: t.token });
      assert.equal(r.status, 400, q);
    }
  });

  test('/wallet/settlements/{id}: own record 200; another account\'s or a made-up id 404', async () => {
    const mine = only(await settlementsOf(t, '?kind=withdraw'));
    const theirs = only(await settlementsOf(other, '?kind=withdraw'));
    assert.equal((await call(url, `/wallet/settlements/${mine.id}`, { token: t.token })).status, 200);
    const r = await call(url, `/wallet/settlements/${theirs.id}`, { token: t.token });
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'NOT_FOUND');
    assert.equal((await call(url, '/wallet/settlements/wd_999999', { token: t.token })).status, 404);
    assert.equal((await call(url, '/wallet/settlements/nope', { token: t.token })).status, 404);
    const cursor = await call(url, `/wallet/settlements?before=${theirs.id}`, { token: t.token });
    assert.equal(cursor.status, 404);
    assert.deepEqual((await settlementsOf(other, '?kind=withdraw')).map((s) => s.id), [theirs.id]);
  });
});

describe('settlement order', () => {
  test('newest first even within one millisecond (wd_10 before wd_9); paging covers all', async () => {
    const t = await signIn(url);
    await fund(url, t, '100', FUND_TIMEOUT_MS);
    // A burst submitted in one tick (straight to the sequencer, as the gateway does; HTTP requests
    // of one client rarely share a millisecond) so that ids on both sides of wd_9/wd_10 share one.
    const sequencer = ts.service.ctx.sequencer;
    const burst = Array.from({ length: 24 }, () =>
      sequencer.submit({ type: 'wallet.withdraw', account: t.lower, amount: 1_000_000n * 10n ** 12n }));
    assert.ok((await Promise.all(burst)).every((o) => o.ok));
    const seq = (s: SettlementView) => Number(s.id.slice(s.id.indexOf('_') + 1));
    const list = await settlementsOf(t, '?kind=withdraw&limit=200');
    assert.equal(list.length, 24);
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1] as SettlementView, list[i] as SettlementView];
      const newerFirst = a.createdAt > b.createdAt || (a.createdAt === b.createdAt && seq(a) > seq(b));
      assert.ok(newerFirst, `${a.id}@${a.createdAt} listed before ${b.id}@${b.createdAt}`);
    }
    const paged: SettlementView[] = [];
    let before = '';
    for (;;) {
      const page = await settlementsOf(t, `?kind=withdraw&limit=5${before}`);
      paged.push(...page);
      if (page.length < 5) break;
      before = `&before=${(page.at(-1) as SettlementView).id}`;
    }
    assert.deepEqual(paged.map((s) => s.id), list.map((s) => s.id));
  });
});

describe('concurrency', () => {
  test('50 parallel transfers of 3 from a wallet of 100: exactly 33 succeed, balances exact', async () => {
    const t = await signIn(url);
    await fund(url, t, '100', FUND_TIMEOUT_MS);
    const replies = await Promise.all(Array.from({ length: 50 }, () => transfer(t, 'wallet', 'perps', '3')));
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    assert.equal(ok.length, 33);
    assert.equal(refused.length, 17);
    for (const r of refused) {
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'INSUFFICIENT_BALANCE');
    }
    // serialisable: each success saw its own predecessor state, one step of 3 apart
    const after = ok.map((r) => micro(r.body.walletBalance)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(after, Array.from({ length: 33 }, (_, i) => 1_000_000n + 3_000_000n * BigInt(i)));
    assert.deepEqual(await bucketsOf(t), { wallet: 1_000_000n, perps: 99_000_000n, options: 0n, spot: 0n });
    assert.equal((await historyOf(t, '?limit=500')).filter((e) => e.type === 'transfer').length, 66);
  });

  test(`bank test: 4 accounts x 200 random concurrent transfers plus reads (seed ${SEED})`, async () => {
    console.log(`wallet bank test seed ${SEED} (replay with SEED=${SEED})`);
    const rand = mulberry32(SEED);
    const deposit = 1_000_000_000n;
    const traders = await Promise.all(Array.from({ length: 4 }, () => signIn(url)));
    await Promise.all(traders.map((t) => fund(url, t, usdc(deposit), FUND_TIMEOUT_MS)));
    const expected = traders.map((): Record<Bucket, bigint> => ({
      wallet: deposit,
      perps: 0n,
      options: 0n,
      spot: 0n,
    }));
    let reads = 0;
    let applied = 0;
    let refused = 0;

    const checkRead = async (t: Trader) => {
      const [b, assets] = await Promise.all([
        call(url, '/wallet/balance', { token: t.token }),
        call(url, '/wallet/assets', { token: t.token }),
      ]);
      assert.equal(b.status, 200);
      const keys = ['walletBalance', 'perpsBalance', 'optionsBalance', 'spotBalance'];
      keys.push('pendingWithdrawalTotal');
      const parts = keys.map((k) => micro(b.body[k]));
      for (const p of parts) assert.ok(p >= 0n, `negative balance in ${JSON.stringify(b.body)}`);
      assert.equal(parts.reduce((s, v) => s + v, 0n), deposit, `read != deposit: ${JSON.stringify(b.body)}`);
      const usdcRows = (assets.body as AssetView[]).filter((a) => a.asset === 'USDC');
      assert.equal(usdcRows.reduce((s, a) => s + micro(a.total), 0n), deposit);
      for (const a of usdcRows) assert.ok(micro(a.available) >= 0n);
      reads++;
    };

    const work = traders.map((t, i) => {
      const ops: (() => Promise<void>)[] = [];
      for (let k = 0; k < 200; k++) {
        const from = BUCKETS[Math.floor(rand() * 4)] as Bucket;
        let to = BUCKETS[Math.floor(rand() * 4)] as Bucket;
        if (to === from) to = BUCKETS[(BUCKETS.indexOf(from) + 1) % 4] as Bucket;
        const amount = BigInt(1 + Math.floor(rand() * 400_000_000)); // up to 400 USDC: some overdraw
        ops.push(async () => {
          const r = await transfer(t, from, to, usdc(amount));
          if (r.status === 200) {
            const e = expected[i] as Record<Bucket, bigint>;
            e[from] -= amount;
            e[to] += amount;
            applied++;
          } else {
            assert.equal(r.status, 400, JSON.stringify(r.body));
            assert.equal(r.body.error, 'INSUFFICIENT_BALANCE');
            refused++;
          }
        });
        if (rand() < 0.3) ops.push(() => checkRead(t));
      }
      return runPool(ops, 12);
    });
    await Promise.all(work);
    for (const [i, t] of traders.entries()) {
      await checkRead(t);
      assert.deepEqual(await bucketsOf(t), expected[i]);
    }
    console.log(`bank test: ${applied} transfers applied, ${refused} refused, ${reads} consistent reads`);
    assert.ok(applied > 100 && refused > 0);
  });
});

/** Runs the tasks with at most `width` in flight. */
async function runPool(tasks: readonly (() => Promise<void>)[], width: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      await task();
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
}
