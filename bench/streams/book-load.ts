/**
 * The load shared by the book-stream benchmarks (bench/streams/book-stream.ts, embedded;
 * bench/cluster/fanout.ts, distributed): funded traders, the order driver that moves the BTC-PERP
 * book, and the pools of subscriber processes (book-stream.ts run with BENCH_ROLE=clients).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { call, fund, signIn, type Trader } from '../../test/support/harness.ts';

const CLIENTS_SCRIPT = fileURLToPath(new URL('./book-stream.ts', import.meta.url));

/** What one subscriber process measured: the delay histogram (1 ms buckets) and its counts. */
export interface ClientResult {
  readonly hist: number[];
  readonly samples: number;
  readonly bytes: number;
  readonly seqErrors: number;
  readonly closed: number;
}

/** Every subscriber process's counts added up. */
export function resultTotals(results: readonly ClientResult[]): { samples: number; bytes: number; seqErrors: number; closed: number } {
  const sum = (of: (r: ClientResult) => number) => results.reduce((s, r) => s + of(r), 0);
  return { samples: sum((r) => r.samples), bytes: sum((r) => r.bytes), seqErrors: sum((r) => r.seqErrors), closed: sum((r) => r.closed) };
}

/** A subscriber process and its report of how many of its subscribers connected. */
export interface SubscriberPool {
  readonly child: ChildProcess;
  readonly ready: Promise<{ ready: number; failed: number }>;
}

/** A subscriber process holding `count` subscribers to `path` on `url`. */
export function spawnSubscribers(url: string, path: string, count: number): SubscriberPool {
  const child = fork(CLIENTS_SCRIPT, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_ROLE: 'clients', BENCH_URL: url, BENCH_COUNT: `${count}`, BENCH_PATH: path },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise<{ ready: number; failed: number }>((resolve) => {
    child.on('message', (m: { type: string; ready: number; failed: number }) => {
      if (m.type === 'ready') resolve(m);
    });
  });
  return { child, ready };
}

/** Ends the pool's measured window and resolves with what it measured. */
export function collectSubscribers(pool: SubscriberPool): Promise<ClientResult> {
  return new Promise((resolve) => {
    pool.child.on('message', (m: { type: string; result: ClientResult }) => {
      if (m.type === 'result') resolve(m.result);
    });
    pool.child.send({ type: 'stop' });
  });
}

/** A signed-in trader with 10,000,000 USDC in its perps account (funding waits up to `fundMs`). */
export async function fundedTrader(url: string, fundMs: number): Promise<Trader> {
  const t = await signIn(url);
  await fund(url, t, '10000000', fundMs);
  const body = { from: 'wallet', to: 'perps', amount: '10000000' };
  const r = await call(url, '/wallet/transfer', { token: t.token, body });
  if (r.status !== 200) throw new Error(`transfer failed: ${JSON.stringify(r.body)}`);
  return t;
}

/** Resident memory of process `pid`, MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Math.round(Number(m[1]) / 1024);
}

/** What the driver did: actions sent, those that failed outright, and rejections by code. */
export interface DriveSummary {
  readonly actions: number;
  readonly errors: number;
  readonly rejected: Record<string, number>;
  readonly seconds: number;
}

/** The driver's figures as both benchmarks report them. */
export function driveFigures(drive: DriveSummary) {
  return {
    orderActionsPerSecond: Math.round(drive.actions / drive.seconds),
    orderActionFailures: drive.errors,
    /** Expected: cancels of orders the taker filled first, market orders meeting an empty side. */
    orderActionsRejected: drive.rejected,
  };
}

/** Places and cancels maker orders near the mid at `rate` per second; every 10th action trades. */
export function startDriver(url: string, maker: Trader, taker: Trader, rate: number): { stop: () => DriveSummary } {
  const resting: string[] = [];
  const rejected: Record<string, number> = {};
  let actions = 0;
  let errors = 0;
  let inFlight = 0;
  let stopped = false;
  const post = async (t: Trader, path: string, body?: unknown) => {
    const r = await call(url, path, { method: 'POST', token: t.token, body });
    if (r.status >= 300) {
      const key = `${r.status} ${(r.body as { error?: string }).error}`;
      rejected[key] = (rejected[key] ?? 0) + 1;
    }
    return r.body as { id?: string };
  };
  const act = async (n: number) => {
    if (n % 10 === 9) {
      const side = n % 20 === 9 ? 'buy' : 'sell';
      await post(taker, '/perps/orders', { marketId: 'BTC-PERP', side, quantity: '0.001', type: 'market' });
    } else if (resting.length > 80 || (n % 3 === 2 && resting.length > 0)) {
      const id = resting.splice(Math.floor(Math.random() * resting.length), 1)[0]!;
      await post(maker, `/perps/orders/${id}/cancel`);
    } else {
      const buy = Math.random() < 0.5;
      const offset = 1 + Math.floor(Math.random() * 40);
      const price = (buy ? 100_000 - offset * 0.5 : 100_000 + offset * 0.5).toFixed(1);
      const quantity = (0.001 * (1 + Math.floor(Math.random() * 5))).toFixed(3);
      const body = { marketId: 'BTC-PERP', side: buy ? 'buy' : 'sell', quantity, price, type: 'limit' };
      const placed = await post(maker, '/perps/orders', body);
      if (placed.id !== undefined) resting.push(placed.id);
    }
  };
  const started = Date.now();
  const timer = setInterval(() => {
    const due = Math.floor(((Date.now() - started) / 1000) * rate);
    while (!stopped && actions < due && inFlight < 32) {
      inFlight++;
      void act(actions++).catch(() => errors++).finally(() => inFlight--);
    }
  }, 5);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
      return { actions, errors, rejected, seconds: (Date.now() - started) / 1000 };
    },
  };
}
