/**
 * Durable order entry in the distributed mode, and what each process spends on it: the CPU time per
 * order of every gateway, the leader core, the standby, the projector, PostgreSQL (the postmaster
 * and all its backends) and nats-server, so that the capacity of the serial part (the leader, the
 * log's database) and the cost of the parts that scale out (gateways) are both known. On a 2-core
 * machine shared by every process the throughput says little; the CPU per order per role is the
 * figure (docs/performance.md, "Distributed mode").
 *
 * Three phases, each the same load after a warm-up:
 *   1. embedded: the single process (`ROLE=all`, SQLite) as `npm start` runs it (bench/shared/child-service.ts);
 *   2. a deployment (test/support/cluster.ts: PostgreSQL, NATS, a leader core and a standby, the
 *      history projector) with one gateway taking every order;
 *   3. the same deployment with a second gateway added, the clients split evenly over both.
 * The load: --clients connections (HTTP keep-alive), each looping over a post-only BTC-PERP limit
 * order of 0.001 far from the mark (index pushed at 100,000; buys at 80,000, sells at 120,000: they
 * rest, never fill) and its cancel, as --traders signed-in, funded accounts (order rate limits
 * lifted). An order is its place and its cancel: two durable commands, each acknowledged only once
 * durable (SQLite commit, or PostgreSQL commit and the gateway's replica applied it).
 * CPU time is utime + stime from /proc/<pid>/stat, read before the measured window and after the
 * clients stopped and every follower (standby, projector, gateways) applied the log's head. Before
 * each warm-up, --idle seconds without orders give each process's idle rate (clock ticks, chain
 * blocks, polls); "less idle" subtracts that rate over the window, for a busy shared machine.
 *
 * Run: node --import tsx bench/cluster/order-entry.ts [--duration 10 --warmup 3 --clients 32 --traders 8
 *        --idle 3 --phases embedded,one,two --json out.json]
 */
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Cluster, health } from '../../test/support/cluster.ts';
import { admin, call, freePort, fund, signIn, waitFor, type Trader } from '../../test/support/harness.ts';
import { startService } from '../shared/child-service.ts';
import { clusterProcesses, cpuSnapshot, loadAverage, MACHINE, quantileMs, sleep, watchMachine, watchNode, type WatchedProcess } from './processes.ts';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    clients: { type: 'string', default: '32' },
    idle: { type: 'string', default: '3' },
    traders: { type: 'string', default: '8' },
    phases: { type: 'string', default: 'embedded,one,two' },
    json: { type: 'string' },
  },
});
const DURATION_S = Number(args.duration);
const WARMUP_S = Number(args.warmup);
const CLIENTS = Number(args.clients);
const IDLE_S = Number(args.idle);
const TRADERS = Number(args.traders);
const PHASES = new Set(args.phases.split(','));

/** Every process gets these (the core's rules must match everywhere): push feed, order limits lifted. */
const VENUE_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '86400000',
  RATE_LIMIT_ORDERS: '1000000000',
  RATE_LIMIT_ACCOUNT: '1000000000',
  RATE_LIMIT_ANONYMOUS: '1000000000',
  // The simulated chain's blocks (40 ms in the test settings) cost every process a little CPU while
  // idle; slower blocks keep that background small beside the orders (funding still takes seconds).
  CHAIN_BLOCK_MS: '250',
};

const BUCKET_MS = 0.1;
const BUCKETS = 100_000;

// ---- the venue: traders signed in and funded, the index pushed ----

async function setUpTraders(url: string, count: number): Promise<Trader[]> {
  const index = await call(url, '/admin/index', { headers: admin, body: { underlying: 'BTC', price: '100000' } });
  if (index.status !== 200) throw new Error(`index failed: ${JSON.stringify(index.body)}`);
  return Promise.all(
    Array.from({ length: count }, async () => {
      const trader = await signIn(url);
      await fund(url, trader, '1000000', 60_000);
      const moved = await call(url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '1000000' } });
      if (moved.status !== 200) throw new Error(`transfer failed: ${JSON.stringify(moved.body)}`);
      return trader;
    }),
  );
}

// ---- the load: clients looping over place-then-cancel ----

interface Reply {
  readonly status: number;
  readonly text: string;
}

function post(agent: http.Agent, url: URL, path: string, token: string, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const req = http.request({ agent, host: url.hostname, port: url.port, method: 'POST', path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

class OrderLoad {
  readonly placeHist = new Array<number>(BUCKETS).fill(0);
  readonly cancelHist = new Array<number>(BUCKETS).fill(0);
  readonly failures: Record<string, number> = {};
  measuring = false;
  orders = 0;
  private stopped = false;
  private readonly running: Promise<void>[] = [];

  constructor(gateways: readonly string[], traders: readonly Trader[], clients: number) {
    const agents = gateways.map(() => new http.Agent({ keepAlive: true, maxSockets: Infinity }));
    for (let i = 0; i < clients; i++) {
      const g = i % gateways.length;
      this.running.push(this.client(agents[g]!, new URL(gateways[g]!), traders[i % traders.length]!, i));
    }
  }

  private async client(agent: http.Agent, url: URL, trader: Trader, n: number): Promise<void> {
    for (let k = n; !this.stopped; k++) {
      const counted = this.measuring;
      const buy = k % 2 === 0;
      const body = JSON.stringify({ marketId: 'BTC-PERP', side: buy ? 'buy' : 'sell', type: 'limit', price: buy ? '80000' : '120000', quantity: '0.001', postOnly: true });
      try {
        const placed = await this.timed(this.placeHist, counted, () => post(agent, url, '/perps/orders', trader.token, body));
        if (placed.status !== 201) {
          this.fail(`place ${placed.status} ${placed.text.slice(0, 120)}`);
          continue;
        }
        const id = (JSON.parse(placed.text) as { id: string }).id;
        const cancelled = await this.timed(this.cancelHist, counted, () => post(agent, url, `/perps/orders/${id}/cancel`, trader.token));
        if (cancelled.status !== 200) this.fail(`cancel ${cancelled.status} ${cancelled.text.slice(0, 120)}`);
        else if (counted) this.orders++;
      } catch (error) {
        this.fail(`error ${String(error).slice(0, 120)}`);
      }
    }
  }

  private async timed(hist: number[], counted: boolean, send: () => Promise<Reply>): Promise<Reply> {
    const started = performance.now();
    const reply = await send();
    if (counted) hist[Math.min(BUCKETS - 1, Math.floor((performance.now() - started) / BUCKET_MS))]!++;
    return reply;
  }

  private fail(key: string): void {
    this.failures[key] = (this.failures[key] ?? 0) + 1;
    if (this.failures[key] === 1) console.error(`  first failure: ${key}`);
  }

  /** Stops issuing orders; resolves once every client finished its current order (placed and cancelled). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }
}

// ---- one measured phase ----

interface PhaseResult {
  readonly phase: string;
  readonly gateways: number;
  readonly seconds: number;
  readonly orders: number;
  readonly ordersPerSecond: number;
  readonly commandsLogged: number;
  /** Commands per group commit of the command log over the window (PostgreSQL only): what the per-commit costs are shared by. */
  readonly commandsPerCommit: number | null;
  /**
   * PostgreSQL transactions per order, every client (log commits, followers' reads, history,
   * identity, budgets). Backends report their counts about once a second, so within ±10 %.
   */
  readonly postgresTransactionsPerOrder: number | null;
  readonly placeMs: { p50: number; p99: number };
  readonly cancelMs: { p50: number; p99: number };
  readonly failures: Record<string, number>;
  /** CPU microseconds per order (its place and its cancel), by process. */
  readonly cpuUsPerOrder: Record<string, number>;
  /** The same, less what the process spent at the rate it spent idle (no orders) just before. */
  readonly netCpuUsPerOrder: Record<string, number>;
  /** CPU milliseconds per second each process spent idle, measured over --idle seconds before the load. */
  readonly idleCpuMsPerSecond: Record<string, number>;
  readonly loadAverage: string;
  /** CPU milliseconds per second the whole machine was busy during the window (all cores; others' work included). */
  readonly machineBusyMsPerSecond: number;
}

interface PhaseTarget {
  readonly phase: string;
  readonly gateways: readonly string[];
  readonly traders: readonly Trader[];
  readonly watched: readonly WatchedProcess[];
  /** The log's head (the leader's applied seq, or the embedded journal's head). */
  head(): Promise<number>;
  /** Resolves once every follower applied `seq`. */
  caughtUp(seq: number): Promise<void>;
  /** How many group commits wrote the log's seqs in (from, to], where the log is PostgreSQL's. */
  commits?(from: number, to: number): Promise<number>;
  /** PostgreSQL's count of transactions so far, every database (pg_stat_database). */
  transactions?(): Promise<number>;
}

async function runPhase(t: PhaseTarget): Promise<PhaseResult> {
  console.error(`[${t.phase}] warm-up ${WARMUP_S} s, then ${DURATION_S} s measured; ${CLIENTS} clients over ${t.gateways.length} gateway(s)`);
  const bench = watchNode('load generator (this process)', process.pid);
  const watched = [...t.watched, bench, watchMachine()];
  const idleFrom = cpuSnapshot(watched);
  const idleStarted = performance.now();
  await sleep(IDLE_S * 1000);
  const idleTo = cpuSnapshot(watched);
  const idleSeconds = (performance.now() - idleStarted) / 1000;
  const idleRate = new Map(watched.map((w) => [w.name, (idleTo.get(w.name)! - idleFrom.get(w.name)!) / idleSeconds]));
  const load = new OrderLoad(t.gateways, t.traders, CLIENTS);
  await sleep(WARMUP_S * 1000);
  const seqBefore = await t.head();
  const transactionsBefore = await t.transactions?.();
  const before = cpuSnapshot(watched);
  const startedAt = performance.now();
  load.measuring = true;
  await sleep(DURATION_S * 1000);
  load.measuring = false;
  await load.stop();
  const seconds = (performance.now() - startedAt) / 1000;
  const loadAvg = loadAverage();
  const seqAfter = await t.head();
  await t.caughtUp(seqAfter);
  const after = cpuSnapshot(watched);
  const transactionsAfter = await t.transactions?.();
  const windowSeconds = (performance.now() - startedAt) / 1000;
  const cpuUsPerOrder: Record<string, number> = {};
  const netCpuUsPerOrder: Record<string, number> = {};
  const idleCpuMsPerSecond: Record<string, number> = {};
  for (const w of watched) {
    const used = after.get(w.name)! - before.get(w.name)!;
    cpuUsPerOrder[w.name] = +((used * 1e6) / load.orders).toFixed(1);
    netCpuUsPerOrder[w.name] = +(((used - idleRate.get(w.name)! * windowSeconds) * 1e6) / load.orders).toFixed(1);
    idleCpuMsPerSecond[w.name] = +(idleRate.get(w.name)! * 1000).toFixed(1);
  }
  // The machine's row is what every process on it spent (others' benches included), not a role's.
  const machineMsPerSecond = +(((after.get(MACHINE)! - before.get(MACHINE)!) * 1000) / windowSeconds).toFixed(0);
  for (const of of [cpuUsPerOrder, netCpuUsPerOrder, idleCpuMsPerSecond]) delete of[MACHINE];
  const gatewayNames = watched.map((w) => w.name).filter((n) => n.startsWith('gateway-'));
  if (gatewayNames.length > 1) {
    const sum = (of: Record<string, number>) => +gatewayNames.reduce((s, n) => s + of[n]!, 0).toFixed(1);
    cpuUsPerOrder['gateways (sum)'] = sum(cpuUsPerOrder);
    netCpuUsPerOrder['gateways (sum)'] = sum(netCpuUsPerOrder);
    idleCpuMsPerSecond['gateways (sum)'] = sum(idleCpuMsPerSecond);
  }
  const commits = t.commits === undefined ? null : await t.commits(seqBefore, seqAfter);
  return {
    phase: t.phase,
    gateways: t.gateways.length,
    seconds: +seconds.toFixed(2),
    orders: load.orders,
    ordersPerSecond: Math.round(load.orders / seconds),
    commandsLogged: seqAfter - seqBefore,
    commandsPerCommit: commits === null || commits === 0 ? null : +((seqAfter - seqBefore) / commits).toFixed(2),
    postgresTransactionsPerOrder:
      transactionsBefore === undefined || transactionsAfter === undefined ? null : +((transactionsAfter - transactionsBefore) / load.orders).toFixed(1),
    placeMs: { p50: quantileMs(load.placeHist, BUCKET_MS, 0.5), p99: quantileMs(load.placeHist, BUCKET_MS, 0.99) },
    cancelMs: { p50: quantileMs(load.cancelHist, BUCKET_MS, 0.5), p99: quantileMs(load.cancelHist, BUCKET_MS, 0.99) },
    failures: load.failures,
    cpuUsPerOrder,
    netCpuUsPerOrder,
    idleCpuMsPerSecond,
    loadAverage: loadAvg,
    machineBusyMsPerSecond: machineMsPerSecond,
  };
}

async function seqOf(url: string, field: 'appliedSeq' | 'journalSeq' | 'projectedSeq'): Promise<number> {
  const h = (await (await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) })).json()) as Record<string, number>;
  return h[field] ?? h.journalSeq ?? -1;
}

// ---- the phases ----

async function embeddedPhase(): Promise<PhaseResult> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'exchange-bench-embedded-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startService(dataDir, port, VENUE_ENV);
  try {
    const traders = await setUpTraders(url, TRADERS);
    return await runPhase({
      phase: 'embedded (ROLE=all)',
      gateways: [url],
      traders,
      watched: [watchNode('service (ROLE=all)', service.pid!)],
      head: () => seqOf(url, 'journalSeq'),
      caughtUp: async () => undefined,
    });
  } finally {
    service.kill('SIGTERM');
    await sleep(500);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function clusterTarget(cluster: Cluster, phase: string, traders: readonly Trader[], watched: readonly WatchedProcess[]): PhaseTarget {
  const leaderUrl = async () => (await cluster.leader())!.url;
  return {
    phase,
    gateways: cluster.gateways.map((g) => g.url),
    traders,
    watched,
    head: async () => seqOf(await leaderUrl(), 'appliedSeq'),
    caughtUp: (seq) =>
      waitFor(async () => {
        const followers = [...cluster.cores, ...cluster.gateways].map((p) => seqOf(p.url, 'appliedSeq'));
        followers.push(seqOf(cluster.projector!.url, 'projectedSeq'));
        return (await Promise.all(followers)).every((s) => s >= seq);
      }, 60_000, 50),
    // Each group commit is one transaction (docs/architecture.md), so its rows share an xmin.
    commits: (from, to) => queryCount(cluster, 'SELECT count(DISTINCT xmin::text) AS n FROM command_log WHERE seq > $1 AND seq <= $2', [from, to]),
    transactions: () => queryCount(cluster, 'SELECT sum(xact_commit + xact_rollback) AS n FROM pg_stat_database', []),
  };
}

async function queryCount(cluster: Cluster, sql: string, params: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: cluster.postgres.url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql, params)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function clusterPhases(): Promise<PhaseResult[]> {
  const results: PhaseResult[] = [];
  console.error('starting the deployment: PostgreSQL, NATS, leader core + standby, projector, one gateway');
  const cluster = await Cluster.start({ cores: 2, gateways: 1, env: VENUE_ENV });
  try {
    const traders = await setUpTraders(cluster.gateways[0]!.url, TRADERS);
    if (PHASES.has('one')) results.push(await runPhase(clusterTarget(cluster, 'cluster, 1 gateway', traders, await clusterProcesses(cluster))));
    if (PHASES.has('two')) {
      cluster.gateways.push(await cluster.role('gateway', 'gateway-1'));
      await waitFor(async () => (await health(cluster.gateways[1]!)).status === 'ok', 30_000, 50);
      results.push(await runPhase(clusterTarget(cluster, 'cluster, 2 gateways', traders, await clusterProcesses(cluster))));
    }
  } finally {
    await cluster.stop();
  }
  return results;
}

// ---- report ----

function printPhase(r: PhaseResult): void {
  console.log(
    `\n${r.phase}: ${r.ordersPerSecond} orders/s (${r.orders} in ${r.seconds} s; ${r.commandsLogged} commands logged` +
      (r.commandsPerCommit === null ? '' : `, ${r.commandsPerCommit} a group commit`) +
      (r.postgresTransactionsPerOrder === null ? '' : `, ${r.postgresTransactionsPerOrder} PostgreSQL transactions an order`) + '), ' +
      `place p50 ${r.placeMs.p50} ms p99 ${r.placeMs.p99} ms, cancel p50 ${r.cancelMs.p50} ms p99 ${r.cancelMs.p99} ms; ` +
      `load average ${r.loadAverage}, machine busy ${r.machineBusyMsPerSecond} of ${os.cpus().length * 1000} ms/s` + (Object.keys(r.failures).length > 0 ? `; failures ${JSON.stringify(r.failures)}` : ''),
  );
  console.log(`  ${'process'.padEnd(32)} ${'CPU µs/order'.padStart(12)} ${'less idle'.padStart(10)} ${'idle ms/s'.padStart(10)}`);
  for (const [name, us] of Object.entries(r.cpuUsPerOrder)) {
    console.log(`  ${name.padEnd(32)} ${us.toFixed(1).padStart(12)} ${r.netCpuUsPerOrder[name]!.toFixed(1).padStart(10)} ${r.idleCpuMsPerSecond[name]!.toFixed(1).padStart(10)}`);
  }
}

function summaryLine(results: readonly PhaseResult[]): string {
  return results
    .map((r) => {
      const cpu = r.cpuUsPerOrder;
      if (r.gateways === 1 && cpu['service (ROLE=all)'] !== undefined) return `embedded ${r.ordersPerSecond}/s, ${cpu['service (ROLE=all)']} µs/order`;
      const gateways = cpu['gateways (sum)'] ?? cpu['gateway-0'];
      return (
        `${r.gateways} gw ${r.ordersPerSecond}/s p99 ${r.placeMs.p99} ms: gateway${r.gateways > 1 ? 's' : ''} ${gateways}, ` +
        `core ${cpu['leader core']}, standby ${cpu['standby core']}, projector ${cpu.projector}, ` +
        `postgres ${cpu['postgres (all backends)']}, nats ${cpu['nats-server']} µs/order`
      );
    })
    .join(' | ');
}

async function main(): Promise<void> {
  console.error(`load average at start: ${loadAverage()}`);
  const results: PhaseResult[] = [];
  if (PHASES.has('embedded')) results.push(await embeddedPhase());
  if (PHASES.has('one') || PHASES.has('two')) results.push(...(await clusterPhases()));
  for (const r of results) printPhase(r);
  console.log(`\nSUMMARY order-entry (${CLIENTS} clients, ${DURATION_S} s, CPU per order = place + cancel): ${summaryLine(results)}`);
  const summary = {
    benchmark: 'durable order entry (post-only place + cancel), CPU per order per process',
    command: `node --import tsx bench/cluster/order-entry.ts ${process.argv.slice(2).join(' ')}`.trim(),
    node: process.version,
    cpus: `${os.cpus()[0]?.model} x${os.cpus().length}`,
    clients: CLIENTS,
    traders: TRADERS,
    results,
  };
  if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(summary, null, 2) + '\n');
}

await main();
