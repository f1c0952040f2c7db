/**
 * Session tokens over HTTP (research/reliability.md 7.6 items 33-34): logout revokes the token
 * whether it comes back as Bearer or as the `session` cookie, also after a restart on the same
 * DATA_DIR; revocation is per token; a Bearer request never gets a cookie; a bad Bearer token
 * is not rescued by a good cookie. Real service on loopback via test/support/harness.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, signIn, startService, type Reply, type TestService } from '../support/harness.ts';

const ENV = { RATE_LIMIT_ANONYMOUS: '1000000', RATE_LIMIT_ACCOUNT: '1000000' };

let dataDir: string;
let svc: TestService;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'session-api-'));
  svc = await startService(ENV, dataDir);
});

after(async () => {
  await svc.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const cookie = (token: string) => ({ cookie: `session=${token}` });

function assertUnauthenticated(reply: Reply): void {
  assert.equal(reply.status, 401, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, 'UNAUTHENTICATED');
}

describe('logout', () => {
  test('after a Bearer logout the token is refused as Bearer and as cookie', async () => {
    const trader = await signIn(svc.url);
    assert.equal((await call(svc.url, '/wallet/balance', { token: trader.token })).status, 200);
    const out = await call(svc.url, '/auth/logout', { method: 'POST', token: trader.token });
    assert.equal(out.status, 200);
    assert.deepEqual(out.body, { ok: true });
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { token: trader.token }));
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers: cookie(trader.token) }));
    assertUnauthenticated(await call(svc.url, '/perps/me/api-keys', { headers: cookie(trader.token) }));
  });

  test('after a cookie logout the token is refused as cookie and as Bearer', async () => {
    const trader = await signIn(svc.url);
    const out = await call(svc.url, '/auth/logout', { method: 'POST', headers: cookie(trader.token) });
    assert.equal(out.status, 200);
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers: cookie(trader.token) }));
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { token: trader.token }));
  });

  test('logout clears the session cookie', async () => {
    const trader = await signIn(svc.url);
    const out = await call(svc.url, '/auth/logout', { method: 'POST', headers: cookie(trader.token) });
    const cookies = out.headers.getSetCookie();
    assert.equal(cookies.length, 1, cookies.join(' | '));
    const [pair = '', ...attributes] = cookies[0]!.split(/;\s*/);
    assert.equal(pair, 'session=');
    const expires = attributes.find((a) => a.toLowerCase().startsWith('expires='));
    assert.ok(expires !== undefined && Date.parse(expires.slice(8)) <= Date.now(), cookies[0]);
    assert.ok(attributes.map((a) => a.toLowerCase()).includes('path=/'), cookies[0]);
  });

  test('a logout sending an API key beside its session cookie still revokes the session', async () => {
    const trader = await signIn(svc.url);
    const key = await call(svc.url, '/perps/me/api-keys', { token: trader.token, body: { name: 'beside', scope: 'read' } });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const headers = { ...cookie(trader.token), 'x-api-key': key.body.secret as string };
    assert.equal((await call(svc.url, '/auth/logout', { method: 'POST', headers })).status, 200);
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers: cookie(trader.token) }));
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { token: trader.token }));
  });

  test('logout revokes only that token: another session of the same account keeps working', async () => {
    const first = await signIn(svc.url);
    const second = await signIn(svc.url, first.privateKey);
    assert.equal(second.address, first.address);
    await call(svc.url, '/auth/logout', { method: 'POST', token: first.token });
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { token: first.token }));
    assert.equal((await call(svc.url, '/wallet/balance', { token: second.token })).status, 200);
  });

  test('a logged-out token stays refused after a restart on the same DATA_DIR', async () => {
    const out = await signIn(svc.url);
    const live = await signIn(svc.url);
    await call(svc.url, '/auth/logout', { method: 'POST', token: out.token });
    await svc.close();
    svc = await startService(ENV, dataDir);
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { token: out.token }));
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers: cookie(out.token) }));
    assert.equal((await call(svc.url, '/wallet/balance', { token: live.token })).status, 200);
  });

  test('logout without credentials succeeds and changes nothing', async () => {
    const out = await call(svc.url, '/auth/logout', { method: 'POST' });
    assert.equal(out.status, 200);
    assert.deepEqual(out.body, { ok: true });
  });
});

describe('cookies and token sources', () => {
  test('a Bearer token never sets a cookie on other routes', async () => {
    const trader = await signIn(svc.url);
    const requests: [string, { method?: string; body?: unknown }][] = [
      ['/wallet/balance', {}],
      ['/wallet/assets', {}],
      ['/wallet/deposit-address', {}],
      ['/perps/me/api-keys', {}],
      ['/perps/me/api-keys', { body: { name: 'bot', scope: 'read' } }],
      ['/wallet/transfer', { body: { from: 'wallet', to: 'perps', amount: '1' } }],
      ['/health', {}],
      ['/nope', {}],
    ];
    for (const [path, options] of requests) {
      const reply = await call(svc.url, path, { ...options, token: trader.token });
      assert.ok(reply.status < 500, `${path}: ${reply.status}`);
      assert.deepEqual(reply.headers.getSetCookie(), [], `${path} set a cookie`);
    }
  });

  test('a cookie-authenticated request is not answered with a fresh cookie either', async () => {
    const trader = await signIn(svc.url);
    const reply = await call(svc.url, '/wallet/balance', { headers: cookie(trader.token) });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.headers.getSetCookie(), []);
  });

  test('an invalid Bearer token is not rescued by a valid cookie', async () => {
    const trader = await signIn(svc.url);
    const headers = { ...cookie(trader.token), authorization: 'Bearer not.a.token' };
    assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers }));
  });

  test('malformed Authorization headers and cookies are 401, never 5xx', async () => {
    const trader = await signIn(svc.url);
    const headerSets: Record<string, string>[] = [
      { authorization: `Bearer  ${trader.token}` },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${trader.token}x` },
      { authorization: `Bearer ${trader.token.split('.').slice(0, 2).join('.')}.` },
      { cookie: 'session=' },
      { cookie: `session=${trader.token}=` },
      { cookie: `session=${'a'.repeat(3000)}` },
      { cookie: `session="${trader.token}` },
    ];
    for (const headers of headerSets) {
      assertUnauthenticated(await call(svc.url, '/wallet/balance', { headers }));
    }
    assert.equal((await call(svc.url, '/wallet/balance', { headers: cookie(trader.token) })).status, 200);
  });
});
