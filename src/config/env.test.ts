/** Settings from the environment: defaults, and a bad value stops the service naming the variable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadSettings } from './env.ts';

test('group-commit settings: defaults and explicit values', () => {
  assert.deepEqual(loadSettings({}).journal, { earlyFlushAt: 16, maxInFlight: 4, maxProjectionLag: 1024, replayCheck: 'strict' });
  assert.deepEqual(
    loadSettings({ JOURNAL_EARLY_FLUSH_AT: '1', JOURNAL_MAX_IN_FLIGHT: '64', JOURNAL_MAX_PROJECTION_LAG: '1', JOURNAL_REPLAY_CHECK: 'warn' }).journal,
    { earlyFlushAt: 1, maxInFlight: 64, maxProjectionLag: 1, replayCheck: 'warn' },
  );
});

test('a bad group-commit setting is refused with the variable named', () => {
  for (const [name, raw] of [
    ['JOURNAL_EARLY_FLUSH_AT', '0'],
    ['JOURNAL_EARLY_FLUSH_AT', '1e3'],
    ['JOURNAL_EARLY_FLUSH_AT', '65537'],
    ['JOURNAL_MAX_IN_FLIGHT', '0'],
    ['JOURNAL_MAX_IN_FLIGHT', '-1'],
    ['JOURNAL_MAX_IN_FLIGHT', '65'],
    ['JOURNAL_MAX_PROJECTION_LAG', '0'],
    ['JOURNAL_MAX_PROJECTION_LAG', '65537'],
    ['JOURNAL_REPLAY_CHECK', 'off'],
  ] as const) {
    assert.throws(() => loadSettings({ [name]: raw }), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name), `${name}=${raw}`);
  }
});

test('the push feed needs the admin routes it arrives through', () => {
  assert.throws(() => loadSettings({ FEED: 'push' }), (e: unknown) => e instanceof ConfigError && e.message.startsWith('FEED=push'));
  assert.equal(loadSettings({ FEED: 'push', ADMIN_TOKEN: 'x'.repeat(16) }).feed, 'push');
});

test('the clock ticks at least ten times per funding interval (a funding time no tick passes through is skipped)', () => {
  assert.throws(
    () => loadSettings({ TICK_MS: '20000', FUNDING_INTERVAL_MS: '10000' }),
    (e: unknown) => e instanceof ConfigError && e.message.startsWith('FUNDING_INTERVAL_MS (10000) must be at least 10 × TICK_MS (20000)'),
  );
  assert.throws(() => loadSettings({ TICK_MS: '60000', FUNDING_INTERVAL_MS: '60000' }), ConfigError);
  assert.equal(loadSettings({ TICK_MS: '60000', FUNDING_INTERVAL_MS: '600000' }).fundingIntervalMs, 600_000);
});

test('history retention of orders that ended without a fill: defaults, explicit values, bad ones refused', () => {
  assert.deepEqual(loadSettings({}).history, { unfilledOrderRetentionMs: 259_200_000, unfilledQuoteRetentionMs: 3_600_000 });
  const set = { HISTORY_UNFILLED_ORDER_RETENTION_MS: '86400000', HISTORY_UNFILLED_QUOTE_RETENTION_MS: '60000' };
  assert.deepEqual(loadSettings(set).history, { unfilledOrderRetentionMs: 86_400_000, unfilledQuoteRetentionMs: 60_000 });
  for (const name of Object.keys(set)) {
    for (const raw of ['999', '1h', '-1']) {
      assert.throws(() => loadSettings({ [name]: raw }), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name), `${name}=${raw}`);
    }
  }
});

test('TCP connection caps: defaults above the stream caps, raised with them, a value at or below them refused', () => {
  assert.deepEqual(loadSettings({}).connections, { maxTotal: 20_000, maxPerAddress: 1000 });
  assert.deepEqual(loadSettings({ MAX_CONNECTIONS: '500', MAX_CONNECTIONS_PER_IP: '50', SSE_MAX_CONNECTIONS: '100', SSE_MAX_PER_IP: '10' }).connections, {
    maxTotal: 500,
    maxPerAddress: 50,
  });
  assert.deepEqual(loadSettings({ SSE_MAX_CONNECTIONS: '15000', SSE_MAX_PER_IP: '1100' }).connections, { maxTotal: 30_000, maxPerAddress: 1500 });
  for (const [env, name] of [
    [{ MAX_CONNECTIONS_PER_IP: '600' }, 'MAX_CONNECTIONS_PER_IP (600) must be above SSE_MAX_PER_IP (600)'],
    [{ MAX_CONNECTIONS: '10000' }, 'MAX_CONNECTIONS (10000) must be above SSE_MAX_CONNECTIONS (10000)'],
    [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS must be between'],
    [{ MAX_CONNECTIONS_PER_IP: '1k' }, 'MAX_CONNECTIONS_PER_IP must be a whole number'],
  ] as const) {
    assert.throws(() => loadSettings(env), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name), JSON.stringify(env));
  }
});

test('secrets from the environment or a file; address and sign-in budgets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'env-secrets-'));
  const file = join(dir, 'jwt');
  writeFileSync(file, 'a-secret-from-a-file-of-at-least-thirty-two-bytes\n');
  assert.equal(loadSettings({ JWT_SECRET_FILE: file }).jwtSecret, 'a-secret-from-a-file-of-at-least-thirty-two-bytes');
  assert.throws(() => loadSettings({ JWT_SECRET_FILE: file, JWT_SECRET: 'x'.repeat(40) }), /JWT_SECRET or JWT_SECRET_FILE, not both/);
  assert.throws(() => loadSettings({ JWT_SECRET_FILE: join(dir, 'missing') }), (e: Error) => e instanceof ConfigError && /cannot read/.test(e.message));
  const key = `0x${'Ab'.repeat(32)}`;
  writeFileSync(join(dir, 'maker'), `${key}\n`);
  assert.equal(loadSettings({ MARKET_MAKER_KEY_FILE: join(dir, 'maker') }).marketMakerKey, key.toLowerCase());
  assert.equal(loadSettings({ MARKET_MAKER_KEY: 'cd'.repeat(32) }).marketMakerKey, `0x${'cd'.repeat(32)}`);
  assert.throws(() => loadSettings({ MARKET_MAKER_KEY: '0x1234' }), /MARKET_MAKER_KEY must be a private key/);
  assert.equal(loadSettings({}).marketMakerKey, null);
  const defaults = loadSettings({}).rateLimit;
  assert.equal(defaults.addressPerWindow, 5000);
  assert.equal(defaults.signInsPerHour, 60);
  assert.equal(loadSettings({ RATE_LIMIT_IP: '12', RATE_LIMIT_SIGNIN_PER_HOUR: '3' }).rateLimit.signInsPerHour, 3);
  assert.throws(() => loadSettings({ RATE_LIMIT_IP: '0' }), /RATE_LIMIT_IP must be between/);
});

test('PUBLIC_ORIGIN defaults to where the service listens (a wildcard HOST: localhost)', () => {
  assert.equal(loadSettings({}).publicOrigin, 'http://127.0.0.1:8080');
  assert.equal(loadSettings({ PORT: '9001', PUBLIC_ORIGIN: '' }).publicOrigin, 'http://127.0.0.1:9001');
  assert.equal(loadSettings({ HOST: 'localhost' }).publicOrigin, 'http://localhost:8080');
  assert.equal(loadSettings({ HOST: '::1' }).publicOrigin, 'http://[::1]:8080');
  assert.equal(loadSettings({ HOST: '0.0.0.0' }).publicOrigin, 'http://localhost:8080');
  assert.equal(loadSettings({ HOST: '::' }).publicOrigin, 'http://localhost:8080');
  assert.equal(loadSettings({ PUBLIC_ORIGIN: 'https://exchange.example' }).publicOrigin, 'https://exchange.example');
});

test('NATS credentials and TLS: a token or a user and password (each from a file too), a CA and a client certificate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'env-nats-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  const base = { ROLE: 'gateway', NATS_URL: 'nats://10.0.0.1:4222', DATABASE_URL: 'postgres://exchange@10.0.0.3/exchange' };
  const ca = file('ca.pem', 'ca');
  const tls = { NATS_TLS_CA_FILE: ca, NATS_TLS_CERT_FILE: file('client.pem', 'c'), NATS_TLS_KEY_FILE: file('client.key', 'k') };
  const s = loadSettings({ ...base, NATS_TOKEN_FILE: file('token', 'secret-token\n'), ...tls });
  assert.deepEqual(s.distributed?.natsSecurity, { token: 'secret-token', user: null, password: null, tls: { caFile: ca, certFile: tls.NATS_TLS_CERT_FILE, keyFile: tls.NATS_TLS_KEY_FILE } });
  const user = loadSettings({ ...base, NATS_USER: 'gateway', NATS_PASSWORD: 'pw', NATS_TLS_CA_FILE: ca }).distributed?.natsSecurity;
  assert.deepEqual(user, { token: null, user: 'gateway', password: 'pw', tls: { caFile: ca, certFile: null, keyFile: null } });
  assert.throws(() => loadSettings({ ...base, NATS_TOKEN: 't', NATS_USER: 'u', NATS_PASSWORD: 'p' }), /NATS_TOKEN or NATS_USER/);
  assert.throws(() => loadSettings({ ...base, NATS_USER: 'u' }), /NATS_USER and NATS_PASSWORD go together/);
  assert.throws(() => loadSettings({ ...base, NATS_TOKEN: 't', NATS_TOKEN_FILE: join(dir, 'token') }), /NATS_TOKEN or NATS_TOKEN_FILE, not both/);
  assert.throws(() => loadSettings({ ...base, NATS_TLS_CA_FILE: ca, NATS_TLS_CERT_FILE: tls.NATS_TLS_CERT_FILE }), /go together/);
  assert.throws(() => loadSettings({ ...base, NATS_TLS_CERT_FILE: tls.NATS_TLS_CERT_FILE, NATS_TLS_KEY_FILE: tls.NATS_TLS_KEY_FILE }), /needs NATS_TLS_CA_FILE/);
  assert.throws(() => loadSettings({ ...base, NATS_TLS_CA_FILE: join(dir, 'missing.pem') }), /NATS_TLS_CA_FILE: .* does not exist/);
  assert.throws(() => loadSettings({ NATS_TOKEN: 't' }), /NATS_TOKEN is a setting of the distributed mode/);
});

test('ROLE: the embedded default; the distributed roles need NATS_URL and DATABASE_URL, the default refuses them', () => {
  const base = loadSettings({});
  assert.equal(base.role, 'all');
  assert.equal(base.distributed, null);
  const urls = { NATS_URL: 'nats://10.0.0.1:4222,nats://10.0.0.2:4222', DATABASE_URL: 'postgres://exchange@10.0.0.3:5432/exchange' };
  for (const role of ['core', 'gateway'] as const) {
    const s = loadSettings({ ROLE: role, ...urls });
    assert.equal(s.role, role);
    assert.deepEqual(s.distributed, { natsUrl: urls.NATS_URL, natsSecurity: { token: null, user: null, password: null, tls: null }, databaseUrl: urls.DATABASE_URL });
    assert.throws(() => loadSettings({ ROLE: role, NATS_URL: urls.NATS_URL }), /ROLE=\w+ needs NATS_URL and DATABASE_URL/);
  }
  assert.throws(() => loadSettings({ ROLE: 'sequencer' }), (e: unknown) => e instanceof ConfigError && e.message.startsWith('ROLE'));
  assert.throws(() => loadSettings(urls), /select the distributed mode/);
  assert.throws(() => loadSettings({ ROLE: 'core', ...urls, NATS_URL: 'http://x' }), /NATS_URL must be/);
  assert.throws(() => loadSettings({ ROLE: 'core', ...urls, DATABASE_URL: 'mysql://x' }), /DATABASE_URL must be/);
  const maker = { MARKET_MAKER_KEY: '11'.repeat(32), ADMIN_TOKEN: 'admin-token-0123456789' };
  assert.equal(loadSettings({ ROLE: 'core', ...urls, ...maker, MARKET_MAKER_GATEWAY: 'http://10.0.0.5:8080/' }).marketMakerGateway, 'http://10.0.0.5:8080');
  assert.throws(() => loadSettings({ ROLE: 'core', ...urls, MARKET_MAKER_GATEWAY: 'http://10.0.0.5:8080' }), /MARKET_MAKER_GATEWAY needs MARKET_MAKER_KEY/);
  assert.throws(() => loadSettings({ ...maker, MARKET_MAKER_GATEWAY: 'ftp://x' }), /MARKET_MAKER_GATEWAY must be/);
});
