/**
 * Unit tests of ApiKeys with a fake clock over a real AuthStore on a temporary SQLite file:
 * expiry (status `expired` and authentication refused from the expiry instant on), lastUsedAt
 * (set in memory on every use, written to the store at most once a minute), revocation that
 * survives a reload, and the IP pin's address forms (IPv4-mapped IPv6, CIDR, IPv6 peers).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthStore } from '../../adapters/store/auth-store.ts';
import { openDatabase, type Db } from '../../adapters/store/database.ts';
import { ApiError } from '../errors.ts';
import { synchronous } from '../../../test/support/synchronous.ts';
import { API_KEY_LIMITS, ApiKeys, normaliseIp } from './api-keys.ts';

const DAY_MS = 86_400_000;
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
const OWNER = `0x${'12'.repeat(20)}`;

let dir: string;
let db: Db;
let store: AuthStore;
let now = T0;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'api-keys-unit-'));
  db = openDatabase(join(dir, 'auth.sqlite'));
  store = new AuthStore(db);
});

after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh instance loads every key from the store (what a restart sees); over SQLite every answer is synchronous. */
const keys = () => synchronous(new ApiKeys(store, () => now));

describe('expiry', () => {
  test('a key with expiresInDays 1 works until the last millisecond and is expired from then on', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'day', scope: 'read', expiresInDays: 1 });
    assert.equal(view.expiresAt, T0 + DAY_MS);
    assert.equal(view.status, 'active');
    now = T0 + DAY_MS - 1;
    assert.equal(k.authenticate(secret, '127.0.0.1').ok, true);
    assert.equal(k.isActive(view.id), true);
    now = T0 + DAY_MS;
    assert.deepEqual(k.authenticate(secret, '127.0.0.1'), {
      ok: false,
      code: 'UNAUTHENTICATED',
      message: 'API key is expired',
    });
    assert.equal(k.isActive(view.id), false);
    assert.equal(k.list(OWNER).find((v) => v.id === view.id)?.status, 'expired');
    assert.equal(keys().list(OWNER).find((v) => v.id === view.id)?.status, 'expired', 'after a reload too');
  });

  test('a key without expiresInDays never expires', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'forever', scope: 'trade' });
    assert.equal(view.expiresAt, null);
    now = T0 + 10 * 365 * DAY_MS;
    assert.equal(k.authenticate(secret, '127.0.0.1').ok, true);
  });

  test('expired keys do not count toward the active-key cap', () => {
    now = T0;
    const owner = `0x${'34'.repeat(20)}`;
    const k = keys();
    for (let i = 0; i < API_KEY_LIMITS.maxActivePerAccount; i++) {
      k.create(owner, { name: `k${i}`, scope: 'read', expiresInDays: 1 });
    }
    const isConflict = (e: unknown) => e instanceof ApiError && e.code === 'CONFLICT' && e.status === 409;
    assert.throws(() => k.create(owner, { name: 'over', scope: 'read' }), isConflict);
    now = T0 + DAY_MS;
    assert.equal(k.create(owner, { name: 'after expiry', scope: 'read' }).view.status, 'active');
  });
});

describe('lastUsedAt', () => {
  test('is null until the key is used, then the time of the latest use', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'used', scope: 'read' });
    assert.equal(view.lastUsedAt, null);
    now = T0 + 5_000;
    assert.equal(k.authenticate(secret, '127.0.0.1').ok, true);
    assert.equal(k.list(OWNER).find((v) => v.id === view.id)?.lastUsedAt, T0 + 5_000);
    now = T0 + 9_000;
    k.authenticate(secret, '127.0.0.1');
    assert.equal(k.list(OWNER).find((v) => v.id === view.id)?.lastUsedAt, T0 + 9_000);
  });

  test('is written to the store at most once a minute per key', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'throttled', scope: 'read' });
    const stored = () => keys().list(OWNER).find((v) => v.id === view.id)?.lastUsedAt;
    now = T0 + 1_000;
    k.authenticate(secret, '127.0.0.1');
    assert.equal(stored(), T0 + 1_000, 'the first use is written');
    now = T0 + 30_000;
    k.authenticate(secret, '127.0.0.1');
    assert.equal(stored(), T0 + 1_000, 'a use within the minute is not written');
    now = T0 + 61_000;
    k.authenticate(secret, '127.0.0.1');
    assert.equal(stored(), T0 + 61_000, 'a use a minute later is written');
  });

  test('a refused attempt does not mark the key used', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'pinned', scope: 'read', allowedIps: ['10.0.0.1'] });
    assert.equal(k.authenticate(secret, '127.0.0.1').ok, false);
    const altered = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    assert.equal(k.authenticate(altered, '10.0.0.1').ok, false);
    assert.equal(k.list(OWNER).find((v) => v.id === view.id)?.lastUsedAt, null);
  });
});

describe('revocation', () => {
  test('a revoked key is refused at once and after a reload', () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'gone', scope: 'trade' });
    now = T0 + 1;
    assert.equal(k.revoke(OWNER, view.id).status, 'revoked');
    const refused = { ok: false, code: 'UNAUTHENTICATED', message: 'API key is revoked' };
    assert.deepEqual(k.authenticate(secret, '127.0.0.1'), refused);
    assert.equal(keys().authenticate(secret, '127.0.0.1').ok, false);
  });

  test("another account's key id is not found and stays active", () => {
    now = T0;
    const k = keys();
    const { view, secret } = k.create(OWNER, { name: 'mine', scope: 'read' });
    const isNotFound = (e: unknown) => e instanceof ApiError && e.code === 'NOT_FOUND' && e.status === 404;
    assert.throws(() => k.revoke(`0x${'99'.repeat(20)}`, view.id), isNotFound);
    assert.equal(k.authenticate(secret, '127.0.0.1').ok, true);
  });
});

describe('the IP pin', () => {
  let ownerSeq = 0;
  const cases: [allowedIps: string[], peer: string, ok: boolean][] = [
    [['127.0.0.1'], '127.0.0.1', true],
    [['127.0.0.1'], '::ffff:127.0.0.1', true],
    [['::ffff:127.0.0.1'], '127.0.0.1', true],
    [['127.0.0.0/8'], '127.255.0.9', true],
    [['127.0.0.0/8'], '::ffff:127.1.2.3', true],
    [['10.0.0.0/8'], '127.0.0.1', false],
    [['10.0.0.1'], '10.0.0.2', false],
    [['2001:db8::/32'], '2001:db8::1', true],
    [['2001:db8::/32'], '2001:db9::1', false],
    [['::1'], '::1', true],
    [['::1'], '127.0.0.1', false],
    [['10.0.0.1'], '', false],
    [['10.0.0.1'], 'garbage', false],
  ];
  for (const [allowedIps, peer, ok] of cases) {
    const verb = ok ? 'accepts' : 'refuses';
    test(`a key pinned to ${allowedIps.join(',')} ${verb} peer ${JSON.stringify(peer)}`, () => {
      now = T0;
      const k = keys();
      const owner = `0x${(++ownerSeq).toString(16).padStart(40, '0')}`;
      const { secret } = k.create(owner, { name: 'pin', scope: 'read', allowedIps });
      const r = k.authenticate(secret, peer);
      assert.equal(r.ok, ok);
      if (!r.ok) assert.equal(r.code, 'IP_NOT_ALLOWED');
    });
  }

  test('normaliseIp strips only the IPv4-mapped prefix', () => {
    assert.equal(normaliseIp('::ffff:10.1.2.3'), '10.1.2.3');
    assert.equal(normaliseIp('::FFFF:10.1.2.3'), '10.1.2.3');
    assert.equal(normaliseIp('::1'), '::1');
    assert.equal(normaliseIp('10.1.2.3'), '10.1.2.3');
    assert.equal(normaliseIp('::ffff:0a01:0203'), '::ffff:0a01:0203');
  });
});

describe('kept keys', () => {
  test('a create and revoke loop keeps at most maxKeptPerAccount keys: the oldest ended ones are forgotten, active ones never', () => {
    now = T0 + 400 * DAY_MS;
    const owner = `0x${'5e'.repeat(20)}`;
    const k = keys();
    const kept = k.create(owner, { name: 'kept', scope: 'read' });
    const ended: string[] = [];
    for (let i = 0; i < API_KEY_LIMITS.maxKeptPerAccount + 20; i++) {
      now += 1;
      const { view } = k.create(owner, { name: `loop-${i}`, scope: 'trade' });
      k.revoke(owner, view.id);
      ended.push(view.id);
    }
    const listed = k.list(owner);
    assert.equal(listed.length, API_KEY_LIMITS.maxKeptPerAccount);
    assert.ok(listed.some((v) => v.id === kept.view.id && v.status === 'active'), 'the active key stays');
    const expected = ended.slice(-(API_KEY_LIMITS.maxKeptPerAccount - 1));
    assert.deepEqual(listed.filter((v) => v.status !== 'active').map((v) => v.id).sort(), [...expected].sort(), 'the newest ended');
    assert.equal(keys().list(owner).length, API_KEY_LIMITS.maxKeptPerAccount, 'forgotten in the store too');
    assert.equal(k.authenticate(kept.secret, '127.0.0.1').ok, true);
  });
});
