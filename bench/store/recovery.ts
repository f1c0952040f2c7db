/**
 * What a restart costs: the service rebuilds its core by replaying the whole journal
 * (runtime/sequencer.ts `recover`), so the time to serve again grows with the history. This
 * measures it on a real SQLite journal of the shared engine workload (bench/shared/workload.mjs:
 * limit, market, IOC orders and cancels on BTC-PERP from four funded accounts, the commands the
 * full linear adapter of bench/engine sends), journaled with their history as the live service
 * writes them. Then a fresh core on the same file recovers, and the report splits the replay into
 * reading and decoding the journal rows, and applying the commands.
 *
 * Run: node --import tsx bench/store/recovery.ts [--ops 200000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../../src/adapters/store/database.ts';
import { Journal, type CommittedCommand } from '../../src/adapters/store/journal.ts';
import { InlineJournalWriter } from '../../src/adapters/store/journal-writer.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { coreConfig } from '../../src/config/core.ts';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type CoreConfig } from '../../src/core/exchange.ts';
import { PLAIN_ORDER } from '../../src/core/linear/order.ts';
import { fx } from '../../src/core/money.ts';
import { Sequencer } from '../../src/runtime/sequencer.ts';

interface WorkloadOp { type: 'limit' | 'ioc' | 'market' | 'cancel'; side: 'buy' | 'sell'; price: number; size: number; id: number }
const workloadUrl = new URL('../shared/workload.mjs', import.meta.url).href;
const { buildWorkload } = (await import(workloadUrl)) as { buildWorkload(o: object): { prefill: WorkloadOp[]; ops: WorkloadOp[] } };

const { values: args } = parseArgs({ options: { ops: { type: 'string', default: '200000' } } });
const OPS = Number(args.ops);
const BATCH = 256;
const TICK = 10n ** 17n; // 0.1, BTC-PERP
const STEP = 10n ** 14n; // 0.0001
const ACCOUNTS = ['1', '2', '3', '4'].map((d) => '0x' + d.repeat(40));
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

/** The engine benchmark's venue: the index fresh all run, the open-order limits lifted (four accounts hold the book). */
function venueConfig(): CoreConfig {
  const base = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 86_400_000 });
  const limits = { ...base.linear.limits, maxOpenOrdersPerMarket: 1e9, maxOpenOrdersPerAccount: 1e9 };
  return { ...base, linear: { ...base.linear, limits } };
}

function placeCommand(op: WorkloadOp): Command {
  const market = op.type === 'market';
  const account = ACCOUNTS[(op.side === 'buy' ? 0 : 2) + (op.id & 1)]!;
  return {
    type: 'perp.place', account, request: {
      marketId: 'BTC-PERP', side: op.side === 'buy' ? BUY : SELL, type: market ? 'market' : 'limit',
      quantity: BigInt(op.size) * STEP, price: market ? null : BigInt(op.price) * TICK,
      timeInForce: op.type === 'limit' ? 'gtc' : 'ioc', postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER,
    },
  };
}

/** The live run: every accepted command journaled in batches with its history, as the journal worker writes them. */
function journalWorkload(path: string): number {
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  const exchange = new Exchange(venueConfig());
  const engineIds = new Map<number, string>();
  let now = T0;
  let batch: CommittedCommand[] = [];
  const commit = () => {
    journal.project(batch, journal.append(batch));
    batch = [];
  };
  const run = (command: Command) => {
    const outcome = exchange.execute(command, ++now);
    if (!outcome.ok) return null;
    batch.push({ ts: now, command, events: outcome.events });
    if (batch.length === BATCH) commit();
    return outcome;
  };
  for (const [i, account] of ACCOUNTS.entries()) {
    run({ type: 'chain.deposit_observed', txHash: `0x${i + 1}`, account, amount: fx('1000000000'), confirmations: 1 });
    run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx('1000000000') });
  }
  run({ type: 'index.publish', underlying: 'BTC', price: fx('10000'), sourceTs: now });
  const { prefill, ops } = buildWorkload({ n: OPS, seed: 42 });
  for (const op of [...prefill, ...ops]) {
    if (op.type === 'cancel') {
      const orderId = engineIds.get(op.id);
      if (orderId === undefined) continue;
      engineIds.delete(op.id);
      const account = ACCOUNTS[(op.side === 'buy' ? 0 : 2) + (op.id & 1)]!;
      run({ type: 'perp.cancel', account, orderId: Number(orderId) });
      continue;
    }
    const outcome = run(placeCommand(op));
    const order = outcome?.ok ? (outcome.result as { order: { id: string; status: string } }).order : null;
    if (order?.status === 'open') engineIds.set(op.id, order.id);
  }
  commit();
  const head = journal.head();
  db.close();
  return head;
}

const dir = mkdtempSync(join(os.tmpdir(), 'recovery-bench-'));
try {
  const path = join(dir, 'exchange.db');
  const built = performance.now();
  const commands = journalWorkload(path);
  console.log(`journal: ${commands} commands (${OPS} workload ops and the prefill), written in ${((performance.now() - built) / 1000).toFixed(1)} s; node ${process.version}`);

  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  let started = performance.now();
  let read = 0;
  for (const _record of journal.replay()) read++;
  const readMs = performance.now() - started;

  const exchange = new Exchange(venueConfig());
  const sequencer = new Sequencer(exchange, journal, new InlineJournalWriter(journal), { now: () => T0 }, {
    earlyFlushAt: 16, maxInFlight: 4, onFatal: () => {}, replayCheck: 'strict',
  });
  started = performance.now();
  const replayed = sequencer.recover();
  const recoverMs = performance.now() - started;
  db.close();
  if (replayed !== commands || read !== commands) throw new Error(`recovered ${replayed} and read ${read} of ${commands} commands`);

  const perSecond = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
  console.log(`read and decode the journal: ${(readMs / 1000).toFixed(2)} s (${(readMs * 1000 / commands).toFixed(1)} µs per command)`);
  console.log(`recover (read, decode, apply, replay check): ${(recoverMs / 1000).toFixed(2)} s, ${perSecond(commands, recoverMs)} commands/s (${(recoverMs * 1000 / commands).toFixed(1)} µs per command)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
