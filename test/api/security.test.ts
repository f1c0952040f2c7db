/**
 * Security hardening (docs/architecture.md "Threat model"), against the real service:
 *
 * 1. The data folder is private: created 0700 with every file in it 0600 (journal segments and
 *    snapshots included); a folder, or a file in it, open to group or others refuses the start
 *    naming the path — in process (DataDirError) and as `npm start` would run it (exit 2, stderr).
 * 2. Secrets from files: with JWT_SECRET_FILE and MARKET_MAKER_KEY_FILE the data folder holds
 *    neither, so a copy of the folder gives nothing to forge a session with: a token signed with
 *    anything found there, or with a stale stored secret, is refused.
 * 3. Rotation: `rotateSessionSecret` (npm run rotate-session-secret) signs everyone out; a new
 *    sign-in works.
 * 4. One address's budget: three fresh accounts from one address meet RATE_LIMIT_IP together
 *    (429 naming the address budget); the sign-in throttle refuses the sign-in past
 *    RATE_LIMIT_SIGNIN_PER_HOUR (429 naming the sign-in budget).
 * 5. The Origin rule on logout: a cross-origin logout with the session cookie is 403 and the session
 *    stays valid; the same-origin one signs out.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SignJWT } from 'jose';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { DataDirError } from '../../src/adapters/store/data-dir.ts';
import { rotateSessionSecret } from '../../src/rotate-session-secret.ts';
import { call, PUBLIC_ORIGIN, signIn, siweMessage, startService, testServiceEnv, type TestService } from '../support/harness.ts';

/** Every path under `dir` (itself included) with its permission bits. */
function modes(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (path: string) => {
    const s = statSync(path);
    out.set(path, s.mode & 0o777);
    if (s.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return out;
}

const cookieHeader = (token: string) => ({ cookie: `session=${token}` });

describe('the data folder is private to the service', () => {
  test('created 0700, every file 0600, snapshots and journal segments included', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'exchange-private-')), 'data');
    const ts = await startService({}, dir);
    try {
      await signIn(ts.url);
      await ts.service.snapshotter.snapshotNow();
    } finally {
      await ts.close();
    }
    const all = modes(dir);
    assert.ok([...all.keys()].some((p) => p.includes('snapshots')), 'a snapshot was written');
    for (const [path, mode] of all) {
      const want = statSync(path).isDirectory() ? 0o700 : 0o600;
      assert.equal(mode, want, `${path}: ${mode.toString(8)}`);
    }
  });

  test('a folder or a file open to group or others refuses the start, naming the path', async () => {
    const open = mkdtempSync(join(tmpdir(), 'exchange-open-'));
    chmodSync(open, 0o755);
    await assert.rejects(startService({}, open), (e: Error) => e instanceof DataDirError && e.message.includes(open) && e.message.includes('0755'));

    const dir = mkdtempSync(join(tmpdir(), 'exchange-leaky-'));
    const ts = await startService({}, dir);
    await ts.close();
    const file = join(dir, 'exchange.sqlite');
    chmodSync(file, 0o644);
    await assert.rejects(startService({}, dir), (e: Error) => e instanceof DataDirError && e.message.includes(file));
  });

  test('as npm start runs it: exit code 2 and the path on stderr', () => {
    const dir = mkdtempSync(join(tmpdir(), 'exchange-open-'));
    mkdirSync(join(dir, 'journal'), { mode: 0o750 });
    chmodSync(join(dir, 'journal'), 0o750);
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, ...testServiceEnv(dir, 0), LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`data folder refused: ${join(dir, 'journal')} is open to group or others`));
  });
});

describe('secrets from files', () => {
  let ts: TestService;
  let dir: string;
  const jwtSecret = 'a-session-secret-of-well-over-thirty-two-bytes-0123456789';
  const makerKey = generatePrivateKey();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exchange-secrets-'));
    const secrets = mkdtempSync(join(tmpdir(), 'exchange-secret-files-'));
    writeFileSync(join(secrets, 'jwt'), `${jwtSecret}\n`, { mode: 0o600 });
    writeFileSync(join(secrets, 'maker'), `${makerKey}\n`, { mode: 0o600 });
    ts = await startService({
      JWT_SECRET_FILE: join(secrets, 'jwt'), MARKET_MAKER_KEY_FILE: join(secrets, 'maker'), MARKET_MAKER: 'on', FEED: 'simulated',
    }, dir);
  });
  after(async () => {
    await ts.close();
  });

  test('the folder holds no secret; the maker signs in with the key from the file', async () => {
    const db = new Database(join(dir, 'exchange.sqlite'), { readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT name FROM secrets').all(), []);
    } finally {
      db.close();
    }
    const maker = privateKeyToAccount(makerKey).address.toLowerCase();
    for (let i = 0; i < 100 && ts.service.exchange.accounts.count() === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(ts.service.exchange.accounts.find(maker) !== undefined, 'the maker account is the key from the file');
  });

  test('a session from the secret works; a token forged with any other secret is refused', async () => {
    const trader = await signIn(ts.url);
    assert.equal((await call(ts.url, '/wallet/balance', { token: trader.token })).status, 200);
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'session+jwt' })
      .setSubject(trader.lower).setIssuer(PUBLIC_ORIGIN).setAudience('exchange:session')
      .setIssuedAt().setExpirationTime('1h').setJti('forged')
      .sign(Buffer.alloc(32, 7));
    assert.equal((await call(ts.url, '/wallet/balance', { token: forged })).status, 401);
  });
});

describe('session secret rotation', () => {
  test('signs everyone out; a new sign-in works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'exchange-rotate-'));
    let ts = await startService({}, dir);
    const before = await signIn(ts.url);
    assert.equal((await call(ts.url, '/wallet/balance', { token: before.token })).status, 200);
    await ts.close();
    assert.match(rotateSessionSecret(dir, false), /replaced/);
    assert.match(rotateSessionSecret(dir, true), /JWT_SECRET/, 'a secret from the environment is not rotated here');
    ts = await startService({}, dir);
    try {
      assert.equal((await call(ts.url, '/wallet/balance', { token: before.token })).status, 401);
      const again = await signIn(ts.url, before.privateKey);
      assert.equal((await call(ts.url, '/wallet/balance', { token: again.token })).status, 200);
    } finally {
      await ts.close();
    }
  });
});

describe('one address, many accounts', () => {
  let ts: TestService;
  before(async () => {
    ts = await startService({ RATE_LIMIT_IP: '40', RATE_LIMIT_ACCOUNT: '1000', RATE_LIMIT_ANONYMOUS: '1000', RATE_LIMIT_SIGNIN_PER_HOUR: '3', RATE_LIMIT_WINDOW_MS: '60000' });
  });
  after(async () => {
    await ts.close();
  });

  test('fresh accounts share their address\'s ceiling; the sign-in throttle stops the fourth session', async () => {
    const traders = [await signIn(ts.url), await signIn(ts.url), await signIn(ts.url)];
    const m = await siweMessage(ts.url, generatePrivateKey());
    const fourth = await call(ts.url, '/auth/siwe', { body: { message: m.message, signature: m.signature } });
    assert.equal(fourth.status, 429, JSON.stringify(fourth.body));
    assert.equal(fourth.headers.get('x-ratelimit-budget'), 'sign-in');
    assert.match(fourth.body.message, /sign-in budget/);
    let refused: Awaited<ReturnType<typeof call<{ message: string }>>> | null = null;
    let served = 0;
    for (let i = 0; i < 40 && refused === null; i++) {
      const r = await call(ts.url, '/wallet/balance', { token: traders[i % 3]!.token });
      if (r.status === 429) refused = r;
      else served++;
    }
    assert.ok(refused !== null, 'the address ceiling was met');
    assert.ok(served < 40 && served > 20, `${served} served before the ceiling`);
    assert.equal(refused.headers.get('x-ratelimit-budget'), 'address');
    assert.match(refused.body.message, /budget of this client address/);
  });
});

describe('the Origin rule on logout', () => {
  let ts: TestService;
  before(async () => {
    ts = await startService();
  });
  after(async () => {
    await ts.close();
  });

  test('a cross-origin logout with the cookie is refused and signs nobody out; a same-origin one works', async () => {
    const trader = await signIn(ts.url);
    const cross = await call(ts.url, '/auth/logout', { method: 'POST', headers: { ...cookieHeader(trader.token), origin: 'https://sibling.exchange.test' } });
    assert.equal(cross.status, 403, JSON.stringify(cross.body));
    assert.equal(cross.body.error, 'FORBIDDEN');
    assert.equal((await call(ts.url, '/wallet/balance', { token: trader.token })).status, 200, 'still signed in');
    const same = await call(ts.url, '/auth/logout', { method: 'POST', headers: { ...cookieHeader(trader.token), origin: PUBLIC_ORIGIN } });
    assert.equal(same.status, 200);
    assert.equal((await call(ts.url, '/wallet/balance', { token: trader.token })).status, 401, 'signed out');
  });
});
