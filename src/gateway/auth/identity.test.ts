/**
 * Access tiers end to end inside the gateway (identity.ts): the real createApp (identity hook,
 * rate limiter, access check, error envelope) with probe routes of every tier, driven with
 * Fastify's inject. This covers what the HTTP suites cannot yet reach because no read or trade
 * endpoint exists: a `read` key on a `trade` route is 403 INSUFFICIENT_SCOPE and the handler never
 * runs. Also: cookie CSRF on every tier, credential precedence, and admin-token checks. Sessions
 * and keys are real (AuthStore on a temporary SQLite file).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthStore } from '../../adapters/store/auth-store.ts';
import { openDatabase, type Db } from '../../adapters/store/database.ts';
import { loadSettings } from '../../config/env.ts';
import { createApp, type TypedApp } from '../app.ts';
import { sync } from '../../../test/support/synchronous.ts';
import { ApiKeys } from './api-keys.ts';
import type { Access } from './identity.ts';
import { Sessions } from './sessions.ts';

const ORIGIN = 'http://exchange.test';
const ADMIN = 'admin-token-for-identity-tests';
const ADDRESS = `0x${'5e'.repeat(20)}`;
const TIERS: readonly Access[] = ['public', 'session', 'read', 'trade', 'admin'];

let dir: string;
let db: Db;
let app: TypedApp;
let session: string;
let readKey: string;
let tradeKey: string;
let revokedKey: string;
const runs = new Map<string, number>();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'identity-unit-'));
  db = openDatabase(join(dir, 'auth.sqlite'));
  const store = new AuthStore(db);
  const settings = loadSettings({
    PORT: '0',
    DATA_DIR: dir,
    PUBLIC_ORIGIN: ORIGIN,
    ADMIN_TOKEN: ADMIN,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_ANONYMOUS: '1000000',
    RATE_LIMIT_ACCOUNT: '1000000',
  });
  const sessions = new Sessions(store, Buffer.alloc(32, 9), ORIGIN);
  const apiKeys = new ApiKeys(store);
  const identity = { sessions, apiKeys, publicOrigin: ORIGIN, adminToken: ADMIN };
  app = await createApp({ settings, logger: false, identity });
  for (const access of TIERS) {
    for (const method of ['GET', 'POST'] as const) {
      app.route({
        method,
        url: `/probe/${access}`,
        config: { access },
        handler: async () => {
          runs.set(`${method} ${access}`, (runs.get(`${method} ${access}`) ?? 0) + 1);
          return { ok: true };
        },
      });
    }
  }
  await app.ready();
  session = (await sessions.issue(ADDRESS)).token;
  readKey = sync(apiKeys.create(ADDRESS, { name: 'r', scope: 'read' })).secret;
  tradeKey = sync(apiKeys.create(ADDRESS, { name: 't', scope: 'trade' })).secret;
  const revoked = sync(apiKeys.create(ADDRESS, { name: 'x', scope: 'trade' }));
  apiKeys.revoke(ADDRESS, revoked.view.id);
  revokedKey = revoked.secret;
});

after(async () => {
  await app.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

type Credential = 'none' | 'bearer' | 'cookie' | 'readKey' | 'tradeKey' | 'revokedKey' | 'admin';

function headersFor(credential: Credential): Record<string, string> {
  switch (credential) {
    case 'none':
      return {};
    case 'bearer':
      return { authorization: `Bearer ${session}` };
    case 'cookie':
      return { cookie: `session=${session}` };
    case 'readKey':
      return { 'x-api-key': readKey };
    case 'tradeKey':
      return { 'x-api-key': tradeKey };
    case 'revokedKey':
      return { 'x-api-key': revokedKey };
    case 'admin':
      return { authorization: `Bearer ${ADMIN}` };
  }
}

async function probe(method: 'GET' | 'POST', access: Access, headers: Record<string, string>) {
  const before = runs.get(`${method} ${access}`) ?? 0;
  const res = await app.inject({
    method,
    url: `/probe/${access}`,
    headers: method === 'POST' ? { 'content-type': 'application/json', ...headers } : headers,
    payload: method === 'POST' ? '{}' : undefined,
  });
  const ran = (runs.get(`${method} ${access}`) ?? 0) - before;
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, ran };
}

const UNAUTH = '401:UNAUTHENTICATED';
const FORBIDDEN = '403:FORBIDDEN';
const SCOPE = '403:INSUFFICIENT_SCOPE';
// Columns: public, session, read, trade, admin. '200' runs the handler; 'status:code' refuses.
const MATRIX: Record<Credential, readonly string[]> = {
  none: ['200', UNAUTH, UNAUTH, UNAUTH, UNAUTH],
  bearer: ['200', '200', '200', '200', UNAUTH],
  cookie: ['200', '200', '200', '200', UNAUTH],
  readKey: ['200', FORBIDDEN, '200', SCOPE, UNAUTH],
  tradeKey: ['200', FORBIDDEN, '200', '200', UNAUTH],
  revokedKey: ['200', UNAUTH, UNAUTH, UNAUTH, UNAUTH],
  admin: ['200', UNAUTH, UNAUTH, UNAUTH, '200'],
};

describe('the access matrix: every credential on every tier, GET and POST', () => {
  for (const [credential, row] of Object.entries(MATRIX) as [Credential, readonly string[]][]) {
    TIERS.forEach((access, i) => {
      const expected = row[i]!;
      const [status, code] = expected.split(':');
      for (const method of ['GET', 'POST'] as const) {
        const outcome = code === undefined ? 'runs the handler' : `is ${status} ${code} and runs nothing`;
        test(`${credential} on a ${access} route (${method}) ${outcome}`, async () => {
          const r = await probe(method, access, headersFor(credential));
          assert.equal(r.status, Number(status), JSON.stringify(r.body));
          if (code === undefined) {
            assert.equal(r.ran, 1);
          } else {
            assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
            assert.equal(r.body.error, code);
            assert.equal(r.ran, 0, 'the handler must not run');
          }
        });
      }
    });
  }
});

describe('cookie CSRF', () => {
  for (const access of ['session', 'read', 'trade'] as const) {
    test(`a cookie POST to a ${access} route from another Origin is 403 and runs nothing`, async () => {
      const origins = ['https://evil.example', 'null', 'http://exchange.test:8080', 'https://exchange.test'];
      for (const origin of origins) {
        const r = await probe('POST', access, { ...headersFor('cookie'), origin });
        assert.equal(r.status, 403, origin);
        assert.equal(r.body.error, 'FORBIDDEN');
        assert.equal(r.ran, 0);
      }
    });

    test(`a cookie POST to a ${access} route from PUBLIC_ORIGIN, or with no Origin, runs`, async () => {
      assert.equal((await probe('POST', access, { ...headersFor('cookie'), origin: ORIGIN })).ran, 1);
      assert.equal((await probe('POST', access, headersFor('cookie'))).ran, 1);
    });
  }

  test('a Bearer POST from another Origin is not a CSRF case and runs', async () => {
    const r = await probe('POST', 'trade', { ...headersFor('bearer'), origin: 'https://evil.example' });
    assert.equal(r.status, 200);
    assert.equal(r.ran, 1);
  });
});

describe('credential precedence', () => {
  test('an API key wins over a session: a read key plus a session cookie is read-scoped', async () => {
    const r = await probe('POST', 'trade', { ...headersFor('readKey'), ...headersFor('cookie') });
    assert.equal(r.status, 403);
    assert.equal(r.body.error, 'INSUFFICIENT_SCOPE');
  });

  test('a revoked key is not rescued by a valid Bearer session', async () => {
    const r = await probe('GET', 'read', { ...headersFor('revokedKey'), ...headersFor('bearer') });
    assert.equal(r.status, 401);
    assert.equal(r.body.error, 'UNAUTHENTICATED');
  });

  test('an admin token of the right length but wrong content is refused', async () => {
    const wrong = ADMIN.slice(0, -1) + (ADMIN.endsWith('s') ? 't' : 's');
    const attempts = [`Bearer ${wrong}`, `bearer ${wrong}`, ADMIN, `Bearer ${ADMIN}x`, 'Bearer '];
    for (const authorization of attempts) {
      const r = await probe('POST', 'admin', { authorization });
      assert.equal(r.status, 401, authorization);
      assert.equal(r.ran, 0);
    }
  });
});
