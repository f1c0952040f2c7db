/**
 * Restart to ready on an existing data directory (issue 26's target: within 5 s of process start,
 * whatever the service's age): the service started as a user starts it (`npm start` by default) on
 * DATA_DIR, timed from the spawn to
 *   - the first answer of GET /health (the gateway listens while the core recovers),
 *   - the first 200 of GET /health (the core recovered: the newest snapshot and the journal after it),
 *   - a signed-in read served (SIWE sign-in with a fresh key, then GET /wallet/balance),
 *   - the books two-sided (GET /perps/orderbook/BTC-PERP has a bid and an ask),
 * and what the service logged of its recovery (the snapshot used, commands replayed, milliseconds).
 * The service is then stopped with SIGTERM (or left running with --keep).
 *
 * Run: node --import tsx bench/start/restart.ts --data-dir <dir> [--port 18200] [--command 'npm start'] [--env K=V ...]
 * Figures: docs/performance.md ("Restart").
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    port: { type: 'string', default: '18200' },
    command: { type: 'string', default: 'npm start' },
    env: { type: 'string', multiple: true, default: [] },
    keep: { type: 'boolean', default: false },
    timeout: { type: 'string', default: '120000' },
  },
});
if (args['data-dir'] === undefined) throw new Error('--data-dir is required');
const base = `http://127.0.0.1:${args.port}`;
const extra = Object.fromEntries(args.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

async function get(path: string, token?: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await fetch(base + path, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  return { status: r.status, body: await r.json() };
}

async function signIn(): Promise<string> {
  const account = privateKeyToAccount(generatePrivateKey());
  const post = (path: string, body: unknown) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const nonce = await (await post('/auth/nonce', { walletAddress: account.address })).json() as { nonce: string; domain: string; uri: string; chainId: number };
  const message = createSiweMessage({ ...nonce, address: account.address, version: '1', issuedAt: new Date() });
  const signed = await post('/auth/siwe', { message, signature: await account.signMessage({ message }) });
  if (signed.status !== 200) throw new Error(`sign-in: ${signed.status} ${await signed.text()}`);
  return ((await signed.json()) as { token: string }).token;
}

const started = performance.now();
const since = () => Math.round(performance.now() - started);
const child = spawn(args.command, {
  cwd: ROOT, shell: true, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, DATA_DIR: args['data-dir'], PORT: args.port, ...extra },
});
const log: string[] = [];
child.stdout!.on('data', (c: Buffer) => log.push(...c.toString().split('\n')));
child.stderr!.on('data', (c: Buffer) => log.push(...c.toString().split('\n')));
const marks: Record<string, number> = {};
try {
  const deadline = Date.now() + Number(args.timeout);
  while (marks.healthy === undefined) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`not ready:\n${log.slice(-20).join('\n')}`);
    const h = await get('/health').catch(() => null);
    if (h !== null) {
      marks.listening ??= since();
      if (h.status === 200) marks.healthy = since();
    }
    if (marks.healthy === undefined) await new Promise((r) => setTimeout(r, 10));
  }
  const token = await signIn();
  const balance = await get('/wallet/balance', token);
  if (balance.status !== 200) throw new Error(`signed-in read: ${balance.status}`);
  marks.signedInRead = since();
  while (marks.twoSided === undefined && Date.now() < deadline) {
    const book = await get('/perps/orderbook/BTC-PERP');
    if (book.body.bids?.length > 0 && book.body.asks?.length > 0) marks.twoSided = since();
    else await new Promise((r) => setTimeout(r, 10));
  }
  const recovered = log.find((l) => l.includes('exchange core recovered'));
  console.log(JSON.stringify({ command: args.command, dataDir: args['data-dir'], msFromSpawn: marks, recovery: recovered === undefined ? null : JSON.parse(recovered) }, null, 2));
} finally {
  if (!args.keep) process.kill(-child.pid!, 'SIGTERM');
}
