/**
 * What the distributed mode's history projection costs (src/adapters/postgres/history/
 * projector.ts): real commands with the events the core produced for them, projected by
 * PgHistoryProjector into a temporary PostgreSQL server on loopback, by batch size, with the
 * commit waiting for its WAL flush (synchronous_commit on, the default) and without.
 *
 * Two mixes:
 *   - venue: a seeded venue (test/support/rich-venue.ts) of deposits, withdrawals, perps, futures,
 *     spot, options, quotes, cancels, liquidations and clock ticks: most events are marks and
 *     option-board ticks (candles), then orders, ledger lines, settlements and fills;
 *   - orders: filled IOC orders (bench/store/filled-orders.ts): per command two orders, a fill,
 *     three ledger lines and two positions, the event mix of durable order entry.
 *
 * Per row: commands/s and events/s, wall time per command, and CPU time per command of the
 * projector (this process: merging the batch, encoding the arrays, the pg driver) and of the
 * PostgreSQL server (every process of it, from /proc: the backend, the WAL writer, the rest).
 *
 * Run: node --import tsx bench/cluster/history-projection.ts [--batches 1,16,64,256 --orders 4000 --steps 600]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { PgHistoryProjector, type ProjectedCommand } from '../../src/adapters/postgres/history/projector.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { historyDatabase } from '../../test/support/pg-history.ts';
import { PostgresServer } from '../../test/support/postgres.ts';
import { venueCommands } from '../../test/support/venue-events.ts';
import { filledOrders } from '../store/filled-orders.ts';

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string', default: '1,16,64,256' },
    orders: { type: 'string', default: '4000' },
    steps: { type: 'string', default: '600' },
  },
});
const BATCHES = args.batches.split(',').map(Number);
/** Batch size 1 commits once per command: fewer of them keep the run short. */
const SINGLE_LIMIT = 600;

const toItems = (commands: readonly CommittedCommand[]): ProjectedCommand[] =>
  commands.map((c, i) => ({ seq: i + 1, ts: c.ts, events: c.events }));
const mixes: [string, ProjectedCommand[]][] = [
  ['venue', toItems(venueCommands(11, Number(args.steps)).commands)],
  ['orders', toItems(filledOrders(Number(args.orders)))],
];

const TICK_US = 1_000_000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU time (µs) of the server's processes so far: the postmaster and its children. */
function serverCpuUs(server: PostgresServer): number {
  const root = server.pid()!;
  let children: number[];
  try {
    children = execFileSync('pgrep', ['-P', String(root)]).toString().split('\n').filter((l) => l !== '').map(Number);
  } catch {
    children = []; // pgrep exits 1 when nothing matches
  }
  let ticks = 0;
  for (const pid of [root, ...children]) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      // a backend that just exited
    }
  }
  return ticks * TICK_US;
}

async function run(server: PostgresServer, pool: pg.Pool, items: readonly ProjectedCommand[], size: number, synchronousCommit: boolean): Promise<string> {
  const projector = new PgHistoryProjector(pool, { synchronousCommit });
  const take = size === 1 ? items.slice(0, SINGLE_LIMIT) : items;
  const events = take.reduce((n, c) => n + c.events.length, 0);
  const serverBefore = serverCpuUs(server);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < take.length; i += size) await projector.project(take.slice(i, i + size));
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const serverUs = serverCpuUs(server) - serverBefore;
  const n = take.length;
  return [
    String(size).padStart(5), (synchronousCommit ? 'on' : 'off').padStart(5), String(n).padStart(6), String(events).padStart(7),
    ((n / wallMs) * 1000).toFixed(0).padStart(9), ((events / wallMs) * 1000).toFixed(0).padStart(9),
    ((wallMs * 1000) / n).toFixed(1).padStart(10), ((used.user + used.system) / n).toFixed(1).padStart(12),
    (serverUs / n).toFixed(1).padStart(12),
  ].join(' ');
}

const server = await PostgresServer.start();
try {
  console.log(`history projection into PostgreSQL on loopback, node ${process.version}`);
  let db = 0;
  for (const [name, items] of mixes) {
    const events = items.reduce((n, c) => n + c.events.length, 0);
    console.log(`\n${name}: ${items.length} commands, ${events} events (${(events / items.length).toFixed(1)} per command)`);
    console.log('batch  sync  cmds  events   cmds/s  events/s  wall us/cmd  projector us  postgres us');
    for (const synchronousCommit of [true, false]) {
      for (const size of BATCHES) {
        const pool = await historyDatabase(server, `bench_${db++}`);
        try {
          console.log(await run(server, pool, items, size, synchronousCommit));
        } finally {
          await pool.end();
        }
      }
    }
  }
} finally {
  await server.destroy();
}
