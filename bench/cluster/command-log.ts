/**
 * What a durable append to the distributed mode's command log costs (src/adapters/postgres/
 * command-log.ts): group commits of real commands (filled IOC orders, bench/store/filled-orders.ts,
 * each with a command id as a gateway gives it) into a temporary PostgreSQL server on loopback
 * with its default durability (fsync on, synchronous_commit on: each commit waits for its WAL
 * flush), by batch size and by batches in flight (the sequencer's JOURNAL_MAX_IN_FLIGHT; batches
 * queued behind a commit share the next one).
 *
 * Per row: appends/s and commands/s, PostgreSQL transactions per second, the latency of an
 * append (from append() to its resolution: what an acknowledgement waits for) p50 / p99, and the
 * writer's CPU time per command in this process (encoding, chaining, the pg driver).
 *
 * Run: node --import tsx bench/cluster/command-log.ts [--seconds 3 --in-flight 1,4 --batches 1,16,128]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PgCommandLog } from '../../src/adapters/postgres/command-log.ts';
import { migratePostgres } from '../../src/adapters/postgres/database.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { PostgresServer } from '../../test/support/postgres.ts';
import { filledOrders } from '../store/filled-orders.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    'in-flight': { type: 'string', default: '1,4' },
    batches: { type: 'string', default: '1,16,128' },
  },
});
const SECONDS = Number(args.seconds);
const IN_FLIGHT = args['in-flight'].split(',').map(Number);
const BATCH_SIZES = args.batches.split(',').map(Number);

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const commands = filledOrders(4096).map((c) => ({ ...c, events: [] }));
let next = 0;
/** `size` commands, each with a fresh command id. */
function batchOf(size: number): CommittedCommand[] {
  return Array.from({ length: size }, () => ({ ...commands[next++ % commands.length]!, commandId: randomUUID() }));
}

async function reset(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('TRUNCATE command_log');
  await client.query('UPDATE core_leader SET epoch = 1 WHERE id = 1');
  await client.end();
}

interface Row {
  readonly appends: number;
  readonly latencies: number[];
  readonly transactions: number;
  readonly cpuUs: number;
  readonly seconds: number;
}

/** `inFlight` loops appending batches of `size` for SECONDS, each waiting for its append. */
async function run(url: string, size: number, inFlight: number): Promise<Row> {
  await reset(url);
  const log = await PgCommandLog.lead(url, 1, { maxCoalesced: 64 });
  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const loop = async () => {
    while (performance.now() < deadline) {
      const batch = batchOf(size);
      const sent = performance.now();
      await log.append(batch);
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const row = { appends: latencies.length, latencies: latencies.sort((a, b) => a - b), transactions: log.transactions, cpuUs: used.user + used.system, seconds };
  await log.close();
  return row;
}

const server = await PostgresServer.start();
try {
  await migratePostgres(server.url);
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
  await client.end();
  console.log(`command log append: PostgreSQL ${version} on loopback (fsync on, synchronous_commit on), ${SECONDS} s per row, node ${process.version}`);
  console.log('batch  in flight   appends/s  commands/s    commits/s   p50 ms   p99 ms   cpu us/cmd');
  for (const size of BATCH_SIZES) {
    for (const inFlight of IN_FLIGHT) {
      const r = await run(server.url, size, inFlight);
      const cmds = r.appends * size;
      console.log([
        String(size).padStart(5), String(inFlight).padStart(10),
        (r.appends / r.seconds).toFixed(0).padStart(11), (cmds / r.seconds).toFixed(0).padStart(11),
        (r.transactions / r.seconds).toFixed(0).padStart(12),
        percentile(r.latencies, 0.5).toFixed(2).padStart(8), percentile(r.latencies, 0.99).toFixed(2).padStart(8),
        (r.cpuUs / cmds).toFixed(1).padStart(12),
      ].join(' '));
    }
  }
} finally {
  await server.destroy();
}
process.exit(0);
