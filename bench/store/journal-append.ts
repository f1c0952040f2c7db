/**
 * What a group commit costs the journal worker, by batch size: the fixed price of a transaction
 * (the WAL write and its fsync) against the price of each command in it (the journal row and the
 * history projections of its events). This is why the worker merges the batches that queue behind
 * a commit (adapters/store/journal-worker.ts) and the sequencer may send batches early.
 *
 * The commands are real (filled-orders.ts: filled IOC market orders from the core), each journaled
 * with the events the projections consume (two orders, a fill, three ledger lines).
 * Each batch size appends the same commands to a fresh SQLite file (WAL), in one thread, and the
 * figures are wall and CPU time per command.
 *
 * Run: node --import tsx bench/store/journal-append.ts [--commands 8000 --synchronous FULL]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
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
console.log('batch  wall us/command  cpu us/command  (of which kernel)');
for (const size of BATCH_SIZES) {
  const dir = mkdtempSync(join(os.tmpdir(), 'journal-append-'));
  try {
    const db = openDatabase(join(dir, 'exchange.sqlite'), SYNCHRONOUS);
    const journal = new Journal(db, historyProjectors(db));
    const started = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    let written = 0;
    for (; written + size <= items.length; written += size) journal.append(items.slice(written, written + size));
    const wallUs = Number(process.hrtime.bigint() - started) / 1000 / written;
    const used = process.cpuUsage(cpu);
    db.close();
    const cpuUs = (used.user + used.system) / written;
    console.log(`${String(size).padStart(5)}  ${wallUs.toFixed(1).padStart(14)}  ${cpuUs.toFixed(1).padStart(14)}  ${(used.system / written).toFixed(1).padStart(17)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
