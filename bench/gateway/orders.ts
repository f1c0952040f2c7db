/**
 * Gateway benchmark of signed-in, durable order entry against the ceiling of a bare Fastify POST
 * on the same machine, in the same run (issue 3: target >= 50 % of the bare ceiling, p99 < 10 ms).
 *
 * 1. Bare ceiling: a child process running a Fastify 5 server with one POST route that parses the
 *    same JSON body and answers a small JSON object (no schema, no auth, no engine).
 * 2. The exchange: the real service as a child process (`src/main.ts`, FEED=push, index published);
 *    a maker account rests a deep two-sided book on BTC-PERP; a taker account, signed in with SIWE,
 *    sends POST /perps/orders with its session Bearer token: IOC buys and sells of 0.001 BTC that
 *    always fill (so every request runs the checks, the margin gate, matching, positions, fees and
 *    the ledger, and is journaled to SQLite before its 201). Order-action rate limits are raised.
 * Both runs: autocannon, 50 connections, pipelining 1, warm-up then the measured run.
 *
 * Run: node --import tsx bench/gateway/orders.ts [--connections 50 --duration 10 --warmup 3 --json out.json]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon, { type RequestSpec, type Result } from 'autocannon';
import { call, freePort, waitFor } from '../../test/support/harness.ts';
import { marketOrderBody, startOrderVenue } from '../shared/order-venue.ts';

const { values: args } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    json: { type: 'string' },
  },
});
const CONNECTIONS = Number(args.connections);
const DURATION_S = Number(args.duration);
const WARMUP_S = Number(args.warmup);

const BARE_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
let n = 0;
app.post('/orders', async (req) => ({ id: String(++n), status: 'filled', side: req.body.side }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

async function startBare(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_SERVER], {
    env: { ...process.env, PORT: String(port) },
    cwd: new URL('../..', import.meta.url).pathname,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await waitFor(async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).ok;
    } catch {
      return false;
    }
  }, 15_000, 50);
  return child;
}

function load(url: string, requests: RequestSpec[], seconds: number): Promise<Result> {
  return Promise.resolve(autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: 1, timeout: 10, requests }));
}

function orderRequests(path: string, token: string | null): RequestSpec[] {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return [
    { method: 'POST', path, headers, body: marketOrderBody('buy') },
    { method: 'POST', path, headers, body: marketOrderBody('sell') },
  ];
}

function figures(r: Result) {
  return {
    requestsPerSec: Math.round(r['2xx'] / r.duration),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

async function main(): Promise<void> {
  const barePort = await freePort();
  const bare = await startBare(barePort);
  const bareUrl = `http://127.0.0.1:${barePort}`;
  await load(bareUrl, orderRequests('/orders', null), WARMUP_S);
  const bareResult = figures(await load(bareUrl, orderRequests('/orders', null), DURATION_S));
  bare.kill('SIGTERM');

  const venue = await startOrderVenue();
  try {
    const { url, taker } = venue;
    await load(url, orderRequests('/perps/orders', taker.token), WARMUP_S);
    const before = (await call(url, '/health')).body.journalSeq as number;
    const exchangeRaw = await load(url, orderRequests('/perps/orders', taker.token), DURATION_S);
    const after = (await call(url, '/health')).body.journalSeq as number;
    const exchange = { ...figures(exchangeRaw), journaled: after - before };
    const summary = {
      benchmark: 'signed-in durable order entry (POST /perps/orders, IOC fills) vs bare Fastify POST',
      node: process.version,
      cpus: `${os.cpus()[0]?.model} x${os.cpus().length}`,
      connections: CONNECTIONS,
      durationS: DURATION_S,
      bare: bareResult,
      exchange,
      ratioOfBare: +(exchange.requestsPerSec / bareResult.requestsPerSec).toFixed(3),
    };
    console.log(JSON.stringify(summary, null, 2));
    console.log(
      `\nSUMMARY bare ${bareResult.requestsPerSec} req/s (p99 ${bareResult.p99Ms} ms) | orders ${exchange.requestsPerSec} req/s ` +
        `(p50 ${exchange.p50Ms} ms, p99 ${exchange.p99Ms} ms) = ${(summary.ratioOfBare * 100).toFixed(1)} % of bare; ` +
        `non-2xx ${exchange.non2xx}`,
    );
    if (args.json !== undefined) writeFileSync(args.json, JSON.stringify(summary, null, 2));
  } finally {
    venue.close();
  }
}

await main();
