/**
 * Durability under kill -9 (research/reliability.md 3 and 7.1): the real service runs as a child
 * process (`node --import tsx src/main.ts`, temporary DATA_DIR, free loopback port). Six accounts
 * sign in with SIWE (viem keys), are funded through the simulated chain and spread their money over
 * the four buckets. Each cycle then runs 16 concurrent workers issuing bucket transfers with
 * UNIQUE amounts (the micro-USDC digits carry an operation number, so every ledger line names its
 * transfer), some withdrawals and one deposit, records every reply, and SIGKILLs the process after
 * a seeded random delay (300-1500 ms); the journal runs with small batches (JOURNAL_EARLY_FLUSH_AT=2)
 * so that the worker keeps merging queued batches into shared transactions. The process restarts
 * on the same DATA_DIR and the test
 * proves, from /wallet/history, /wallet/balance, /wallet/settlements and the chain's own file:
 *   - every acknowledged transfer, withdrawal and deposit is present exactly once;
 *   - every refused one is absent; an unacknowledged (in-flight) one is present at most once and
 *     whole (both legs or neither) - the applied subset is read off the unique amounts;
 *   - each bucket equals its deposits plus exactly the applied operations (initial + acknowledged
 *     + that subset), and equals the sum of its history lines;
 *   - the ledger balances: over all accounts, buckets + pending withdrawals + confirmed
 *     withdrawals = credited deposits = acknowledged deposits (+ any in-flight one that landed);
 *   - every confirmed withdrawal was paid on chain exactly once, across restarts.
 * The kill/restart cycle runs KILL_CYCLES times (default 6) with seeds derived from SEED (printed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { mulberry32 } from '../../src/adapters/feed/price-model.ts';
import { admin, call, freePort, fund, signIn, waitFor, type Trader } from '../support/harness.ts';
import { ServiceProcess } from '../support/service-process.ts';

const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : Date.now() % 2 ** 31;
const CYCLES = Number(process.env.KILL_CYCLES ?? 6);
const ACCOUNTS = 6;
const WORKERS = 16;
const BUCKETS = ['wallet', 'perps', 'options', 'spot'] as const;
type Bucket = (typeof BUCKETS)[number];
const M = 1_000_000n; // micro-USDC per USDC
const INITIAL_DEPOSIT = 1_000n * M;
const SPREAD = 200n * M; // moved from wallet to each other bucket before the first kill

type Outcome = 'inflight' | 'ok' | 'refused' | 'unknown';
interface Op {
  readonly n: number;
  readonly kind: 'transfer' | 'withdraw' | 'deposit';
  readonly acct: number;
  readonly from: Bucket;
  readonly to: Bucket;
  /** micro-USDC; amount % 1e6 === n, so every operation has its own amount */
  readonly amount: bigint;
  readonly cycle: number;
  outcome: Outcome;
  withdrawalId?: string;
  txHash?: string;
}

function newOp(
  n: number, kind: Op['kind'], acct: number, from: Bucket, to: Bucket, amount: bigint, cycle: number,
): Op {
  return { n, kind, acct, from, to, amount, cycle, outcome: 'inflight' };
}

function micro(value: string): bigint {
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,6}))?$/.exec(value);
  assert.ok(m !== null, `not a USDC decimal: ${value}`);
  const v = BigInt(m[2] as string) * M + BigInt((m[3] ?? '').padEnd(6, '0'));
  return m[1] === '-' ? -v : v;
}

function usdc(units: bigint): string {
  const frac = (units % M).toString().padStart(6, '0').replace(/0+$/, '');
  return frac.length > 0 ? `${units / M}.${frac}` : `${units / M}`;
}

/** GET with retries: reads after a restart must not fail on a stale pooled connection. */
async function read<T>(url: string, path: string, token: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const r = await call<T>(url, path, { token });
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    } catch (error) {
      if (attempt >= 3 || error instanceof assert.AssertionError) throw error;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

interface BalanceView {
  onchainDepositTotal: string;
  pendingDepositTotal: string;
  walletBalance: string;
  perpsBalance: string;
  optionsBalance: string;
  spotBalance: string;
  pendingWithdrawalTotal: string;
}

interface SettlementView {
  id: string;
  kind: 'deposit' | 'withdraw';
  status: string;
  amount: string;
  txHash: string | null;
}

interface HistoryLine {
  id: string;
  type: string;
  bucket: Bucket;
  amount: string;
  ref: string | null;
  txHash: string | null;
}

async function fullHistory(url: string, token: string): Promise<HistoryLine[]> {
  const out: HistoryLine[] = [];
  let before = '';
  for (;;) {
    const page = await read<HistoryLine[]>(url, `/wallet/history?limit=500${before}`, token);
    out.push(...page);
    if (page.length < 500) return out;
    before = `&before=${(page.at(-1) as HistoryLine).id}`;
  }
}

async function allSettlements(url: string, token: string): Promise<SettlementView[]> {
  const out: SettlementView[] = [];
  let before = '';
  for (;;) {
    const page = await read<SettlementView[]>(url, `/wallet/settlements?limit=200${before}`, token);
    out.push(...page);
    if (page.length < 200) return out;
    before = `&before=${(page.at(-1) as SettlementView).id}`;
  }
}

const TITLE = `kill -9 under load loses nothing acknowledged and applies nothing twice (seed ${SEED})`;

test(TITLE, { timeout: 90_000 }, async () => {
  console.log(`kill9: seed ${SEED}, ${CYCLES} cycles (replay with SEED=${SEED} KILL_CYCLES=${CYCLES})`);
  const dataDir = mkdtempSync(join(tmpdir(), 'exchange-kill9-'));
  const svc = new ServiceProcess(dataDir, await freePort(), {
    RATE_LIMIT_ACCOUNT: '1000000000',
    // Small batches sent early, many in flight: the journal worker then merges queued batches
    // into one transaction all the time, and a kill lands between and inside such commits.
    JOURNAL_EARLY_FLUSH_AT: '2',
    JOURNAL_MAX_IN_FLIGHT: '8',
    // Snapshots all the time: kills land while one is written, and restarts start from one.
    SNAPSHOT_EVERY_COMMANDS: '300',
    SNAPSHOT_EVERY_MS: '1000',
  });
  const ops: Op[] = [];
  let nextN = 1;
  try {
    const bootMs = await svc.start();
    const url = svc.url;
    const traders: Trader[] = [];
    for (let i = 0; i < ACCOUNTS; i++) traders.push(await signIn(url));
    await Promise.all(traders.map((t) => fund(url, t, usdc(INITIAL_DEPOSIT), 15_000)));
    for (const t of traders) {
      for (const to of ['perps', 'options', 'spot'] as const) {
        const body = { from: 'wallet', to, amount: usdc(SPREAD) };
        const r = await call(url, '/wallet/transfer', { token: t.token, body });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
    }
    console.log(`kill9: first start ${bootMs} ms, ${ACCOUNTS} accounts, ${usdc(INITIAL_DEPOSIT)} USDC each`);

    const seeds = mulberry32(SEED);
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const cycleSeed = Math.floor(seeds() * 2 ** 31);
      const rand = mulberry32(cycleSeed);
      const killAfter = 300 + Math.floor(rand() * 1_200);
      const depositAt = Math.floor(rand() * killAfter);
      let killed = false;

      const issue = async (op: Op): Promise<void> => {
        ops.push(op);
        const t = traders[op.acct] as Trader;
        try {
          if (op.kind === 'deposit') {
            const body = { walletAddress: t.address, amount: usdc(op.amount) };
            const r = await call(url, '/admin/chain/deposits', { body, headers: admin });
            assert.equal(r.status, 200, JSON.stringify(r.body));
            op.txHash = r.body.txHash;
            op.outcome = 'ok';
            return;
          }
          const amount = usdc(op.amount);
          const r = op.kind === 'transfer'
            ? await call(url, '/wallet/transfer', {
              token: t.token,
              body: { from: op.from, to: op.to, amount },
            })
            : await call(url, '/wallet/withdraw', { token: t.token, body: { amount } });
          if (r.status === 200) {
            op.outcome = 'ok';
            if (op.kind === 'withdraw') op.withdrawalId = r.body.withdrawalId;
          } else if (r.status === 400 && r.body?.error === 'INSUFFICIENT_BALANCE') {
            op.outcome = 'refused';
          } else if (r.status >= 500) {
            op.outcome = 'unknown';
          } else {
            assert.fail(`${op.kind} ${usdc(op.amount)}: unexpected ${r.status} ${JSON.stringify(r.body)}`);
          }
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          op.outcome = 'unknown'; // connection reset or refused: the process died
        }
      };

      const worker = async () => {
        while (!killed) {
          const acct = Math.floor(rand() * ACCOUNTS);
          const n = nextN++;
          const roll = rand();
          const from = BUCKETS[Math.floor(rand() * 4)] as Bucket;
          let to = BUCKETS[Math.floor(rand() * 3)] as Bucket;
          if (to === from) to = 'spot';
          if (roll < 0.05) {
            const amount = BigInt(1 + Math.floor(rand() * 3)) * M + BigInt(n);
            await issue(newOp(n, 'withdraw', acct, 'wallet', 'wallet', amount, cycle));
          } else {
            const amount = BigInt(1 + Math.floor(rand() * 25)) * M + BigInt(n);
            await issue(newOp(n, 'transfer', acct, from, to, amount, cycle));
          }
        }
      };

      const loadStart = Date.now();
      const depositTimer = setTimeout(() => {
        const n = nextN++;
        const amount = 10n * M + BigInt(n);
        const acct = n % ACCOUNTS;
        void issue(newOp(n, 'deposit', acct, 'wallet', 'wallet', amount, cycle));
      }, depositAt);
      const workers = Array.from({ length: WORKERS }, worker);
      await new Promise((r) => setTimeout(r, killAfter));
      killed = true;
      await svc.kill();
      clearTimeout(depositTimer);
      await Promise.all(workers);
      const loadMs = Date.now() - loadStart;
      const restartMs = await svc.start();

      // let the chain watcher finish what was in flight: every deposit transaction on the chain
      // (acknowledged or not) credited, every withdrawal confirmed or refunded
      await waitFor(async () => {
        const onChain = chainDeposits(dataDir);
        for (const t of traders) {
          const b = await read<BalanceView>(url, '/wallet/balance', t.token);
          if (b.pendingWithdrawalTotal !== '0' || b.pendingDepositTotal !== '0') return false;
          const credited = (await allSettlements(url, t.token))
            .filter((s) => s.kind === 'deposit' && s.status === 'confirmed')
            .map((s) => s.txHash);
          if (credited.sort().join() !== (onChain.get(t.lower) ?? []).sort().join()) return false;
        }
        return true;
      }, 20_000, 100);

      const stats = await verify(url, traders, ops, dataDir, cycle);
      const thisCycle = ops.filter((o) => o.cycle === cycle);
      const count = (kind: Op['kind'], outcome: Outcome) =>
        thisCycle.filter((o) => o.kind === kind && o.outcome === outcome).length;
      const deposit = thisCycle.find((o) => o.kind === 'deposit')?.outcome ?? 'not sent';
      console.log(
        `kill9 cycle ${cycle} (seed ${cycleSeed}): killed after ${killAfter} ms (load ${loadMs} ms), ` +
          `restart ${restartMs} ms; ` +
          `transfers ok ${count('transfer', 'ok')}, refused ${count('transfer', 'refused')}, ` +
          `in flight ${count('transfer', 'unknown')} (applied ${stats.unknownApplied.transfer}); ` +
          `withdrawals ok ${count('withdraw', 'ok')}, in flight ${count('withdraw', 'unknown')} ` +
          `(applied ${stats.unknownApplied.withdraw}); deposit ${deposit}`,
      );
      assert.equal(ops.filter((o) => o.outcome === 'inflight').length, 0);
    }
    const acked = ops.filter((o) => o.kind === 'transfer' && o.outcome === 'ok').length;
    assert.ok(acked > 100, `only ${acked} transfers were acknowledged: the load did not run`);
  } catch (error) {
    console.log(`kill9: service output tail:\n${svc.tail()}`);
    throw error;
  } finally {
    await svc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** Deposit transactions on the simulated chain (mined or in the mempool), by owner, from its own file. */
function chainDeposits(dataDir: string): Map<string, string[]> {
  const db = new Database(join(dataDir, 'chain.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT t.hash, d.owner FROM txs t JOIN deposit_addresses d ON d.address = t.to_addr
         WHERE t.kind = 'deposit' AND t.dropped = 0`,
      )
      .all() as { hash: string; owner: string }[];
    const out = new Map<string, string[]>();
    for (const r of rows) out.set(r.owner, [...(out.get(r.owner) ?? []), r.hash]);
    return out;
  } finally {
    db.close();
  }
}

/** Checks every claim of the header against the restarted service; returns how in-flight ops resolved. */
async function verify(
  url: string,
  traders: readonly Trader[],
  ops: readonly Op[],
  dataDir: string,
  cycle: number,
) {
  const unknownApplied = { transfer: 0, withdraw: 0, deposit: 0 };
  let totalHeld = 0n;
  let totalCredited = 0n;
  let totalAckedDeposits = 0n;
  const confirmedWithdrawals: { id: string; amount: bigint }[] = [];

  for (const [acct, t] of traders.entries()) {
    const where = `cycle ${cycle}, account ${acct}`;
    const [balance, history, settlements] = await Promise.all([
      read<BalanceView>(url, '/wallet/balance', t.token),
      fullHistory(url, t.token),
      allSettlements(url, t.token),
    ]);
    const buckets: Record<Bucket, bigint> = {
      wallet: micro(balance.walletBalance),
      perps: micro(balance.perpsBalance),
      options: micro(balance.optionsBalance),
      spot: micro(balance.spotBalance),
    };
    for (const b of BUCKETS) assert.ok(buckets[b] >= 0n, `${where}: ${b} is negative`);

    // history lines per operation number (the micro digits of the amount)
    const sums: Record<Bucket, bigint> = { wallet: 0n, perps: 0n, options: 0n, spot: 0n };
    const byN = new Map<number, HistoryLine[]>();
    for (const line of history) {
      const amount = micro(line.amount);
      sums[line.bucket] += amount;
      const n = Number((amount < 0n ? -amount : amount) % M);
      if (n === 0) continue; // funding and the initial spread: whole USDC amounts
      byN.set(n, [...(byN.get(n) ?? []), line]);
    }
    assert.deepEqual(sums, buckets, `${where}: history lines do not add up to the balances`);

    // replay our own record of operations: initial + acknowledged + the applied in-flight subset
    const expected: Record<Bucket, bigint> = {
      wallet: INITIAL_DEPOSIT - 3n * SPREAD,
      perps: SPREAD,
      options: SPREAD,
      spot: SPREAD,
    };
    let credited = INITIAL_DEPOSIT;
    let confirmedOut = 0n;
    const mine = ops.filter((o) => o.acct === acct);
    const known = new Set(mine.map((o) => o.n));
    for (const n of byN.keys()) assert.ok(known.has(n), `${where}: lines of an unknown operation (n=${n})`);
    for (const op of mine) {
      const lines = byN.get(op.n) ?? [];
      const label = `${where}: ${op.kind} #${op.n} ${usdc(op.amount)} (${op.outcome}, cycle ${op.cycle})`;
      let applied: boolean;
      if (op.kind === 'transfer') {
        const leg = (bucket: Bucket, amount: bigint) =>
          lines.filter((l) => l.type === 'transfer' && l.bucket === bucket && micro(l.amount) === amount);
        const out = leg(op.from, -op.amount);
        const inn = leg(op.to, op.amount);
        assert.equal(lines.length, out.length + inn.length, `${label}: unexpected ${JSON.stringify(lines)}`);
        assert.equal(out.length, inn.length, `${label}: half-applied`);
        assert.ok(out.length <= 1, `${label}: applied ${out.length} times`);
        applied = out.length === 1;
        if (applied) {
          expected[op.from] -= op.amount;
          expected[op.to] += op.amount;
        }
      } else if (op.kind === 'withdraw') {
        const debit = lines.filter(
          (l) => l.type === 'withdrawal' && l.bucket === 'wallet' && micro(l.amount) === -op.amount,
        );
        const refund = lines.filter((l) => l.type === 'withdrawal_refund' && micro(l.amount) === op.amount);
        assert.equal(lines.length, debit.length + refund.length, `${label}: unexpected lines`);
        assert.ok(debit.length <= 1 && refund.length <= debit.length, `${label}: applied ${debit.length}x`);
        applied = debit.length === 1;
        if (applied) {
          const id = (debit[0] as HistoryLine).ref;
          if (op.outcome === 'ok') assert.equal(id, op.withdrawalId, `${label}: the acknowledged id`);
          const record = settlements.find((s) => s.id === id);
          assert.ok(record !== undefined, `${label}: no settlement record ${id}`);
          assert.equal(micro(record.amount), op.amount);
          const terminal = record.status === 'confirmed' || record.status === 'failed';
          assert.ok(terminal, `${label}: still ${record.status}`);
          assert.equal(refund.length, record.status === 'failed' ? 1 : 0, `${label}: refund lines`);
          expected.wallet -= op.amount;
          if (record.status === 'failed') expected.wallet += op.amount;
          else {
            confirmedOut += op.amount;
            confirmedWithdrawals.push({ id: record.id, amount: op.amount });
          }
        }
      } else {
        const deposits = lines.filter((l) => l.type === 'deposit');
        assert.equal(lines.length, deposits.length, `${label}: unexpected lines`);
        assert.ok(deposits.length <= 1, `${label}: credited ${deposits.length} times`);
        applied = deposits.length === 1;
        if (op.outcome === 'ok') {
          assert.equal(deposits[0]?.txHash, op.txHash, `${label}: acknowledged deposit not credited`);
          totalAckedDeposits += op.amount;
        }
        if (applied) {
          expected.wallet += op.amount;
          credited += op.amount;
        }
      }
      if (op.outcome === 'ok') assert.ok(applied, `${label}: acknowledged but missing after restart`);
      if (op.outcome === 'refused') assert.ok(!applied, `${label}: refused but applied`);
      if (op.outcome === 'unknown' && applied && op.cycle === cycle) unknownApplied[op.kind]++;
    }
    assert.deepEqual(buckets, expected, `${where}: balances != initial + acknowledged + applied in-flight`);
    assert.equal(micro(balance.onchainDepositTotal), credited, `${where}: credited deposits`);
    assert.equal(micro(balance.pendingWithdrawalTotal), 0n);
    const withdrawals = settlements.filter((s) => s.kind === 'withdraw');
    const debits = history.filter((l) => l.type === 'withdrawal').length;
    assert.equal(withdrawals.length, debits, `${where}: settlement records`);
    const deposits = settlements.filter((s) => s.kind === 'deposit');
    assert.ok(deposits.every((s) => s.status === 'confirmed'), `${where}: deposit records`);
    const txHashes = new Set(deposits.map((s) => s.txHash));
    assert.equal(txHashes.size, deposits.length, `${where}: a deposit tx credited twice`);

    const held = BUCKETS.reduce((s, b) => s + buckets[b], 0n) + micro(balance.pendingWithdrawalTotal);
    assert.equal(held + confirmedOut, credited, `${where}: buckets + pending + withdrawn != deposits`);
    totalHeld += held + confirmedOut;
    totalCredited += credited;
  }
  assert.equal(totalHeld, totalCredited, `cycle ${cycle}: the ledger does not balance over all accounts`);
  const initial = BigInt(traders.length) * INITIAL_DEPOSIT;
  assert.ok(totalCredited >= initial + totalAckedDeposits, `cycle ${cycle}: acknowledged deposits missing`);

  // the chain's own record: every confirmed withdrawal paid exactly once, never twice across restarts
  const chainDb = new Database(join(dataDir, 'chain.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const paid = chainDb.prepare("SELECT ref, amount, dropped FROM txs WHERE kind = 'withdrawal'").all() as {
      ref: string; amount: string; dropped: number;
    }[];
    for (const w of confirmedWithdrawals) {
      const txs = paid.filter((p) => p.ref === w.id);
      assert.equal(txs.length, 1, `cycle ${cycle}: withdrawal ${w.id} has ${txs.length} payouts on chain`);
      const paidAmount = BigInt((txs[0] as { amount: string }).amount);
      assert.equal(paidAmount, w.amount * 10n ** 12n, `cycle ${cycle}: ${w.id} amount`);
      assert.equal((txs[0] as { dropped: number }).dropped, 0);
    }
  } finally {
    chainDb.close();
  }
  return { unknownApplied };
}
