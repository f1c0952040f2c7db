/**
 * What a group commit costs the journal worker, by batch size: the fixed price of a transaction
 * (the WAL write and its fsync) against the price of each command in it. Two transactions per
 * batch, as the worker runs them: the durable append of the journal rows (what a client's
 * acknowledgement waits for) and then the history projections of its events (no fsync of their
 * own). This is why the worker merges the batches that queue behind a commit
 * (adapters/store/journal-worker.ts) and the sequencer may send batches early.
 *
 * The commands are real (filled-orders.ts: filled IOC market orders from the core), each journaled
 * with the events the projections consume (two orders, a fill, three ledger lines).
 * Each batch size appends the same commands to a fresh SQLite file (WAL), in one thread, and the
 * figures are wall and CPU time per command, and the bytes a journal row's command takes (the
 * compact encoding, command-codec.ts) against the JSON an older build stored.
 *
 * Run: node --import tsx bench/store/journal-append.ts [--commands 8000 --synchronous FULL]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { encode } from '../../src/adapters/store/codec.ts';
import { openDatabase, type Synchronous } from '../../src/adapters/store/database.ts';
import { Journal } from '../../src/adapters/store/journal.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { filledOrders, PROJECTED_TYPES as PROJECTED } from './filled-orders.ts';

const { values: args } = parseArgs({
  options: {
    commands: { type: 'string', default: '8000' },
    synchronous: { type: 'string', default: 'FULL' },
  },
});
const COMMANDS = Number(args.commands);
if (args.synchronous !== 'FULL' && args.synchronous !== 'NORMAL') throw new Error('--synchronous is FULL or NORMAL');
const SYNCHRONOUS: Synchronous = args.synchronous;
const BATCH_SIZES = [1, 4, 16, 64, 256];

const items = filledOrders(COMMANDS).map((c) => ({ ...c, events: c.events.filter((e) => PROJECTED.has(e.type)) }));
console.log(`journal append: ${COMMANDS} filled orders per batch size, synchronous=${SYNCHRONOUS}, node ${process.version}`);
/** Wall and CPU time spent in one kind of transaction. */
class Phase {
  private wallNs = 0n;
  private user = 0;
  private system = 0;

  time<T>(work: () => T): T {
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    const result = work();
    this.wallNs += process.hrtime.bigint() - started;
    const used = process.cpuUsage(cpu);
    this.user += used.user;
    this.system += used.system;
    return result;
  }

  report(commands: number): string {
    const wall = Number(this.wallNs) / 1000 / commands;
    const cpu = (this.user + this.system) / commands;
    return `${wall.toFixed(1).padStart(11)}  ${cpu.toFixed(1).padStart(10)}  ${(this.system / commands).toFixed(1).padStart(8)}`;
  }
}

/** The stored size of each journal row's command (the first batch size's journal). */
const recordBytes: number[] = [];
console.log('         durable append (journal rows)          history projection');
console.log('batch   wall us/cmd  cpu us/cmd  (kernel)   wall us/cmd  cpu us/cmd  (kernel)');
for (const size of BATCH_SIZES) {
  const dir = mkdtempSync(join(os.tmpdir(), 'journal-append-'));
  try {
    const db = openDatabase(join(dir, 'exchange.sqlite'), SYNCHRONOUS);
    const journal = new Journal(db, historyProjectors(db));
    const append = new Phase();
    const project = new Phase();
    let written = 0;
    for (; written + size <= items.length; written += size) {
      const batch = items.slice(written, written + size);
      const first = append.time(() => journal.append(batch));
      project.time(() => journal.project(batch, first));
    }
    if (size === BATCH_SIZES[0]) recordBytes.push(...(db.prepare('SELECT length(command) AS n FROM journal').all() as { n: number }[]).map((r) => r.n));
    db.close();
    console.log(`${String(size).padStart(5)}  ${append.report(written)}  ${project.report(written)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const average = (sizes: readonly number[]) => (sizes.reduce((a, b) => a + b, 0) / sizes.length).toFixed(0);
const jsonBytes = items.slice(0, recordBytes.length).map((c) => Buffer.byteLength(encode(c.command)));
console.log(`journal row's command: ${average(recordBytes)} bytes per record (JSON, as older builds stored it: ${average(jsonBytes)})`);
