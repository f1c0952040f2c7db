/**
 * Benchmark of GET /perps/book-stream fan-out: the delay from the engine time of a book change
 * (`engineTs` in the envelope: when the command that moved the book was applied) to its receipt by
 * each of N concurrent subscribers, while orders flow at a steady rate.
 *
 * Starts the service as a child process (`node --import tsx src/main.ts`, temporary DATA_DIR, push
 * feed, stream caps raised to N), signs in two traders with SIWE and funds them through the
 * simulated chain, then opens N subscribers from separate client processes (raw HTTP/1.1 over
 * loopback, parsing the chunked SSE frames by hand; EventSource objects would not hold 10,000)
 * spread over --procs processes. A driver places and cancels maker orders around the mid at
 * --rate actions per second and crosses the book now and then, so every interval carries changes.
 * After a warm-up, every `update` frame received in the measured window yields one sample
 * (receipt time minus engineTs, 1 ms resolution); eventSeq is checked to increase by exactly one
 * per connection. engineTs is the latest change in a coalesced frame, so the delay includes the
 * journal commit, the wait for the group's next tick (up to --interval), the fan-out and the
 * client's own queueing.
 *
 * Run: node --import tsx bench/streams/book-stream.ts --subscribers 1000
 *   options: --duration 10 --warmup 3 --rate 200 --interval 100 --depth 25 --procs <auto> --json out.json
 * Not a test: exits 1 if subscribers fail to connect, a connection is dropped, or eventSeq skips.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { admin, call, freePort } from '../../test/support/harness.ts';
import { startService } from '../shared/child-service.ts';
import { collectSubscribers, driveFigures, fundedTrader, resultTotals, rssMb, startDriver, type ClientResult, type DriveSummary, type SubscriberPool, spawnSubscribers } from './book-load.ts';

const HIST_MS = 30_000;

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rate: { type: 'string', default: '200' },
    interval: { type: 'string', default: '100' },
    depth: { type: 'string', default: '25' },
    procs: { type: 'string' },
    json: { type: 'string' },
  },
});

// ---- client processes: hold subscribers, parse frames, keep a delay histogram ----

interface ClientState {
  hist: number[];
  measuring: boolean;
  samples: number;
  bytes: number;
  seqErrors: number;
  closed: number;
}

/** One raw subscriber; resolves true once its snapshot arrived, false if refused or closed first. */
function subscribe(url: URL, path: string, state: ClientState): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.setEncoding('latin1');
    let carry = '';
    let lastSeq = -1;
    let snapshot = false;
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`));
    socket.on('data', (text: string) => {
      const now = Date.now();
      if (!snapshot && carry === '' && !text.startsWith('HTTP/1.1 200')) {
        socket.destroy();
        return;
      }
      if (state.measuring) state.bytes += text.length;
      carry += text;
      for (let end = carry.indexOf('\n\n'); end >= 0; end = carry.indexOf('\n\n')) {
        const frame = carry.slice(0, end);
        carry = carry.slice(end + 2);
        const idAt = frame.indexOf('\nid: ');
        if (idAt < 0) continue;
        const seq = Number(frame.slice(idAt + 5, frame.indexOf('\n', idAt + 1)));
        if (!snapshot) {
          snapshot = true;
          resolve(true);
        } else if (seq !== lastSeq + 1) state.seqErrors++;
        lastSeq = seq;
        if (!state.measuring || !frame.includes('event: update')) continue;
        const at = frame.indexOf('"engineTs":') + 11;
        const delay = now - Number(frame.slice(at, frame.indexOf(',', at)));
        state.hist[Math.min(HIST_MS, Math.max(0, delay))]!++;
        state.samples++;
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (snapshot) state.closed++;
      else resolve(false);
    });
  });
}

function runClients(): void {
  const url = new URL(process.env.BENCH_URL!);
  const count = Number(process.env.BENCH_COUNT);
  const path = process.env.BENCH_PATH!;
  const state: ClientState = {
    hist: new Array<number>(HIST_MS + 1).fill(0),
    measuring: false,
    samples: 0,
    bytes: 0,
    seqErrors: 0,
    closed: 0,
  };
  void (async () => {
    let ready = 0;
    const pending = new Set<Promise<void>>();
    for (let i = 0; i < count; i++) {
      const p: Promise<void> = subscribe(url, path, state).then((ok) => {
        if (ok) ready++;
        pending.delete(p);
      });
      pending.add(p);
      if (pending.size >= 200) await Promise.race(pending);
    }
    await Promise.all(pending);
    process.send!({ type: 'ready', ready, failed: count - ready });
  })();
  process.on('message', (m: { type: string }) => {
    if (m.type === 'start') {
      state.hist = new Array<number>(HIST_MS + 1).fill(0);
      Object.assign(state, { samples: 0, bytes: 0, measuring: true });
    } else if (m.type === 'stop') {
      state.measuring = false;
      const { measuring: _m, ...result } = state;
      process.send!({ type: 'result', result }, () => process.exit(0));
    }
  });
}

// ---- the service, the traders and the order driver ----

/** The service with the stream benchmark's settings: push feed, limits raised for N subscribers. */
function startStreamService(dataDir: string, port: number, subscribers: number): Promise<ChildProcess> {
  const big = String(1_000_000_000);
  return startService(dataDir, port, {
    FEED: 'push',
    INDEX_MAX_AGE_MS: '3600000',
    RATE_LIMIT_ANONYMOUS: big,
    RATE_LIMIT_ACCOUNT: big,
    RATE_LIMIT_ORDERS: big,
    SSE_MAX_CONNECTIONS: String(subscribers + 100),
    SSE_MAX_PER_IP: String(subscribers + 100),
  });
}

function percentile(hist: readonly number[], total: number, p: number): number {
  const target = Math.ceil(total * p);
  let seen = 0;
  for (let ms = 0; ms < hist.length; ms++) {
    seen += hist[ms]!;
    if (seen >= target) return ms;
  }
  return hist.length - 1;
}

async function main(): Promise<void> {
  const n = Number(args.subscribers);
  const procs = Number(args.procs ?? Math.min(4, Math.max(1, Math.ceil(n / 2500))));
  const path = `/perps/book-stream?marketId=BTC-PERP&depth=${args.depth}&intervalMs=${args.interval}`;
  const dataDir = mkdtempSync(join(os.tmpdir(), 'exchange-bench-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let service: ChildProcess | null = null;
  const pools: SubscriberPool[] = [];
  try {
    service = await startStreamService(dataDir, port, n);
    const index = { underlying: 'BTC', price: '100000' };
    const r = await call(url, '/admin/index', { body: index, headers: admin });
    if (r.status !== 200) throw new Error(`index: ${JSON.stringify(r.body)}`);
    const [maker, taker] = await Promise.all([fundedTrader(url, 15_000), fundedTrader(url, 15_000)]);
    const at = () => `[${process.uptime().toFixed(1)} s]`;
    console.error(`${at()} service up, traders funded; opening ${n} subscribers in ${procs} process(es)`);

    const openedAt = Date.now();
    for (let i = 0; i < procs; i++) {
      pools.push(spawnSubscribers(url, path, Math.floor(n / procs) + (i < n % procs ? 1 : 0)));
    }
    const readiness = await Promise.all(pools.map((p) => p.ready));
    const connected = readiness.reduce((s, x) => s + x.ready, 0);
    const failed = readiness.reduce((s, x) => s + x.failed, 0);
    const connectSeconds = (Date.now() - openedAt) / 1000;
    if (connected !== n) throw new Error(`${connected} of ${n} subscribers connected (${failed} failed)`);

    console.error(`${at()} ${n} subscribers connected in ${connectSeconds} s; driving orders`);
    const driver = startDriver(url, maker, taker, Number(args.rate));
    await new Promise((res) => setTimeout(res, Number(args.warmup) * 1000));
    for (const p of pools) p.child.send({ type: 'start' });
    await new Promise((res) => setTimeout(res, Number(args.duration) * 1000));
    const serverRss = rssMb(service.pid!);
    const results = await Promise.all(pools.map(collectSubscribers));
    const drive = driver.stop();
    report({ n, procs, path, connectSeconds, serverRss, results, drive });
  } finally {
    for (const p of pools) p.child.kill('SIGKILL');
    service?.kill('SIGTERM');
    await new Promise((res) => setTimeout(res, 500));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function report(r: {
  n: number;
  procs: number;
  path: string;
  connectSeconds: number;
  serverRss: number;
  results: ClientResult[];
  drive: DriveSummary;
}): void {
  const hist = new Array<number>(HIST_MS + 1).fill(0);
  for (const res of r.results) res.hist.forEach((c, ms) => (hist[ms]! += c));
  const { samples, seqErrors, closed, bytes } = resultTotals(r.results);
  const seconds = Number(args.duration);
  const summary = {
    benchmark: 'GET /perps/book-stream fan-out: engineTs -> client receipt',
    command: `node --import tsx bench/streams/book-stream.ts ${process.argv.slice(2).join(' ')}`.trim(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    subscribers: r.n,
    clientProcesses: r.procs,
    stream: r.path,
    connectSeconds: r.connectSeconds,
    ...driveFigures(r.drive),
    updatesReceived: samples,
    updatesPerSubscriberPerSecond: Number((samples / r.n / seconds).toFixed(2)),
    deliveredMBPerSecond: Number((bytes / seconds / 1e6).toFixed(2)),
    delayMs: {
      p50: percentile(hist, samples, 0.5),
      p90: percentile(hist, samples, 0.9),
      p99: percentile(hist, samples, 0.99),
      max: percentile(hist, samples, 1),
    },
    seqErrors,
    connectionsClosed: closed,
    serverRssMb: r.serverRss,
  };
  console.log(JSON.stringify(summary, null, 2));
  console.log(
    `book-stream: ${r.n} subscribers (${r.procs} client processes), ${summary.orderActionsPerSecond} order ` +
      `actions/s, ${summary.updatesPerSubscriberPerSecond} updates/s each; engineTs -> receipt p50 ` +
      `${summary.delayMs.p50} ms, p99 ${summary.delayMs.p99} ms, max ${summary.delayMs.max} ms; ` +
      `seq errors ${seqErrors}, dropped ${closed}; server RSS ${r.serverRss} MB`,
  );
  if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(summary, null, 2) + '\n');
  if (seqErrors > 0 || closed > 0 || samples === 0) process.exitCode = 1;
}

if (process.env.BENCH_ROLE === 'clients') {
  runClients();
} else {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
