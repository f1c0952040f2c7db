/**
 * What a restart costs: the service rebuilds its core by replaying the whole journal
 * (runtime/sequencer.ts `recover`), so the time to serve again grows with the history. This
 * measures it on a real SQLite journal of the shared engine workload (bench/shared/workload.mjs:
 * limit, market, IOC orders and cancels on BTC-PERP from four funded accounts, the commands the
 * full linear adapter of bench/engine sends), journaled with their history as the live service
 * writes them. Then a fresh core on the same file recovers, and the report splits the replay into
 * reading and decoding the journal rows, and applying the commands. The reading is also timed on a
 * copy of the journal as builds before the compact encoding wrote it (JSON text, linked over the
 * text: command-codec.ts), in interleaved rounds, with the bytes per record of each.
 *
 * Run: node --import tsx bench/store/recovery.ts [--ops 200000]
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decode, encode } from '../../src/adapters/store/codec.ts';
import { openDatabase } from '../../src/adapters/store/database.ts';
import { Journal } from '../../src/adapters/store/journal.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { GENESIS, link } from '../../src/adapters/store/journal-record.ts';
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

/**
 * A copy of the journal at `from` as a build before the compact encoding would have written it:
 * each command as JSON text, linked over the text. Returns the average bytes of a row's command
 * in each.
 */
function asJsonJournal(from: string, to: string): { compact: number; json: number } {
  copyFileSync(from, to);
  const db = openDatabase(to);
  const rows = db.prepare('SELECT seq, ts, command FROM journal ORDER BY seq').all() as { seq: number; ts: number; command: Buffer }[];
  const update = db.prepare('UPDATE journal SET command = ?, chain = ? WHERE seq = ?');
  let previous = GENESIS;
  let compact = 0;
  let json = 0;
  db.transaction(() => {
    for (const row of rows) {
      const text = encode(decode(row.command));
      previous = link(previous, row.seq, row.ts, text);
      update.run(text, previous, row.seq);
      compact += row.command.length;
      json += Buffer.byteLength(text);
    }
  })();
  db.close();
  return { compact: compact / rows.length, json: json / rows.length };
}

/** Microseconds per record to read and decode the whole journal at `path` (links checked). */
function readJournal(path: string): number {
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  const started = performance.now();
  let read = 0;
  for (const _record of journal.replay()) read++;
  const us = (performance.now() - started) * 1000 / read;
  db.close();
  return us;
}

const dir = mkdtempSync(join(os.tmpdir(), 'recovery-bench-'));
try {
  const path = join(dir, 'exchange.db');
  const built = performance.now();
  const commands = journalWorkload(path);
  console.log(`journal: ${commands} commands (${OPS} workload ops and the prefill), written in ${((performance.now() - built) / 1000).toFixed(1)} s; node ${process.version}`);
  const jsonPath = join(dir, 'exchange-json.db');
  const bytes = asJsonJournal(path, jsonPath);
  console.log(`a row's command: ${bytes.compact.toFixed(0)} bytes per record (as JSON, before the compact encoding: ${bytes.json.toFixed(0)})`);
  const best = { compact: Infinity, json: Infinity };
  for (let round = 0; round < 3; round++) {
    best.compact = Math.min(best.compact, readJournal(path));
    best.json = Math.min(best.json, readJournal(jsonPath));
  }
  console.log(`read and decode the journal, best of 3: ${best.compact.toFixed(1)} µs per command (the JSON journal: ${best.json.toFixed(1)})`);

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
  const { replayed } = await sequencer.recover();
  const recoverMs = performance.now() - started;
  db.close();
  if (replayed !== commands || read !== commands) throw new Error(`recovered ${replayed} and read ${read} of ${commands} commands`);

  const perSecond = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
  console.log(`read and decode the journal: ${(readMs / 1000).toFixed(2)} s (${(readMs * 1000 / commands).toFixed(1)} µs per command)`);
  console.log(`recover (read, decode, apply, replay check): ${(recoverMs / 1000).toFixed(2)} s, ${perSecond(commands, recoverMs)} commands/s (${(recoverMs * 1000 / commands).toFixed(1)} µs per command)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
