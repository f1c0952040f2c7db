/**
 * The distributed mode's identity store on a real PostgreSQL server (test/support/postgres.ts):
 * the behaviour the embedded SQLite store's tests show (gateway/auth/*.test.ts), and what only a
 * shared store must do, with two "gateways" (each its own pool, change feed, ApiKeys, Sessions and
 * SiweVerifier) over one database: a key created on A works on B; revoked on A it is refused on B
 * at once when notified and within the TTL when not; a logout on A holds on B (notified, or by the
 * poll when the notification is lost); a nonce is used once across both; the session secret is
 * created once for all.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { waitFor } from '../../../test/support/harness.ts';
import { API_KEY_LIMITS, ApiKeys } from '../../gateway/auth/api-keys.ts';
import type { IdentityChange, SharedIdentity } from '../../gateway/auth/identity-store.ts';
import { Sessions } from '../../gateway/auth/sessions.ts';
import { SiweVerifier } from '../../gateway/auth/siwe.ts';
import { ApiError } from '../../gateway/errors.ts';
import { createIdentityResolver } from '../../gateway/auth/identity.ts';
import { migratePostgres, postgresPool } from './database.ts';
import { openGatewayIdentity, SESSION_SECRET } from './gateway-identity.ts';
import type { PostgresIdentityChanges } from './identity-changes.ts';
import { PostgresIdentityStore } from './identity-store.ts';

const DAY_MS = 86_400_000;
const ORIGIN = 'http://exchange.test';
const owner = () => `0x${randomBytes(20).toString('hex')}`;

interface Gateway {
  pool: pg.Pool;
  store: PostgresIdentityStore;
  feed: PostgresIdentityChanges;
  keys: ApiKeys;
  sessions: Sessions;
  siwe: SiweVerifier;
}

let server: PostgresServer;
let a: Gateway;
let b: Gateway;
const closers: (() => unknown)[] = [];

/** A gateway's identity services, wired as the composition root wires them (gateway-identity.ts). */
async function gateway(): Promise<Gateway> {
  const identity = await openGatewayIdentity(server.url, { windowMs: 10_000 });
  const { pool, store, changes: feed } = identity;
  const keys = new ApiKeys(store, Date.now, feed);
  const sessions = new Sessions(store, await identity.sessionSecret(null), ORIGIN, Date.now, feed);
  const siwe = new SiweVerifier(store, { publicOrigin: ORIGIN, chainId: 1 });
  closers.push(() => keys.close(), () => sessions.close(), () => identity.close());
  return { pool, store, feed, keys, sessions, siwe };
}

/** A change feed that never notifies (every notification lost): only the key TTL is left. */
function silentFeed(keyTtlMs: number): SharedIdentity {
  return { keyTtlMs, subscribe: () => () => undefined };
}

before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
  a = await gateway();
  b = await gateway();
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await server.destroy();
});

/** Milliseconds until `check` holds (polled every 5 ms), failing after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  await waitFor(check, limitMs, 5);
  return performance.now() - started;
}

describe('the store, as the SQLite one behaves', () => {
  test('a nonce is counted per address and requester, taken once, and expired ones are pruned on add', async () => {
    const address = owner();
    const t = Date.now();
    await a.store.addNonce({ nonce: 'n1', address, issuedAt: t, expiresAt: t + 60_000 }, '10.0.0.1');
    await a.store.addNonce({ nonce: 'n2', address, issuedAt: t, expiresAt: t + 60_000 }, '10.0.0.2');
    assert.equal(await a.store.outstandingNonces(address, '10.0.0.1'), 1);
    assert.deepEqual(await b.store.takeNonce('n1'), { nonce: 'n1', address, issuedAt: t, expiresAt: t + 60_000 });
    assert.equal(await a.store.takeNonce('n1'), undefined, 'taken once, whichever gateway asks');
    await a.store.addNonce({ nonce: 'old', address, issuedAt: t, expiresAt: t + 1 }, '10.0.0.3');
    await a.store.addNonce({ nonce: 'n3', address, issuedAt: t + 1, expiresAt: t + 60_000 }, '10.0.0.3');
    assert.equal(await a.store.takeNonce('old'), undefined, 'the expired nonce went first');
  });

  test('API keys round-trip every field; the secret is stored as its SHA-256 only', async () => {
    const address = owner();
    const created = await a.keys.create(address, { name: 'pinned', scope: 'trade', allowedIps: ['10.0.0.0/8'], expiresInDays: 2 });
    const record = await b.store.apiKey(created.view.id);
    assert.ok(record !== undefined);
    assert.deepEqual(
      { ...record, secretHash: undefined },
      { id: created.view.id, address, name: 'pinned', scope: 'trade', allowedIps: ['10.0.0.0/8'], secretHash: undefined,
        expiresAt: created.view.expiresAt, createdAt: created.view.createdAt, lastUsedAt: null, revokedAt: null },
    );
    const { rows } = await a.pool.query<{ row: string }>('SELECT api_keys::text AS row FROM api_keys WHERE id = $1', [created.view.id]);
    assert.ok(!rows[0]!.row.includes(created.secret.slice(-43)), 'the secret itself is nowhere in the row');
    assert.equal(record.secretHash.length, 32);
    assert.ok((await a.store.loadApiKeys()).some((k) => k.id === created.view.id));
  });

  test('expiry: a key works until the last millisecond and is expired from then on, on both gateways', async () => {
    let now = Date.UTC(2030, 0, 1);
    const k = new ApiKeys(a.store, () => now, a.feed);
    const other = new ApiKeys(b.store, () => now, b.feed);
    const address = owner();
    const { view, secret } = await k.create(address, { name: 'day', scope: 'read', expiresInDays: 1 });
    now += DAY_MS - 1;
    assert.equal((await other.authenticate(secret, '127.0.0.1')).ok, true);
    now += 1;
    assert.deepEqual(await other.authenticate(secret, '127.0.0.1'), { ok: false, code: 'UNAUTHENTICATED', message: 'API key is expired' });
    assert.equal((await other.list(address)).find((v) => v.id === view.id)?.status, 'expired');
    k.close();
    other.close();
  });

  test('lastUsedAt: kept in memory on every use, written at most once a minute per key', async () => {
    let now = Date.UTC(2030, 0, 1);
    const k = new ApiKeys(a.store, () => now, a.feed);
    const address = owner();
    const { view, secret } = await k.create(address, { name: 'used', scope: 'read' });
    const stored = async () => (await a.store.apiKey(view.id))?.lastUsedAt;
    now += 1_000;
    await k.authenticate(secret, '127.0.0.1');
    await waitFor(async () => (await stored()) === now, 2_000, 5);
    now += 29_000;
    await k.authenticate(secret, '127.0.0.1');
    assert.equal((await k.list(address)).find((v) => v.id === view.id)?.lastUsedAt, now, 'this gateway lists its own last use');
    assert.equal(await stored(), now - 29_000, 'a use within the minute is not written');
    k.close();
  });

  test('an account keeps at most maxActivePerAccount active and maxKeptPerAccount keys in all', async () => {
    const address = owner();
    for (let i = 0; i < API_KEY_LIMITS.maxActivePerAccount; i++) await a.keys.create(address, { name: `k${i}`, scope: 'read' });
    await assert.rejects(async () => b.keys.create(address, { name: 'over', scope: 'read' }), (e: unknown) => e instanceof ApiError && e.code === 'CONFLICT');
    const ended = (await b.keys.list(address)).slice(0, 5);
    for (const v of ended) await b.keys.revoke(address, v.id);
    assert.equal((await a.keys.list(address)).filter((v) => v.status === 'revoked').length, 5);
    await assert.rejects(async () => a.keys.revoke(owner(), ended[0]!.id), (e: unknown) => e instanceof ApiError && e.code === 'NOT_FOUND');
  });

  test('the kept-keys cap forgets the oldest ended keys in the store', async () => {
    const address = owner();
    const kept = await a.keys.create(address, { name: 'kept', scope: 'read' });
    for (let i = 0; i < API_KEY_LIMITS.maxKeptPerAccount + 3; i++) {
      const { view } = await (i % 2 === 0 ? a : b).keys.create(address, { name: `loop-${i}`, scope: 'trade' });
      await (i % 2 === 0 ? b : a).keys.revoke(address, view.id);
    }
    const listed = await b.keys.list(address);
    assert.equal(listed.length, API_KEY_LIMITS.maxKeptPerAccount);
    assert.ok(listed.some((v) => v.id === kept.view.id && v.status === 'active'));
    assert.equal((await b.store.apiKeysOf(address)).length, API_KEY_LIMITS.maxKeptPerAccount);
  });

  test('revoked sessions: kept until the token expires, then pruned', async () => {
    const now = Date.now();
    await a.store.revokeSession('jti-old', now + 10);
    await a.store.revokeSession('jti-live', now + 60_000);
    await a.store.revokeSession('jti-live', now + 60_000); // twice is once
    assert.deepEqual([...(await b.store.revokedSessions(now + 20))].filter(([j]) => j.startsWith('jti-')), [['jti-live', now + 60_000]]);
    await b.store.pruneRevokedSessions(now + 20);
    const { rows } = await a.pool.query("SELECT jti FROM revoked_sessions WHERE jti = 'jti-old'");
    assert.equal(rows.length, 0);
  });

  test('the session secret is made once for every gateway, even when they start together', async () => {
    const made = await Promise.all([a, b, a, b].map((g) => g.store.secret('test-secret', () => randomBytes(32))));
    assert.equal(new Set(made.map((m) => m.toString('hex'))).size, 1);
    assert.equal(made[0]!.length, 32);
    const signing = await b.store.secret(SESSION_SECRET, () => randomBytes(32));
    const { token } = await a.sessions.issue(owner());
    assert.ok((await b.sessions.verify(token)) !== null, 'both gateways sign with the secret the first one made');
    assert.equal(signing.length, 32);
  });

  test('rotating the session secret replaces it and forgets every revocation', async () => {
    await a.store.revokeSession('jti-rotated', Date.now() + 60_000);
    const fresh = randomBytes(32);
    await a.store.rotateSessionSecret('rotated-secret', fresh);
    assert.deepEqual(await b.store.secret('rotated-secret', () => randomBytes(32)), fresh);
    assert.equal((await b.store.revokedSessions(Date.now())).size, 0);
  });
});

describe('two gateways over one database', () => {
  test('a key created on A works on B; revoked on A it is refused on B as soon as B is notified', async (t) => {
    const address = owner();
    const { view, secret } = await a.keys.create(address, { name: 'shared', scope: 'trade' });
    assert.equal((await b.keys.authenticate(secret, '127.0.0.1')).ok, true);
    assert.equal(await b.keys.isActive(view.id), true, 'B now serves it from memory');
    await a.keys.revoke(address, view.id);
    const ms = await within(1_000, async () => !(await b.keys.authenticate(secret, '127.0.0.1')).ok);
    t.diagnostic(`key refused on B ${ms.toFixed(1)} ms after its revocation on A`);
    assert.ok(ms < 500, `refused on B ${ms.toFixed(0)} ms after the revocation (notified)`);
    assert.equal((await b.keys.list(address))[0]?.status, 'revoked');
  });

  test('when the notification is lost, B refuses the revoked key once its TTL is up', async (t) => {
    const deaf = new ApiKeys(b.store, Date.now, silentFeed(300));
    const address = owner();
    const { view, secret } = await a.keys.create(address, { name: 'ttl', scope: 'read' });
    assert.equal((await deaf.authenticate(secret, '127.0.0.1')).ok, true);
    const revokedAt = performance.now();
    await a.keys.revoke(address, view.id);
    await waitFor(async () => !(await deaf.authenticate(secret, '127.0.0.1')).ok, 2_000, 5);
    const ms = performance.now() - revokedAt;
    t.diagnostic(`key refused ${ms.toFixed(1)} ms after its revocation, notification lost (TTL 300 ms)`);
    assert.ok(ms <= 300 + 250, `refused ${ms.toFixed(0)} ms after the revocation, within the 300 ms TTL`);
  });

  test('the poll reports a key revoked since its last read, as it does sessions', async () => {
    const address = owner();
    const { view } = await a.keys.create(address, { name: 'polled', scope: 'read' });
    await b.feed.poll();
    await a.keys.revoke(address, view.id);
    const seen: string[] = [];
    const stop = b.feed.subscribe((change) => {
      if (change.kind === 'apiKey') seen.push(change.id);
    });
    try {
      await b.feed.poll();
    } finally {
      stop();
    }
    assert.ok(seen.includes(view.id), `the poll right after the revocation reports it (${seen.join(', ')})`);
  });

  test('a session issued on A verifies on B; a logout on A is refused on B when notified', async (t) => {
    const { token } = await a.sessions.issue(owner());
    const session = await b.sessions.verify(token);
    assert.ok(session !== null);
    await a.sessions.revoke(session);
    const ms = await within(1_000, async () => (await b.sessions.verify(token)) === null);
    t.diagnostic(`session refused on B ${ms.toFixed(1)} ms after the logout on A`);
    assert.ok(ms < 500, `refused on B ${ms.toFixed(0)} ms after the logout`);
  });

  test('a logout whose notification is lost (B not listening) is refused on B by the next poll', async (t) => {
    const { token } = await a.sessions.issue(owner());
    const session = (await b.sessions.verify(token))!;
    // Drop B's LISTEN connection: notifications sent meanwhile are lost for it.
    const { rows } = await b.pool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN identity_changed%' AND pid <> pg_backend_pid()",
    );
    assert.equal(rows.length, 2, 'each gateway listens on a connection of its own');
    await b.pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()', ['LISTEN identity_changed%']);
    await waitFor(() => !b.feed.isListening() && !a.feed.isListening(), 2_000, 1);
    const revokedAt = performance.now();
    await a.sessions.revoke(session);
    await waitFor(async () => (await b.sessions.verify(token)) === null, 3_000, 5);
    const ms = performance.now() - revokedAt;
    t.diagnostic(`session refused on B ${ms.toFixed(1)} ms after the logout, notification lost (poll 1 s)`);
    assert.ok(ms < 2_000, `refused ${ms.toFixed(0)} ms after the logout, by the 1 s poll`);
    await waitFor(() => a.feed.isListening() && b.feed.isListening(), 3_000, 10);
  });

  test('a gateway started later loads the revocations made before it', async () => {
    const { token } = await a.sessions.issue(owner());
    await a.sessions.revoke((await a.sessions.verify(token))!);
    const late = new Sessions(b.store, await b.store.secret(SESSION_SECRET, () => Buffer.alloc(0)), ORIGIN, Date.now, silentFeed(1_000));
    assert.equal(await late.verify(token), null);
    late.close();
  });

  test('a nonce issued on A and used on A cannot be used on B; raced on both, exactly one signs in', async () => {
    const signed = async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const { nonce } = await a.siwe.issueNonce(account.address, '127.0.0.1');
      const message = createSiweMessage({
        domain: 'exchange.test', address: account.address, uri: ORIGIN, version: '1', chainId: 1, nonce, issuedAt: new Date(),
      });
      return { message, signature: await account.signMessage({ message }), address: account.address.toLowerCase() };
    };
    const once = await signed();
    assert.equal(await a.siwe.verify(once.message, once.signature), once.address);
    await assert.rejects(b.siwe.verify(once.message, once.signature), /nonce is unknown, used or expired/);
    const raced = await signed();
    const outcomes = await Promise.allSettled([a, b, a, b].map((g) => g.siwe.verify(raced.message, raced.signature)));
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
  });

  test('the outstanding-nonce cap counts what every gateway issued', async () => {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    for (let i = 0; i < 20; i++) await (i % 2 === 0 ? a : b).siwe.issueNonce(address, '198.51.100.9');
    await assert.rejects(async () => a.siwe.issueNonce(address, '198.51.100.9'), (e: unknown) => e instanceof ApiError && e.code === 'RATE_LIMITED');
  });
});

test('a credential the unreachable store cannot check is 503 UNAVAILABLE, not 401 or 500', async () => {
  const dead = postgresPool('postgres://postgres@127.0.0.1:1/postgres');
  const store = new PostgresIdentityStore(dead);
  const resolve = createIdentityResolver({
    apiKeys: new ApiKeys(store, Date.now, silentFeed(1_000)),
    sessions: new Sessions(store, Buffer.alloc(32, 1), ORIGIN, Date.now, silentFeed(1_000)),
    publicOrigin: ORIGIN,
    adminToken: null,
  });
  const unavailable = (e: unknown) => e instanceof ApiError && e.code === 'UNAVAILABLE' && e.status === 503;
  const key = `exk_${'ab'.repeat(8)}_${'A'.repeat(43)}`;
  await assert.rejects(resolve({ headers: { 'x-api-key': key }, ip: '127.0.0.1' } as never), unavailable);
  await assert.rejects(resolve({ headers: { authorization: 'Bearer a.b.c' }, ip: '127.0.0.1' } as never), unavailable);
  await dead.end();
});

test('the change feed reports what it is told, in order', async () => {
  const seen: IdentityChange[] = [];
  const stop = b.feed.subscribe((c) => seen.push(c));
  await a.store.revokeSession('feed-jti', 4_102_444_800_000);
  await a.store.deleteApiKey('no-such-key'); // nothing deleted: nothing notified
  await a.store.insertApiKey({
    id: 'feedkey000000001', address: owner(), name: 'n', scope: 'read', allowedIps: [], secretHash: Buffer.alloc(32),
    expiresAt: null, createdAt: Date.now(), lastUsedAt: null, revokedAt: null,
  });
  await waitFor(() => seen.some((c) => c.kind === 'apiKey'), 2_000, 5);
  stop();
  assert.deepEqual(seen.filter((c) => c.kind === 'apiKey' || c.jti === 'feed-jti').slice(0, 2), [
    { kind: 'session', jti: 'feed-jti', expiresAt: 4_102_444_800_000 },
    { kind: 'apiKey', id: 'feedkey000000001' },
  ]);
});
