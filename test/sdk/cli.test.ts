/**
 * The `exchange` CLI (sdk/src/cli.ts) against the real service: market data without credentials,
 * then an account from EXCHANGE_PRIVATE_KEY — deposit (operator token), balances, transfer, place,
 * list, cancel, close, API keys — as tables and as `--json`; `watch` printing a live stream (one
 * JSON line per event); the session kept between runs in EXCHANGE_SESSION_DIR (mode 0600) and
 * reused; exit codes 2 for a usage error and 1 for a refusal, with the server's code. Commands run
 * in process through `main`, and once as a real process through the repository's bin,
 * scripts/exchange.mjs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generatePrivateKey } from 'viem/accounts';
import { main } from '../../sdk/src/cli.ts';
import { ADMIN_TOKEN, admin, call, startService, waitFor, type TestService } from '../support/harness.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '60000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};

let svc: TestService;
let sessions: string;
const key = generatePrivateKey();

before(async () => {
  svc = await startService(ENV);
  sessions = mkdtempSync(join(tmpdir(), 'exchange-cli-'));
  const r = await call(svc.url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
  assert.equal(r.status, 200);
});

after(async () => {
  await svc.close();
  rmSync(sessions, { recursive: true, force: true });
});

interface Run {
  code: number;
  out: string;
  err: string;
}

async function cli(args: string[], env: Record<string, string> = {}, signal?: AbortSignal): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    env: { EXCHANGE_URL: svc.url, EXCHANGE_SESSION_DIR: sessions, ...env },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    signal,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const signed = { EXCHANGE_PRIVATE_KEY: key, EXCHANGE_ADMIN_TOKEN: ADMIN_TOKEN };

describe('exchange CLI', () => {
  test('market data without credentials, as a table and as JSON', async () => {
    const table = await cli(['markets']);
    assert.equal(table.code, 0, table.err);
    const [header, ...rows] = table.out.split('\n');
    assert.match(header!, /^MARKET\s+TYPE\s+MARK\s+INDEX/);
    assert.ok(rows.some((r) => /^BTC-PERP\s+perp\s+100000\s+100000\b/.test(r)), table.out);
    const json = await cli(['--json', 'markets']);
    const markets = JSON.parse(json.out) as { id: string; markPrice: string }[];
    assert.equal(markets.find((m) => m.id === 'BTC-PERP')!.markPrice, '100000');
  });

  test('an account from EXCHANGE_PRIVATE_KEY: deposit, balances, transfer, orders, close, API keys', async () => {
    const dep = await cli(['deposit', '1000.5'], signed);
    assert.equal(dep.code, 0, dep.err);
    assert.match(dep.out, /deposited\s+1000\.5 USDC/);
    await waitFor(async () => /wallet\s+1000\.5$/m.test((await cli(['balances'], signed)).out), 5000, 50);
    const files = readdirSync(sessions);
    assert.equal(files.length, 1, 'one session kept');
    const file = join(sessions, files[0]!);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const token = JSON.parse(readFileSync(file, 'utf8')).token as string;

    const moved = await cli(['transfer', '400.25', 'wallet', 'perps'], signed);
    assert.match(moved.out, /^wallet\s+600\.25$/m);
    assert.match(moved.out, /^perps\s+400\.25$/m);

    const placed = await cli(['--json', 'place', 'BTC-PERP', 'buy', '0.01', '99000', '--post-only'], signed);
    assert.equal(placed.code, 0, placed.err);
    const order = JSON.parse(placed.out) as { id: string; status: string; price: string; clientOrderId: string };
    assert.equal(order.status, 'open');
    assert.equal(order.price, '99000');
    assert.match(order.clientOrderId, /^[0-9a-f-]{36}$/);
    const open = await cli(['orders', '--open'], signed);
    assert.match(open.out, new RegExp(`^\\s*${order.id}\\s+BTC-PERP\\s+buy\\s+limit\\s+99000\\s+0\\.01\\s+0\\s+-\\s+open`, 'm'));
    const cancelled = await cli(['cancel', order.id], signed);
    assert.match(cancelled.out, /^status\s+cancelled$/m);

    // A position to close: another account rests an ask, this one buys it.
    const other = { EXCHANGE_PRIVATE_KEY: generatePrivateKey(), EXCHANGE_ADMIN_TOKEN: ADMIN_TOKEN };
    await cli(['deposit', '10000'], other);
    await waitFor(async () => /wallet\s+10000$/m.test((await cli(['balances'], other)).out), 5000, 50);
    await cli(['transfer', '10000', 'wallet', 'perps'], other);
    assert.equal((await cli(['place', 'BTC-PERP', 'sell', '0.02', '100000', '--post-only'], other)).code, 0);
    const bought = await cli(['place', 'BTC-PERP', 'buy', '0.02', '100000', '--ioc'], signed);
    assert.match(bought.out, /^filled\s+0\.02$/m);
    const positions = await cli(['positions'], signed);
    assert.match(positions.out, /^BTC-PERP\s+long\s+0\.02\s+100000\b/m);
    assert.equal((await cli(['place', 'BTC-PERP', 'buy', '0.02', '100000', '--post-only'], other)).code, 0);
    const closed = await cli(['close', 'BTC-PERP'], signed);
    assert.match(closed.out, /^side\s+sell$/m);
    assert.match(closed.out, /^filled\s+0\.02$/m);
    assert.equal((await cli(['positions'], signed)).out, '(none)');

    const created = await cli(['--json', 'api-keys', 'create', 'bot', 'read'], signed);
    const k = JSON.parse(created.out) as { id: string; secret: string };
    const listed = await cli(['api-keys'], signed);
    assert.match(listed.out, new RegExp(`^\\s*${k.id}\\s+bot\\s+read\\s+active`, 'm'));
    const viaKey = await cli(['orders', '--limit', '3'], { EXCHANGE_API_KEY: k.secret });
    assert.equal(viaKey.code, 0, viaKey.err);
    assert.match(viaKey.out, /^ID\s+MARKET/);
    assert.equal((await cli(['api-keys', 'revoke', k.id], signed)).code, 0);
    const revoked = await cli(['orders'], { EXCHANGE_API_KEY: k.secret });
    assert.equal(revoked.code, 1);
    assert.match(revoked.err, /^error: 401 UNAUTHENTICATED/);

    assert.equal(JSON.parse(readFileSync(file, 'utf8')).token, token, 'every run reused the kept session');
  });

  test('watch prints a live stream, one JSON line per event', async () => {
    const stop = new AbortController();
    const running = cli(['--json', 'watch', 'book', 'BTC-PERP', '--count', '2'], {}, stop.signal);
    await new Promise((r) => setTimeout(r, 300));
    const trader = { EXCHANGE_PRIVATE_KEY: generatePrivateKey(), EXCHANGE_ADMIN_TOKEN: ADMIN_TOKEN };
    await cli(['deposit', '5000'], trader);
    await waitFor(async () => /wallet\s+5000$/m.test((await cli(['balances'], trader)).out), 5000, 50);
    await cli(['transfer', '5000', 'wallet', 'perps'], trader);
    await cli(['place', 'BTC-PERP', 'sell', '0.03', '101000', '--post-only'], trader);
    const run = await running;
    assert.equal(run.code, 0, run.err);
    const lines = run.out.split('\n').map((l) => JSON.parse(l) as { kind: string; seq: number; message: { payload: { asks: { price: string; size: string }[] } } });
    assert.deepEqual(lines.map((l) => l.kind), ['snapshot', 'update']);
    assert.equal(lines[1]!.seq, lines[0]!.seq + 1);
    assert.deepEqual(lines[1]!.message.payload.asks.map((a) => [a.price, a.size]), [['101000', '0.03']]);
    await cli(['cancel', '--all'], trader);
  });

  test('a usage error exits 2, a refusal 1 with the server\'s code; a number-like typo never leaves', async () => {
    const usage = await cli(['place', 'BTC-PERP', 'up', '1', '100'], signed);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /side is buy or sell/);
    const unknown = await cli(['frobnicate']);
    assert.equal(unknown.code, 2);
    const refused = await cli(['withdraw', '99999999'], signed);
    assert.equal(refused.code, 1);
    assert.match(refused.err, /^error: 400 INSUFFICIENT_BALANCE/);
    const exponent = await cli(['transfer', '1e3', 'wallet', 'perps'], signed);
    assert.equal(exponent.code, 1);
    assert.match(exponent.err, /amount must be a decimal string/);
  });

  test('the repository\'s bin (scripts/exchange.mjs) runs the same CLI as a process', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/exchange.mjs', '--json', 'book', 'BTC-PERP'], {
      env: { ...process.env, EXCHANGE_URL: svc.url, EXCHANGE_SESSION_DIR: 'off' },
    });
    const book = JSON.parse(stdout) as { bids: unknown[]; asks: unknown[] };
    assert.ok(Array.isArray(book.bids) && Array.isArray(book.asks));
  });
});
