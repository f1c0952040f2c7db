/**
 * What a group commit costs the journal worker, by batch size: the fixed price of a transaction
 * (the WAL write and its fsync) against the price of each command in it (the journal row and the
 * history projections of its events). This is why the worker merges the batches that queue behind
 * a commit (adapters/store/journal-worker.ts) and the sequencer may send batches early.
 *
 * The commands are real: IOC market buys of 0.001 BTC-PERP that fill against a resting sell, run
 * through the core (the full-path engine adapter's exchange), so each one journals with the events
 * the projections consume (two orders, a fill, three ledger lines), as in bench/gateway/orders.ts.
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
import { Journal, type CommittedCommand } from '../../src/adapters/store/journal.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { fullAdapter } from '../engine/adapters/full.ts';

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
const MAKER = `0x${'3'.repeat(40)}`;
const TAKER = `0x${'1'.repeat(40)}`;

function order(side: 0 | 1, price: bigint | null): OrderRequest {
  return {
    marketId: 'BTC-PERP',
    side,
    type: price === null ? 'market' : 'limit',
    quantity: 10n ** 15n,
    price,
    timeInForce: price === null ? 'ioc' : 'gtc',
    postOnly: false,
    reduceOnly: false,
    marginMode: 'cross',
    ...PLAIN_ORDER,
  };
}

/** Filled market orders with the events the projections consume, as the sequencer batches them. */
function committedOrders(count: number): CommittedCommand[] {
  const venue = fullAdapter.newBook();
  const projected = new Set(['order', 'fill', 'ledger', 'settlement']);
  const out: CommittedCommand[] = [];
  for (let i = 0; i < count; i++) {
    const ts = venue.now + i;
    const rest = venue.exchange.execute({ type: 'perp.place', account: MAKER, request: order(SELL, 10_001n * 10n ** 18n) }, ts);
    const command: Command = { type: 'perp.place', account: TAKER, request: order(BUY, null) };
    const taken = venue.exchange.execute(command, ts);
    if (!rest.ok || !taken.ok) throw new Error('setup order refused');
    out.push({ ts, command, events: taken.events.filter((e) => projected.has(e.type)) });
  }
  return out;
}

const items = committedOrders(COMMANDS);
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
