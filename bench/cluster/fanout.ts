/**
 * Book-stream fan-out in the distributed mode: N subscribers to GET /perps/book-stream spread
 * evenly over two gateways, while a trader moves the BTC-PERP book at a steady rate through the
 * first gateway; the delay from each update's engineTs to its receipt, p50 and p99, and the CPU each
 * process spent per second. The embedded figure to compare with is bench/streams/book-stream.ts's
 * (docs/performance.md).
 *
 * The deployment is test/support/cluster.ts's (PostgreSQL, NATS, one leader core, the projector,
 * two gateways; no standby: it takes no part in fan-out and would only take CPU from a 2-core
 * machine), every gateway's stream caps raised above its share of subscribers (SSE_MAX_PER_IP to
 * it, SSE_MAX_CONNECTIONS to twice it so that the fair share past 80 % of the cap stays out of the
 * way; MAX_CONNECTIONS and MAX_CONNECTIONS_PER_IP follow them, src/config/env.ts).
 * The subscribers are bench/streams/book-stream.ts's client processes (raw HTTP/1.1 sockets,
 * chunked SSE parsed by hand, eventSeq checked per connection), --procs of them, half on each
 * gateway. engineTs is the leader's time when it sequenced the command that last changed the book,
 * so the delay holds the PostgreSQL commit, the producing gateway's replica reading and applying
 * the log, the wait for the group's next interval, the relay of the frame over NATS to each gateway
 * (docs/deploy.md "Streams across gateways"; the report names the producing gateway), the fan-out
 * and the client's own queueing.
 *
 * With --embedded, the same subscribers, driver and measures against the single process (ROLE=all,
 * SQLite) instead, so both figures come from the same moment of a shared machine (bench/streams/
 * book-stream.ts sets SSE_MAX_CONNECTIONS to N + 100, where the fair share refuses the last
 * subscribers of one address).
 *
 * Run: node --import tsx bench/cluster/fanout.ts [--embedded --subscribers 10000 --procs 4 --duration 10
 *        --warmup 3 --rate 200 --interval 100 --depth 25 --json out.json]
 * Exits 1 if more than 1 % of the subscribers fail to connect (fewer are reported and the rest
 * measured: a shared machine drops a few connects now and then), a connection is dropped, or an
 * eventSeq skips.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Cluster } from '../../test/support/cluster.ts';
import { admin, call, freePort } from '../../test/support/harness.ts';
import { startService } from '../shared/child-service.ts';
import { collectSubscribers, driveFigures, fundedTrader, resultTotals, rssMb, startDriver, type ClientResult, type DriveSummary, type SubscriberPool, spawnSubscribers } from '../streams/book-load.ts';
import { clusterProcesses, cpuSnapshot, loadAverage, MACHINE, quantileMs, sleep, watchMachine, watchNode, type WatchedProcess } from './processes.ts';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '10000' },
    procs: { type: 'string', default: '4' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rate: { type: 'string', default: '200' },
    interval: { type: 'string', default: '100' },
    depth: { type: 'string', default: '25' },
    embedded: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});

/** --embedded: the single process (ROLE=all) under the same subscribers and driver, for comparison. */
const EMBEDDED = args.embedded === true;
const GATEWAYS = EMBEDDED ? 1 : 2;

interface Pool extends SubscriberPool {
  readonly gateway: number;
}

interface Deployment {
  /** The gateways' URLs (the embedded service: its one URL). */
  readonly urls: readonly string[];
  watched(): Promise<WatchedProcess[]>;
  /** Resident memory of each gateway (or the service), MB. */
  rss(): Record<string, number>;
  /** The gateway producing every gateway's stream frames (docs/deploy.md), or null (embedded). */
  producer(): Promise<string | null>;
  stop(): Promise<void>;
}

/** The settings of every process: push feed, limits lifted, stream caps above `perGateway` subscribers. */
function streamEnv(perGateway: number): Record<string, string> {
  const big = '1000000000';
  return {
    FEED: 'push',
    INDEX_MAX_AGE_MS: '3600000',
    RATE_LIMIT_ANONYMOUS: big,
    RATE_LIMIT_ACCOUNT: big,
    RATE_LIMIT_ORDERS: big,
    // Twice the share: past 80 % of the cap the fair share (gateway/streams/admission.ts) refuses
    // an address holding many streams, and every subscriber here comes from 127.0.0.1.
    SSE_MAX_CONNECTIONS: String(2 * perGateway + 100),
    SSE_MAX_PER_IP: String(perGateway + 100),
    CHAIN_BLOCK_MS: '250',
  };
}

async function startCluster(perGateway: number): Promise<Deployment> {
  const cluster = await Cluster.start({ cores: 1, gateways: GATEWAYS, env: streamEnv(perGateway) });
  return {
    urls: cluster.gateways.map((g) => g.url),
    watched: () => clusterProcesses(cluster),
    rss: () => Object.fromEntries(cluster.gateways.map((g, i) => [`gateway-${i}`, rssMb(g.child!.pid!)])),
    producer: async () => {
      const g = await cluster.streamProducer();
      return g === null ? null : `gateway-${cluster.gateways.indexOf(g)}`;
    },
    stop: () => cluster.stop(),
  };
}

async function startEmbedded(subscribers: number): Promise<Deployment> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'exchange-bench-fanout-'));
  const port = await freePort();
  const service = await startService(dataDir, port, streamEnv(subscribers));
  return {
    urls: [`http://127.0.0.1:${port}`],
    watched: async () => [watchNode('gateway-0', service.pid!)],
    rss: () => ({ 'gateway-0': rssMb(service.pid!) }),
    producer: async () => null,
    stop: async () => {
      service.kill('SIGTERM');
      await sleep(500);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const n = Number(args.subscribers);
  const procs = Math.max(GATEWAYS, Number(args.procs));
  const path = `/perps/book-stream?marketId=BTC-PERP&depth=${args.depth}&intervalMs=${args.interval}`;
  const at = () => `[${process.uptime().toFixed(1)} s]`;
  console.error(`${at()} load average at start: ${loadAverage()}; starting ${EMBEDDED ? 'the embedded service' : `PostgreSQL, NATS, a leader core, the projector, ${GATEWAYS} gateways`}`);
  const deployment = EMBEDDED ? await startEmbedded(n) : await startCluster(Math.ceil(n / GATEWAYS));
  const pools: Pool[] = [];
  try {
    const urls = deployment.urls;
    const index = await call(urls[0]!, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
    if (index.status !== 200) throw new Error(`index: ${JSON.stringify(index.body)}`);
    const [maker, taker] = await Promise.all([fundedTrader(urls[0]!, 60_000), fundedTrader(urls[0]!, 60_000)]);
    console.error(`${at()} deployment up, traders funded; opening ${n} subscribers over ${GATEWAYS} gateway(s) in ${procs} client processes`);

    const openedAt = Date.now();
    for (let i = 0; i < procs; i++) {
      const count = Math.floor(n / procs) + (i < n % procs ? 1 : 0);
      pools.push({ gateway: i % GATEWAYS, ...spawnSubscribers(urls[i % GATEWAYS]!, path, count) });
    }
    const readiness = await Promise.all(pools.map((p) => p.ready));
    const connected = readiness.reduce((s, x) => s + x.ready, 0);
    const connectSeconds = (Date.now() - openedAt) / 1000;
    // A machine shared with other benchmarks drops a few of 10,000 connects now and then (client
    // processes starved for seconds); below 99 % the figure would not be the one asked for.
    if (connected < 0.99 * n) throw new Error(`${connected} of ${n} subscribers connected (${n - connected} failed)`);
    if (connected !== n) console.error(`${at()} ${n - connected} of ${n} subscribers failed to connect; measuring the ${connected} that did`);

    console.error(`${at()} ${n} subscribers connected in ${connectSeconds} s; driving orders through gateway-0`);
    const watched = [
      ...(await deployment.watched()),
      ...pools.map((p, i) => watchNode(`subscribers ${i} (gateway-${p.gateway})`, p.child.pid!)),
      watchNode('order driver (this process)', process.pid),
      watchMachine(),
    ];
    const driver = startDriver(urls[0]!, maker, taker, Number(args.rate));
    await sleep(Number(args.warmup) * 1000);
    const before = cpuSnapshot(watched);
    const startedAt = performance.now();
    for (const p of pools) p.child.send({ type: 'start' });
    await sleep(Number(args.duration) * 1000);
    const results = await Promise.all(pools.map(collectSubscribers));
    const after = cpuSnapshot(watched);
    const seconds = (performance.now() - startedAt) / 1000;
    const loadAvg = loadAverage();
    const drive = driver.stop();
    const cpuMsPerSecond = Object.fromEntries(watched.map((w) => [w.name, +(((after.get(w.name)! - before.get(w.name)!) * 1000) / seconds).toFixed(1)]));
    report({ n, connected, procs, path, connectSeconds, results, pools, drive, cpuMsPerSecond, rss: deployment.rss(), producer: await deployment.producer(), loadAvg });
  } finally {
    for (const p of pools) p.child.kill('SIGKILL');
    await deployment.stop();
  }
}

function report(r: {
  n: number;
  connected: number;
  procs: number;
  path: string;
  connectSeconds: number;
  results: ClientResult[];
  pools: Pool[];
  drive: DriveSummary;
  cpuMsPerSecond: Record<string, number>;
  rss: Record<string, number>;
  loadAvg: string;
  producer: string | null;
}): void {
  const seconds = Number(args.duration);
  const merge = (of: ClientResult[]) => {
    const hist = new Array<number>(of[0]!.hist.length).fill(0);
    for (const res of of) res.hist.forEach((c, ms) => (hist[ms]! += c));
    return { p50: quantileMs(hist, 1, 0.5), p90: quantileMs(hist, 1, 0.9), p99: quantileMs(hist, 1, 0.99), max: quantileMs(hist, 1, 1) };
  };
  const { samples, seqErrors, closed, bytes } = resultTotals(r.results);
  const byGateway = Object.fromEntries(
    Array.from({ length: GATEWAYS }, (_, g) => [`gateway-${g}`, merge(r.results.filter((_, i) => r.pools[i]!.gateway === g))]),
  );
  const summary = {
    benchmark: `GET /perps/book-stream fan-out ${EMBEDDED ? 'from the embedded service (ROLE=all)' : 'over two gateways'}: engineTs -> client receipt`,
    command: `node --import tsx bench/cluster/fanout.ts ${process.argv.slice(2).join(' ')}`.trim(),
    node: process.version,
    cpus: `${os.cpus()[0]?.model} x${os.cpus().length}`,
    subscribers: r.n,
    subscribersConnected: r.connected,
    gateways: GATEWAYS,
    clientProcesses: r.procs,
    stream: r.path,
    connectSeconds: r.connectSeconds,
    ...driveFigures(r.drive),
    updatesReceived: samples,
    updatesPerSubscriberPerSecond: Number((samples / r.connected / seconds).toFixed(2)),
    deliveredMBPerSecond: Number((bytes / seconds / 1e6).toFixed(2)),
    delayMs: merge(r.results),
    delayMsByGateway: byGateway,
    seqErrors,
    connectionsClosed: closed,
    /** CPU milliseconds per second of the measured window (1000 = one whole core; the machine has os.cpus().length). */
    cpuMsPerSecond: r.cpuMsPerSecond,
    gatewayRssMb: r.rss,
    /** The gateway that made the frames of both (the distributed mode's stream producer). */
    streamProducer: r.producer,
    loadAverage: r.loadAvg,
  };
  console.log(JSON.stringify(summary, null, 2));
  const cpu = r.cpuMsPerSecond;
  console.log(
    `\nSUMMARY fanout${EMBEDDED ? ' (embedded)' : ''}: ${r.connected} of ${r.n} subscribers over ${GATEWAYS} gateway(s) (${r.procs} client processes), ` +
      `${summary.orderActionsPerSecond} order actions/s, ${summary.updatesPerSubscriberPerSecond} updates/s each; ` +
      `engineTs -> receipt p50 ${summary.delayMs.p50} ms, p99 ${summary.delayMs.p99} ms, max ${summary.delayMs.max} ms; ` +
      `CPU ms/s ${['gateway-0', 'gateway-1', 'leader core', MACHINE].filter((k) => cpu[k] !== undefined).map((k) => `${k} ${cpu[k]}`).join(', ')}; ` +
      `seq errors ${seqErrors}, dropped ${closed}; ${r.producer === null ? '' : `stream producer ${r.producer}; `}load average ${r.loadAvg}`,
  );
  if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(summary, null, 2) + '\n');
  if (seqErrors > 0 || closed > 0 || samples === 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
