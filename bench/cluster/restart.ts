/**
 * What a snapshot saves a restarting gateway (docs/architecture.md "Distributed mode: snapshots"):
 * a command log of `--commands` order-entry commands (deposits and transfers of `--traders`
 * accounts, then resting perp limit orders with cancels, the feed's prices and clock ticks, as a
 * venue's day looks) is written into a real PostgreSQL, then a ROLE=gateway process (`npm start`'s
 * entry, real NATS) is started on it, each time on a fresh folder:
 *   - with no snapshot (the whole log replayed),
 *   - with a snapshot `--behind` commands before the head (a snapshot every 2 x behind commands
 *     leaves half that on average),
 *   - with a snapshot at the head;
 *   - with no snapshot again, after the log before the snapshot behind was archived
 *     (command-log-archive.ts): the replay reads the archived segments, then the table. The
 *     archive's time and its bytes a command, against the table's, are printed.
 * Reported: the process's time from spawn to /health 200 (which includes loading the code), and
 * the replica's own figures from its start log line (restore ms, commands replayed, ms).
 *
 * Run: node --import tsx bench/cluster/restart.ts [--commands 100000 --traders 2000 --behind 10000 --runs 2]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { archiveCommandLog } from '../../src/adapters/postgres/command-log-archive.ts';
import { PgCommandLog } from '../../src/adapters/postgres/command-log.ts';
import { migratePostgres } from '../../src/adapters/postgres/database.ts';
import { PgSnapshotStore } from '../../src/adapters/postgres/snapshot-store.ts';
import { stateImage } from '../../src/adapters/store/snapshot-store.ts';
import { coreConfig, coreSettings } from '../../src/config/core.ts';
import { loadSettings } from '../../src/config/env.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { PLAIN_ORDER } from '../../src/core/linear/order.ts';
import { fromFloat, fx } from '../../src/core/money.ts';
import { mulberry32 } from '../../src/adapters/feed/price-model.ts';
import { freePort, testServiceEnv, waitFor } from '../../test/support/harness.ts';
import { NatsServer } from '../../test/support/nats.ts';
import { PostgresServer } from '../../test/support/postgres.ts';

const { values: args } = parseArgs({
  options: {
    commands: { type: 'string', default: '100000' },
    traders: { type: 'string', default: '2000' },
    behind: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '2' },
  },
});
const COMMANDS = Number(args.commands);
const TRADERS = Number(args.traders);
const BEHIND = Number(args.behind);
const RUNS = Number(args.runs);

interface Logged {
  readonly command: Command;
  readonly ts: number;
}

const ROLE_ENV = { DEPOSIT_CONFIRMATIONS: '1', LOG_LEVEL: 'info', MARKET_MAKER: 'off' };
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const COST = new Map<string, number>();
/** Commands between two price observations of each underlying, venue ms between clock ticks, resting orders at most. */
const FEED_EVERY = 500;
const TICK_MS = 10_000;
const MAX_OPEN = 5_000;
const config = coreConfig(coreSettings(loadSettings({ ...process.env, ...testServiceEnv(tmpdir(), 0), ...ROLE_ENV })));

/** The venue's commands, each accepted by a core built like the gateway's (rejections are dropped, as a leader never logs them). */
function generate(): { log: Logged[]; exchange: Exchange } {
  const ex = new Exchange(config);
  const rand = mulberry32(31);
  const log: Logged[] = [];
  let now = Date.UTC(2026, 10, 27, 6, 0, 0);
  const spot = { BTC: 97_000, ETH: 3_500 };
  const run = (command: Command): unknown => {
    const started = performance.now();
    const outcome = ex.execute(command, now);
    COST.set(command.type, (COST.get(command.type) ?? 0) + performance.now() - started);
    if (!outcome.ok) return undefined;
    log.push({ command, ts: now });
    return outcome.result;
  };
  const feed = () => {
    for (const u of ['BTC', 'ETH'] as const) {
      spot[u] *= 1 + (rand() - 0.5) * 0.001;
      run({ type: 'prices.observe', underlying: u, observations: ['a', 'b', 'c'].map((source) => ({ source, price: fromFloat(spot[u], 2, 'halfUp')!, ts: now })) });
    }
  };
  const trader = (i: number) => `0x${(0x10000 + i).toString(16).padStart(40, '0')}`;
  feed();
  run({ type: 'clock.tick' });
  for (let i = 0; i < TRADERS; i++) {
    run({ type: 'chain.deposit_observed', txHash: `0x${(i + 1).toString(16).padStart(64, '0')}`, account: trader(i), amount: fx('100000'), confirmations: 1 });
    run({ type: 'wallet.transfer', account: trader(i), from: 'wallet', to: 'perps', amount: fx('50000'), clientId: null });
  }
  const open: { account: string; orderId: number }[] = [];
  let lastTick = now;
  while (log.length < COMMANDS) {
    now += 20;
    if (log.length % FEED_EVERY === 0) feed();
    if (now - lastTick >= TICK_MS) {
      run({ type: 'clock.tick' });
      lastTick = now;
    }
    const account = trader(Math.floor(rand() * TRADERS));
    if (open.length > 0 && (rand() < 0.4 || open.length > MAX_OPEN)) {
      const at = Math.floor(rand() * open.length);
      const order = open[at]!;
      open[at] = open[open.length - 1]!;
      open.pop();
      run({ type: 'perp.cancel', account: order.account, orderId: order.orderId });
      continue;
    }
    const marketId = rand() < 0.6 ? 'BTC-PERP' : 'ETH-PERP';
    const side = rand() < 0.5 ? 0 as const : 1 as const;
    const away = 0.002 + rand() * 0.03;
    const base = spot[marketId === 'BTC-PERP' ? 'BTC' : 'ETH'];
    const price = fromFloat(base * (side === 0 ? 1 - away : 1 + away), 1, 'halfUp')!;
    const placed = run({
      type: 'perp.place', account, request: {
        marketId, side, type: 'limit', quantity: fx(marketId === 'BTC-PERP' ? '0.001' : '0.01'), price,
        timeInForce: 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER,
      },
    }) as { order: { id: string; status: string } } | undefined;
    if (placed?.order.status === 'open') open.push({ account, orderId: Number(placed.order.id) });
  }
  console.log('core ms by command type while generating:', Object.fromEntries([...COST].map(([k, v]) => [k, Math.round(v)])));
  return { log, exchange: ex };
}

async function writeLog(url: string, log: readonly Logged[]): Promise<void> {
  const db = new pg.Client(url);
  await db.connect();
  await db.query('UPDATE core_leader SET epoch = 1 WHERE id = 1');
  await db.end();
  const writer = await PgCommandLog.lead(url, 1, { maxCoalesced: 64 });
  for (let i = 0; i < log.length; i += 2_000) {
    await writer.append(log.slice(i, i + 2_000).map((c, j) => ({ commandId: `bench-${i + j}`, ts: c.ts, command: c.command, events: [] })));
  }
  await writer.close();
}

interface Start {
  readonly wallMs: number;
  readonly restoreMs: number;
  readonly replayed: number;
  readonly replicaMs: number;
  readonly snapshotSeq: number | null;
}

async function startGateway(postgres: PostgresServer, nats: NatsServer, root: string): Promise<Start> {
  const dir = mkdtempSync(join(root, 'gateway-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...testServiceEnv(dir, port), ROLE: 'gateway', NATS_URL: nats.url, DATABASE_URL: postgres.url, SIMULATED_CHAIN_FILE: join(root, 'chain.sqlite'), ...ROLE_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    // A full replay can take minutes: wait longer than ServiceProcess does.
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`the gateway exited:\n${output.slice(-2000)}`);
      return (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200;
    }, 900_000, 50);
    const wallMs = Math.round(performance.now() - started);
    await waitFor(() => output.includes('caught up with the command log'), 10_000, 20);
    const line = output.split('\n').find((l) => l.includes('caught up with the command log'));
    if (line === undefined) throw new Error(`no start line:\n${output.slice(-2000)}`);
    const figures = JSON.parse(line) as { restoreMs: number; replayed: number; ms: number; snapshotSeq: number | null };
    return { wallMs, restoreMs: figures.restoreMs, replayed: figures.replayed, replicaMs: figures.ms, snapshotSeq: figures.snapshotSeq };
  } finally {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
}

async function measure(label: string, postgres: PostgresServer, nats: NatsServer, root: string): Promise<void> {
  const starts: Start[] = [];
  for (let i = 0; i < RUNS; i++) starts.push(await startGateway(postgres, nats, root));
  const best = starts.reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
  console.log(`${label.padEnd(34)} spawn→/health 200 ${String(best.wallMs).padStart(6)} ms | restore ${String(best.restoreMs).padStart(5)} ms, replayed ${String(best.replayed).padStart(7)} commands in ${String(best.replicaMs).padStart(6)} ms (best of ${RUNS}: ${starts.map((s) => s.wallMs).join(', ')} ms)`);
}

async function main(): Promise<void> {
  let t = performance.now();
  const { log, exchange } = generate();
  console.log(`generated ${log.length} accepted commands in ${Math.round(performance.now() - t)} ms (${TRADERS} traders, ${exchange.linear.markets.size} perp markets)`);
  const [postgres, nats] = await Promise.all([PostgresServer.start(), NatsServer.start()]);
  const root = mkdtempSync(join(tmpdir(), 'bench-restart-'));
  const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
  try {
    await migratePostgres(postgres.url);
    t = performance.now();
    await writeLog(postgres.url, log);
    console.log(`command log written: ${log.length} rows in ${Math.round(performance.now() - t)} ms`);
    const linkAt = async (seq: number) => Number((await pool.query<{ chain: string }>('SELECT chain FROM command_log WHERE seq = $1', [seq])).rows[0]!.chain);
    const store = new PgSnapshotStore(pool);
    const fresh = () => new Exchange(config);

    await measure('no snapshot (full replay)', postgres, nats, root);

    const behind = fresh();
    const cut = Math.max(0, log.length - BEHIND);
    for (const c of log.slice(0, cut)) behind.execute(c.command, c.ts);
    await store.write(cut, behind.now(), await linkAt(cut), stateImage(behind, fresh), 3);
    await measure(`snapshot ${BEHIND} commands behind`, postgres, nats, root);

    t = performance.now();
    const image = stateImage(exchange, fresh);
    const encodeMs = performance.now() - t;
    t = performance.now();
    const header = await store.write(log.length, exchange.now(), await linkAt(log.length), image, 3);
    console.log(`snapshot at the head: image ${(image.length / 1e6).toFixed(1)} MB, stored ${((header?.bodyBytes ?? 0) / 1e6).toFixed(1)} MB gzipped; encode ${Math.round(encodeMs)} ms, compress + write ${Math.round(performance.now() - t)} ms`);
    await measure('snapshot at the head', postgres, nats, root);

    // The archive (command-log-archive.ts): what the snapshot behind covers leaves command_log.
    const tableBytes = Number((await pool.query<{ n: string }>("SELECT pg_total_relation_size('command_log') AS n")).rows[0]!.n);
    t = performance.now();
    const archive = await archiveCommandLog(pool, cut, Number.MAX_SAFE_INTEGER);
    const archiveMs = performance.now() - t;
    const segmentBytes = Number((await pool.query<{ n: string }>('SELECT sum(length(segment)) AS n FROM command_log_segments')).rows[0]!.n);
    console.log(`archive: ${archive.archived} commands into ${archive.segments.length} segments in ${Math.round(archiveMs)} ms; command_log held ${(tableBytes / log.length).toFixed(0)} B a command (rows and indexes), the segments ${(segmentBytes / archive.archived).toFixed(1)} B`);
    await pool.query('DELETE FROM core_snapshots');
    await measure('no snapshot, through the archive', postgres, nats, root);
  } finally {
    await pool.end();
    await Promise.all([postgres.destroy(), nats.destroy()]);
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
