/**
 * Unit tests of SiweVerifier's clock-dependent rules (decisions.md "Access"): a nonce lives
 * exactly 5 minutes, the outstanding-nonce cap per address, the 30-second skew on issued-at and
 * the expiration boundary. The verifier runs over a real AuthStore on a temporary SQLite file
 * (openDatabase) with a fake clock; messages are real EIP-4361 text signed by a real key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { AuthStore } from '../../adapters/store/auth-store.ts';
import { openDatabase, type Db } from '../../adapters/store/database.ts';
import { ApiError } from '../errors.ts';
import { sync } from '../../../test/support/synchronous.ts';
import { NONCE_TTL_MS, SiweVerifier } from './siwe.ts';

const ORIGIN = 'http://exchange.test';
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

let dir: string;
let db: Db;
let store: AuthStore;
let now = T0;
let verifier: SiweVerifier;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'siwe-unit-'));
  db = openDatabase(join(dir, 'auth.sqlite'));
  store = new AuthStore(db);
  verifier = new SiweVerifier(store, { publicOrigin: ORIGIN, chainId: 1 }, () => now);
});

after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Over SQLite a nonce is issued synchronously. */
const issueNonce = (address: string, requester: string) => sync(verifier.issueNonce(address, requester));

interface Fields {
  issuedAt?: number;
  expirationTime?: number;
}

/** A fresh key, a nonce issued at the current fake time, and a signed message. */
async function signedMessage(fields: Fields = {}) {
  const account = privateKeyToAccount(generatePrivateKey());
  const { nonce, expiresAt } = issueNonce(account.address, '127.0.0.1');
  const message = createSiweMessage({
    domain: 'exchange.test',
    address: account.address,
    uri: ORIGIN,
    version: '1',
    chainId: 1,
    nonce,
    issuedAt: new Date(fields.issuedAt ?? now),
    expirationTime: fields.expirationTime === undefined ? undefined : new Date(fields.expirationTime),
  });
  const signature = await account.signMessage({ message });
  return { message, signature, address: account.address, nonce, expiresAt };
}

async function refused(promise: Promise<unknown>, reason: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, 'UNAUTHENTICATED');
    assert.equal(e.status, 401);
    assert.match(e.message, reason);
    return true;
  });
}

describe('nonce lifetime', () => {
  test('a nonce expires 5 minutes after it was issued', async () => {
    now = T0;
    const m = await signedMessage();
    assert.equal(m.expiresAt, T0 + NONCE_TTL_MS);
    assert.equal(NONCE_TTL_MS, 5 * 60_000);
  });

  test('a nonce is accepted 1 ms before its 5 minutes are up', async () => {
    now = T0;
    const m = await signedMessage();
    now = T0 + NONCE_TTL_MS - 1;
    assert.equal(await verifier.verify(m.message, m.signature), m.address.toLowerCase());
  });

  test('a nonce is refused once its 5 minutes are up, and stays refused', async () => {
    now = T0;
    const m = await signedMessage();
    now = T0 + NONCE_TTL_MS;
    await refused(verifier.verify(m.message, m.signature), /nonce is unknown, used or expired/);
    now = T0 + 1000;
    await refused(verifier.verify(m.message, m.signature), /nonce/);
  });
});

describe('nonce issuance', () => {
  test('nonces are 24 alphanumeric characters bound to the lower-case address', () => {
    now = T0;
    const account = privateKeyToAccount(generatePrivateKey());
    const { nonce } = issueNonce(account.address, '127.0.0.1');
    assert.match(nonce, /^[A-Za-z0-9]{24}$/);
    const record = store.takeNonce(nonce);
    assert.equal(record?.address, account.address.toLowerCase());
    assert.equal(record?.issuedAt, T0);
  });

  test('an address may hold 20 outstanding nonces; the 21st is rate limited until they expire', () => {
    now = T0;
    const address = privateKeyToAccount(generatePrivateKey()).address;
    for (let i = 0; i < 20; i++) issueNonce(address, '127.0.0.1');
    assert.throws(() => issueNonce(address, '127.0.0.1'), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 'RATE_LIMITED');
      assert.equal(e.status, 429);
      return true;
    });
    now = T0 + NONCE_TTL_MS;
    assert.match(issueNonce(address, '127.0.0.1').nonce, /^[A-Za-z0-9]{24}$/);
  });

  test('the cap is per requester: 20 nonces another client asked for an address do not lock its owner out', () => {
    now = T0;
    const address = privateKeyToAccount(generatePrivateKey()).address;
    for (let i = 0; i < 20; i++) issueNonce(address, '198.51.100.7');
    assert.throws(() => issueNonce(address, '198.51.100.7'), ApiError);
    // Before: the owner's own request was refused 429 for the next five minutes.
    assert.match(issueNonce(address, '203.0.113.9').nonce, /^[A-Za-z0-9]{24}$/);
  });

  test('a malformed address gets no nonce', () => {
    for (const bad of ['0x12', 'hello', `0x${'g'.repeat(40)}`]) {
      const isValidationError = (e: unknown) => e instanceof ApiError && e.code === 'VALIDATION_ERROR';
      assert.throws(() => issueNonce(bad, '127.0.0.1'), isValidationError);
    }
  });
});

describe('message times against the fake clock', () => {
  test('issued-at up to 30 s ahead of the clock is accepted (clock skew)', async () => {
    now = T0;
    const m = await signedMessage({ issuedAt: T0 + 30_000 });
    assert.equal(await verifier.verify(m.message, m.signature), m.address.toLowerCase());
  });

  test('issued-at more than 30 s ahead of the clock is refused', async () => {
    now = T0;
    const m = await signedMessage({ issuedAt: T0 + 30_001 });
    await refused(verifier.verify(m.message, m.signature), /future/);
  });

  test('issued-at more than 30 s before the nonce is refused', async () => {
    now = T0;
    const m = await signedMessage({ issuedAt: T0 - 30_001 });
    await refused(verifier.verify(m.message, m.signature), /before the nonce/);
  });

  test('an expiration time equal to the clock is refused; 1 ms later is accepted', async () => {
    now = T0;
    const expired = await signedMessage({ expirationTime: T0 });
    await refused(verifier.verify(expired.message, expired.signature), /expired/);
    const live = await signedMessage({ expirationTime: T0 + 1 });
    assert.equal(await verifier.verify(live.message, live.signature), live.address.toLowerCase());
  });
});
