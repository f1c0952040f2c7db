/**
 * A default start (no PUBLIC_ORIGIN) accepts what a browser on the address it listens on sends
 * (config/env.ts: PUBLIC_ORIGIN defaults to http://HOST:PORT, http://127.0.0.1:8080 by default):
 * the nonce names that origin, a real SIWE sign-in for it succeeds, and the Origin rule for
 * cookie state changes (gateway/auth/identity.ts) admits it and refuses the other loopback
 * spelling, http://localhost:PORT, whose SIWE domain is refused too. Real service on loopback, on a
 * fixed free port (the origin carries the port), real secp256k1 keys.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generatePrivateKey } from 'viem/accounts';
import { call, freePort, siweMessage, startService, type TestService } from '../support/harness.ts';

describe('a default start (PUBLIC_ORIGIN unset, HOST 127.0.0.1)', () => {
  let svc: TestService;
  let origin: string;
  before(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    svc = await startService({ PORT: String(port), PUBLIC_ORIGIN: '' });
  });
  after(() => svc?.close());

  test('the public origin is http://127.0.0.1:PORT, and the nonce says so', async () => {
    assert.equal(svc.settings.publicOrigin, origin);
    const nonce = await call(origin, '/auth/nonce', { body: { walletAddress: '0x000000000000000000000000000000000000dEaD' } });
    assert.equal(nonce.status, 200);
    assert.equal(nonce.body.domain, new URL(origin).host);
    assert.equal(nonce.body.uri, origin);
  });

  test('a browser on http://127.0.0.1:PORT signs in, and its cookie state changes pass the Origin rule', async () => {
    const { message, signature, account } = await siweMessage(origin, generatePrivateKey(), { domain: new URL(origin).host, uri: origin });
    const signed = await call(origin, '/auth/siwe', { body: { message, signature }, headers: { origin } });
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    assert.equal(signed.body.walletAddress, account.address);
    const cookie = `session=${signed.body.token}`;
    const transfer = { from: 'wallet', to: 'perps', amount: '1' };
    const other = origin.replace('127.0.0.1', 'localhost');
    const refused = await call(origin, '/wallet/transfer', { body: transfer, headers: { cookie, origin: other } });
    assert.deepEqual([refused.status, refused.body.error], [403, 'FORBIDDEN'], 'another origin, even the other loopback spelling');
    const admitted = await call(origin, '/wallet/transfer', { body: transfer, headers: { cookie, origin } });
    assert.deepEqual([admitted.status, admitted.body.error], [400, 'INSUFFICIENT_BALANCE'], 'past the Origin rule to the core');
    const out = await call(origin, '/auth/logout', { method: 'POST', headers: { cookie, origin } });
    assert.equal(out.status, 200);
  });

  test('a message for http://localhost:PORT is refused', async () => {
    const other = origin.replace('127.0.0.1', 'localhost');
    const { message, signature } = await siweMessage(origin, generatePrivateKey(), { domain: new URL(other).host, uri: other });
    const r = await call(origin, '/auth/siwe', { body: { message, signature } });
    assert.equal(r.status, 401);
    assert.equal(r.body.error, 'UNAUTHENTICATED');
    assert.match(r.body.message, /domain must be 127\.0\.0\.1:\d+/);
  });
});
