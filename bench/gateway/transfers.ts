/**
 * Gateway benchmark of durable bucket transfers: how many POST /wallet/transfer the whole service
 * acknowledges per second, each one written to the SQLite journal (group commit, synchronous=FULL)
 * before its 200. Starts the service as a child process (`node --import tsx src/main.ts`) on a
 * temporary DATA_DIR and a free loopback port, signs in with SIWE (viem key), funds the accounts
 * through the simulated chain, then drives autocannon (programmatic API): a warm-up, then the
 * measured run. Every connection alternates wallet->perps and perps->wallet of the same amount,
 * so each request is a real, accepted transfer (a 400 would show up as non-2xx). The account rate
 * limit is raised via RATE_LIMIT_ACCOUNT so the limiter does not cap the figure.
 *
 * Reports: durable transfers acknowledged per second (2xx / measured seconds), latency p50/p99,
 * non-2xx and connection errors, and the journal records appended during the measured run
 * (GET /health journalSeq before/after; equal to the 2xx count when nothing else was committed).
 *
 * Run: node --import tsx bench/gateway/transfers.ts
 *   options: --connections 50 --duration 10 --warmup 3 --accounts 1 --json out.json
 * Not a test: exits 1 if the service fails or the journal does not account for every 2xx.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { call, freePort, fund, signIn, type Trader } from '../../test/support/harness.ts';
import { startService } from '../shared/child-service.ts';

const { values: args } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    accounts: { type: 'string', default: '1' },
    json: { type: 'string' },
  },
});
const CONNECTIONS = Number(args.connections);
const DURATION_S = Number(args.duration);
const WARMUP_S = Number(args.warmup);
const ACCOUNTS = Number(args.accounts);

async function journalSeq(url: string): Promise<number> {
  const r = await call(url, '/health');
  return r.body.journalSeq as number;
}

function run(url: string, traders: readonly Trader[], seconds: number): Promise<Result> {
  // autocannon cycles each connection through `requests`; one account per request pair
  const requests = traders.flatMap((t) => {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${t.token}` };
    const body = (from: string, to: string) => JSON.stringify({ from, to, amount: '1.5' });
    return [
      { method: 'POST', path: '/wallet/transfer', headers, body: body('wallet', 'perps') },
      { method: 'POST', path: '/wallet/transfer', headers, body: body('perps', 'wallet') },
    ];
  });
  const options = { url, connections: CONNECTIONS, duration: seconds, pipelining: 1, timeout: 10, requests };
  return Promise.resolve(autocannon(options));
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'exchange-bench-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  try {
    child = await startService(dataDir, port, { RATE_LIMIT_ACCOUNT: '1000000000' });
    const traders: Trader[] = [];
    for (let i = 0; i < ACCOUNTS; i++) traders.push(await signIn(url));
    await Promise.all(traders.map((t) => fund(url, t, '1000000', 15_000)));
    await new Promise((r) => setTimeout(r, 200)); // let the chain watcher settle the deposits

    if (WARMUP_S > 0) await run(url, traders, WARMUP_S);
    const seqBefore = await journalSeq(url);
    const result = await run(url, traders, DURATION_S);
    const seqAfter = await journalSeq(url);

    const ok = result['2xx'];
    const perSecond = ok / result.duration;
    const journaled = seqAfter - seqBefore;
    const summary = {
      benchmark: 'gateway POST /wallet/transfer (durable, journaled before 200)',
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      connections: CONNECTIONS,
      accounts: ACCOUNTS,
      warmupSeconds: WARMUP_S,
      durationSeconds: result.duration,
      acknowledged: ok,
      acknowledgedPerSecond: Math.round(perSecond),
      latencyMs: {
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
      },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes: result.statusCodeStats,
      journal: { seqBefore, seqAfter, recordsAppended: journaled },
    };
    console.log(
      `transfers: ${ok} durable acknowledgements in ${result.duration.toFixed(1)} s = ` +
        `${Math.round(perSecond)}/s ` +
        `(${CONNECTIONS} connections, ${ACCOUNTS} account(s)); latency p50 ${result.latency.p50} ms, ` +
        `p99 ${result.latency.p99} ms; non-2xx ${result.non2xx}, errors ${result.errors}; ` +
        `journal +${journaled} records (seq ${seqBefore} -> ${seqAfter})`,
    );
    if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(summary, null, 2) + '\n');
    // every acknowledged transfer is one journal record; anything beyond is the chain watcher
    if (journaled < ok) {
      console.error(`journal appended ${journaled} records for ${ok} acknowledged transfers`);
      process.exitCode = 1;
    }
  } finally {
    child?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
