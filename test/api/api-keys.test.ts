/**
 * API keys over HTTP (research/reliability.md 5.1 and 7.7, decisions.md "Access"): the secret
 * is shown once and never stored in plaintext (every byte of the SQLite files is scanned while
 * the service runs, WAL included), keys can never manage keys or move money, revoked, unknown
 * and altered keys are 401, input validation is strict, and the IP pin cannot be spoofed with
 * X-Forwarded-For from an untrusted peer but is honoured behind a trusted proxy (TRUST_PROXY).
 *
 * A key that authenticates is recognised by 403 FORBIDDEN on a session-only route (as opposed
 * to 401, not recognised, or 403 IP_NOT_ALLOWED, pinned elsewhere); scopes are also checked on
 * the perps order actions (trade) and account reads (read), with open orders read back to show
 * a refused action changed nothing. Two real services on loopback, each with its own temp
 * DATA_DIR, both with rate limits raised out of the way.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  call,
  fund,
  signIn,
  startService,
  type Reply,
  type TestService,
  type Trader,
} from '../support/harness.ts';

const ENV = { RATE_LIMIT_ANONYMOUS: '1000000', RATE_LIMIT_ACCOUNT: '1000000' };
const TWENTY_ONE_IPS = Array.from({ length: 21 }, (_, i) => `10.0.${i}.1`);
const SECRET_FORMAT = /^exk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

let svc: TestService;
let proxied: TestService;

before(async () => {
  svc = await startService(ENV);
  proxied = await startService({ ...ENV, TRUST_PROXY: '127.0.0.1' });
});

after(async () => {
  await svc.close();
  await proxied.close();
});

function assertError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, code, reply.body.message);
}

async function createKey(trader: Trader, body: unknown, base = svc.url): Promise<Reply> {
  return call(base, '/perps/me/api-keys', { token: trader.token, body });
}

async function newKey(trader: Trader, body: Record<string, unknown> = {}, base = svc.url) {
  const reply = await createKey(trader, { name: 'bot', scope: 'read', ...body }, base);
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return { id: reply.body.id as string, secret: reply.body.secret as string, body: reply.body };
}

function revokeKey(trader: Trader, id: string): Promise<Reply> {
  return call(svc.url, `/perps/me/api-keys/${id}`, { method: 'DELETE', token: trader.token });
}

/** A session-only read: 403 FORBIDDEN when the key was recognised. */
function useKey(secret: string, headers: Record<string, string> = {}, base = svc.url): Promise<Reply> {
  return call(base, '/wallet/balance', { apiKey: secret, headers });
}

function assertRecognised(reply: Reply): void {
  assertError(reply, 403, 'FORBIDDEN');
}

describe('creating and listing keys', () => {
  test('creation answers 201 with the exk_ secret, the metadata and a message', async () => {
    const trader = await signIn(svc.url);
    const before = Date.now();
    const reply = await createKey(trader, { name: 'market maker', scope: 'trade' });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    const fields = ['allowedIps', 'createdAt', 'expiresAt', 'id', 'lastUsedAt', 'message', 'name', 'scope'];
    assert.deepEqual(Object.keys(reply.body).sort(), [...fields, 'secret', 'status']);
    const m = SECRET_FORMAT.exec(reply.body.secret);
    assert.ok(m !== null, reply.body.secret);
    assert.equal(m[1], reply.body.id);
    assert.equal(reply.body.name, 'market maker');
    assert.equal(reply.body.scope, 'trade');
    assert.equal(reply.body.status, 'active');
    assert.deepEqual(reply.body.allowedIps, []);
    assert.equal(reply.body.expiresAt, null);
    assert.equal(reply.body.lastUsedAt, null);
    const createdAt = Date.parse(reply.body.createdAt);
    assert.ok(createdAt >= before - 1 && createdAt <= Date.now(), reply.body.createdAt);
    assert.equal(typeof reply.body.message, 'string');
    assert.ok(reply.body.message.length > 0);
  });

  test('the list carries the metadata of every key and never a secret', async () => {
    const trader = await signIn(svc.url);
    const a = await newKey(trader, { name: 'a' });
    const b = await newKey(trader, { name: 'b', scope: 'trade', allowedIps: ['127.0.0.1'] });
    assertRecognised(await useKey(a.secret));
    const list = await call(svc.url, '/perps/me/api-keys', { token: trader.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((k: { id: string }) => k.id).sort(), [a.id, b.id].sort());
    const text = JSON.stringify(list.body);
    for (const secret of [a.secret, b.secret]) {
      assert.ok(!text.includes(secret));
      assert.ok(!text.includes(secret.slice(-43)));
    }
    for (const key of list.body) {
      const fields = ['allowedIps', 'createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'scope', 'status'];
      assert.deepEqual(Object.keys(key).sort(), fields);
    }
    const used = list.body.find((k: { id: string }) => k.id === a.id);
    assert.ok(used.lastUsedAt !== null, 'a key that authenticated has lastUsedAt');
  });

  test('another account never sees the keys', async () => {
    const owner = await signIn(svc.url);
    const other = await signIn(svc.url);
    await newKey(owner);
    const list = await call(svc.url, '/perps/me/api-keys', { token: other.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, []);
  });

  test('no byte of the SQLite files holds the plaintext secret; api_keys holds its SHA-256', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader, { name: 'scan-me' });
    assertRecognised(await useKey(key.secret));
    const files = readdirSync(svc.dataDir).filter((f) => f.startsWith('exchange.sqlite'));
    assert.ok(files.includes('exchange.sqlite'), files.join(', '));
    const all = Buffer.concat(readdirSync(svc.dataDir).map((f) => readFileSync(join(svc.dataDir, f))));
    // The public id is there (the scan sees the row), the secret and its random part are not.
    assert.ok(all.includes(Buffer.from(key.id)), 'the key id should be stored');
    assert.ok(!all.includes(Buffer.from(key.secret)), 'plaintext secret found in the data directory');
    assert.ok(!all.includes(Buffer.from(key.secret.slice(-43))), 'secret body found in the data directory');
    assert.ok(!all.includes(Buffer.from(key.secret, 'utf16le')), 'UTF-16 secret found in the data directory');

    const db = new Database(join(svc.dataDir, 'exchange.sqlite'), { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare('SELECT * FROM api_keys WHERE id = ?').get(key.id) as Record<string, unknown>;
      assert.ok(row !== undefined);
      assert.deepEqual(row.secret_hash, createHash('sha256').update(key.secret).digest());
      for (const [column, value] of Object.entries(row)) {
        const text = Buffer.isBuffer(value) ? value.toString('latin1') : String(value);
        assert.ok(!text.includes(key.secret.slice(-43)), `column ${column} holds the secret`);
      }
    } finally {
      db.close();
    }
  });
});

describe('what a key may not do', () => {
  test('read and trade keys are recognised but get 403 FORBIDDEN on every session-only route', async () => {
    const trader = await signIn(svc.url);
    const read = await newKey(trader, { scope: 'read' });
    const trade = await newKey(trader, { scope: 'trade' });
    const routes: [method: string, path: string, body?: unknown][] = [
      ['GET', '/wallet/balance'],
      ['GET', '/wallet/assets'],
      ['GET', '/wallet/history'],
      ['POST', '/wallet/transfer', { from: 'wallet', to: 'perps', amount: '1' }],
      ['POST', '/wallet/withdraw', { amount: '1' }],
      ['GET', '/perps/me/api-keys'],
      ['POST', '/perps/me/api-keys', { name: 'minted-by-key', scope: 'trade' }],
      ['DELETE', `/perps/me/api-keys/${read.id}`],
      ['DELETE', `/perps/me/api-keys/${trade.id}`],
    ];
    for (const key of [read, trade]) {
      for (const [method, path, body] of routes) {
        const reply = await call(svc.url, path, { method, body, apiKey: key.secret });
        assert.equal(reply.status, 403, `${method} ${path}: ${JSON.stringify(reply.body)}`);
        assert.equal(reply.body.error, 'FORBIDDEN', `${method} ${path}`);
      }
    }
    const list = await call(svc.url, '/perps/me/api-keys', { token: trader.token });
    assert.equal(list.body.length, 2, 'a key minted no key');
    assert.ok(list.body.every((k: { status: string }) => k.status === 'active'), 'a key revoked no key');
  });

  test('a key sent alongside a valid session does not borrow the session', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader);
    const reply = await call(svc.url, '/wallet/balance', { apiKey: key.secret, token: trader.token });
    assertError(reply, 403, 'FORBIDDEN');
  });

  test('a revoked key is refused with 401 at once and is listed as revoked', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader);
    assertRecognised(await useKey(key.secret));
    const revoke = () => revokeKey(trader, key.id);
    const revoked = await revoke();
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    assert.equal(revoked.body.status, 'revoked');
    assert.equal(revoked.body.secret, undefined);
    assertError(await useKey(key.secret), 401, 'UNAUTHENTICATED');
    const list = await call(svc.url, '/perps/me/api-keys', { token: trader.token });
    assert.equal(list.body.find((k: { id: string }) => k.id === key.id).status, 'revoked');
    const again = await revoke();
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'revoked');
  });

  test('unknown, altered and right-prefix-wrong-body keys are refused with 401', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader);
    const [, id = '', body = ''] = SECRET_FORMAT.exec(key.secret) ?? [];
    const swap = (c: string) => (c === 'A' ? 'B' : 'A');
    const other = await newKey(trader);
    const forged = [
      `exk_${'0'.repeat(16)}_${'A'.repeat(43)}`,
      `exk_${id}_${body.slice(0, -1)}${swap(body.at(-1)!)}`,
      `exk_${id}_${swap(body[0]!)}${body.slice(1)}`,
      `exk_${id}_${'A'.repeat(43)}`,
      `exk_${id}_${other.secret.slice(-43)}`,
      `exk_${id}_${body}x`,
      `exk_${id}_${body.slice(0, -1)}`,
      `exk_${id.slice(0, -1)}${id.at(-1) === 'a' ? 'b' : 'a'}_${body}`,
      `EXK_${id}_${body}`,
      'exk_',
      'hello',
    ];
    for (const secret of forged) {
      assert.notEqual(secret, key.secret);
      assertError(await useKey(secret), 401, 'UNAUTHENTICATED');
    }
    assertRecognised(await useKey(key.secret));
  });

  test('a bad key on a public route is harmless', async () => {
    const reply = await call(svc.url, '/health', { apiKey: 'exk_nonsense' });
    assert.equal(reply.status, 200);
  });
});

describe('creation input is validated strictly', () => {
  const bad: [name: string, body: unknown][] = [
    ['expiresInDays 0', { name: 'k', scope: 'read', expiresInDays: 0 }],
    ['expiresInDays 366', { name: 'k', scope: 'read', expiresInDays: 366 }],
    ['expiresInDays 1.5', { name: 'k', scope: 'read', expiresInDays: 1.5 }],
    ['expiresInDays "30" (a string)', { name: 'k', scope: 'read', expiresInDays: '30' }],
    ['expiresInDays -1', { name: 'k', scope: 'read', expiresInDays: -1 }],
    ['expiresInDays null', { name: 'k', scope: 'read', expiresInDays: null }],
    ['name missing', { scope: 'read' }],
    ['name empty', { name: '', scope: 'read' }],
    ['name of 65 characters', { name: 'n'.repeat(65), scope: 'read' }],
    ['name a number', { name: 7, scope: 'read' }],
    ['scope missing', { name: 'k' }],
    ['scope admin', { name: 'k', scope: 'admin' }],
    ['scope READ', { name: 'k', scope: 'READ' }],
    ['an unknown field', { name: 'k', scope: 'read', permissions: ['withdraw'] }],
    ['allowedIps a string', { name: 'k', scope: 'read', allowedIps: '10.0.0.1' }],
    ['allowedIps with 21 entries', { name: 'k', scope: 'read', allowedIps: TWENTY_ONE_IPS }],
  ];
  for (const [name, body] of bad) {
    test(`${name} is refused with 400 VALIDATION_ERROR`, async () => {
      const trader = await signIn(svc.url);
      assertError(await createKey(trader, body), 400, 'VALIDATION_ERROR');
      assert.deepEqual((await call(svc.url, '/perps/me/api-keys', { token: trader.token })).body, []);
    });
  }

  test('the boundaries expiresInDays 1 and 365 and a 64-character name are accepted', async () => {
    const trader = await signIn(svc.url);
    const one = await newKey(trader, { expiresInDays: 1 });
    assert.equal(Date.parse(one.body.expiresAt) - Date.parse(one.body.createdAt), 86_400_000);
    const year = await newKey(trader, { expiresInDays: 365 });
    assert.equal(Date.parse(year.body.expiresAt) - Date.parse(year.body.createdAt), 365 * 86_400_000);
    const long = await newKey(trader, { name: 'n'.repeat(64) });
    assert.equal(long.body.name, 'n'.repeat(64));
  });

  const invalidIps = [
    'not-an-ip', '10.0.0.256', '10.0.0', '010.0.0.1', '10.0.0.1/33', '10.0.0.1/', '10.0.0.1/-1',
    '10.0.0.0/8/8', '10.0.0.1/8a', '::1/129', '', ' 10.0.0.1', '10.0.0.1 ', 'localhost', '*',
  ];
  for (const ip of invalidIps) {
    test(`allowedIps entry ${JSON.stringify(ip)} is refused with 400`, async () => {
      const trader = await signIn(svc.url);
      const reply = await createKey(trader, { name: 'k', scope: 'read', allowedIps: [ip] });
      assertError(reply, 400, 'VALIDATION_ERROR');
    });
  }

  test('a non-string allowedIps entry is refused with 400', async () => {
    const trader = await signIn(svc.url);
    const reply = await createKey(trader, { name: 'k', scope: 'read', allowedIps: [10] });
    assertError(reply, 400, 'VALIDATION_ERROR');
  });
});

describe('the source-IP pin (peer 127.0.0.1, no trusted proxy)', () => {
  type Outcome = 'FORBIDDEN' | 'IP_NOT_ALLOWED';
  const cases: [allowedIps: string[], headers: Record<string, string>, expect: Outcome][] = [
    [['10.0.0.1'], {}, 'IP_NOT_ALLOWED'],
    [['10.0.0.1'], { 'x-forwarded-for': '10.0.0.1' }, 'IP_NOT_ALLOWED'],
    [['10.0.0.1'], { 'x-real-ip': '10.0.0.1' }, 'IP_NOT_ALLOWED'],
    [['10.0.0.1'], { forwarded: 'for=10.0.0.1' }, 'IP_NOT_ALLOWED'],
    [['10.0.0.0/8'], {}, 'IP_NOT_ALLOWED'],
    [['::1'], {}, 'IP_NOT_ALLOWED'],
    [['127.0.0.1'], {}, 'FORBIDDEN'],
    [['127.0.0.1'], { 'x-forwarded-for': '10.9.9.9' }, 'FORBIDDEN'],
    [['::ffff:127.0.0.1'], {}, 'FORBIDDEN'],
    [['127.0.0.0/8'], {}, 'FORBIDDEN'],
    [['10.0.0.1', '127.0.0.1'], {}, 'FORBIDDEN'],
  ];
  for (const [allowedIps, headers, expect] of cases) {
    const via = Object.keys(headers).length === 0 ? '' : ` with ${JSON.stringify(headers)}`;
    const outcome = expect === 'FORBIDDEN' ? 'is allowed (403 FORBIDDEN)' : 'gets 403 IP_NOT_ALLOWED';
    test(`a key pinned to ${allowedIps.join(', ')} used from 127.0.0.1${via} ${outcome}`, async () => {
      const trader = await signIn(svc.url);
      const key = await newKey(trader, { allowedIps });
      assertError(await useKey(key.secret, headers), 403, expect);
    });
  }

  test('an IPv4-mapped entry is stored in its IPv4 form', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader, { allowedIps: ['::FFFF:127.0.0.1', '10.1.0.0/16'] });
    assert.deepEqual(key.body.allowedIps, ['127.0.0.1', '10.1.0.0/16']);
  });

  test('a key used from a disallowed address is harmless on a public route', async () => {
    const trader = await signIn(svc.url);
    const key = await newKey(trader, { allowedIps: ['10.0.0.1'] });
    assert.equal((await call(svc.url, '/health', { apiKey: key.secret })).status, 200);
  });
});

describe('the source-IP pin behind a trusted proxy (TRUST_PROXY=127.0.0.1)', () => {
  const cases: [xff: string | null, expect: 'FORBIDDEN' | 'IP_NOT_ALLOWED'][] = [
    ['10.0.0.1', 'FORBIDDEN'],
    ['10.0.0.1, 127.0.0.1', 'FORBIDDEN'],
    [null, 'IP_NOT_ALLOWED'],
    ['10.0.0.2', 'IP_NOT_ALLOWED'],
    ['10.0.0.1, 203.0.113.7', 'IP_NOT_ALLOWED'],
    ['::ffff:10.0.0.1', 'FORBIDDEN'],
  ];
  for (const [xff, expect] of cases) {
    const header = xff === null ? 'no X-Forwarded-For' : `X-Forwarded-For ${JSON.stringify(xff)}`;
    test(`a key pinned to 10.0.0.1 with ${header} gets 403 ${expect}`, async () => {
      const trader = await signIn(proxied.url);
      const key = await newKey(trader, { allowedIps: ['10.0.0.1'] }, proxied.url);
      const headers: Record<string, string> = xff === null ? {} : { 'x-forwarded-for': xff };
      assertError(await useKey(key.secret, headers, proxied.url), 403, expect);
    });
  }
});

describe('scopes on the perps order and account endpoints', () => {
  let trader: Trader;
  let read: string;
  let trade: string;
  let order: { marketId: string; side: string; quantity: string; price: string };

  before(async () => {
    trader = await signIn(svc.url);
    await fund(svc.url, trader, '10000');
    const moved = await call(svc.url, '/wallet/transfer', {
      token: trader.token,
      body: { from: 'wallet', to: 'perps', amount: '10000' },
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    read = (await newKey(trader, { scope: 'read' })).secret;
    trade = (await newKey(trader, { scope: 'trade' })).secret;
    const markets = await call(svc.url, '/perps/markets');
    const btc = markets.body.find((m: { id: string }) => m.id === 'BTC-PERP');
    assert.ok(btc !== undefined, JSON.stringify(markets.body));
    // A resting bid 3% under the mark: inside any price band, never filled (no market maker).
    const price = (Number(btc.markPrice) * 0.97).toFixed(1);
    order = { marketId: 'BTC-PERP', side: 'buy', quantity: '0.01', price };
  });

  const openOrders = async () =>
    (await call(svc.url, '/perps/orders/open', { token: trader.token })).body as unknown[];

  test('a read key on every order action is 403 INSUFFICIENT_SCOPE and changes nothing', async () => {
    const placed = await call(svc.url, '/perps/orders', { apiKey: trade, body: order });
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    const id = placed.body.id as string;
    const actions: [path: string, body: unknown][] = [
      ['/perps/orders', order],
      ['/perps/orders/cancel-all', {}],
      [`/perps/orders/${id}/cancel`, undefined],
      ['/perps/positions/close', { marketId: 'BTC-PERP' }],
      ['/perps/quotes/bulk', { marketId: 'BTC-PERP', cancelAll: true, quotes: [] }],
    ];
    for (const [path, body] of actions) {
      const reply = await call(svc.url, path, { method: 'POST', body, apiKey: read });
      assertError(reply, 403, 'INSUFFICIENT_SCOPE');
    }
    const open = await openOrders();
    assert.deepEqual(open.map((o) => (o as { id: string }).id), [id]);
    const cancelled = await call(svc.url, `/perps/orders/${id}/cancel`, { method: 'POST', apiKey: trade });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.deepEqual(await openOrders(), []);
  });

  test('a read key reads the account and previews orders', async () => {
    const reads = [
      '/perps/orders',
      '/perps/orders/open',
      '/perps/positions',
      '/perps/trades',
      '/perps/balances',
    ];
    for (const path of reads) {
      const reply = await call(svc.url, path, { apiKey: read });
      assert.equal(reply.status, 200, `${path}: ${JSON.stringify(reply.body)}`);
    }
    const preview = await call(svc.url, '/perps/orders/preview', { apiKey: read, body: order });
    assert.equal(preview.status, 200, JSON.stringify(preview.body));
    assert.equal(preview.body.approved, true);
    assert.deepEqual(await openOrders(), []);
  });

  test('no key may use the session-only single quote', async () => {
    const quote = { marketId: 'BTC-PERP', bid: { price: order.price, quantity: '0.01' } };
    for (const apiKey of [read, trade]) {
      assertError(await call(svc.url, '/perps/quotes', { apiKey, body: quote }), 403, 'FORBIDDEN');
    }
    assert.deepEqual(await openOrders(), []);
  });

  test('a trade key pinned elsewhere, and a revoked trade key, place nothing', async () => {
    const pinned = await newKey(trader, { scope: 'trade', allowedIps: ['10.0.0.1'] });
    const fromElsewhere = await call(svc.url, '/perps/orders', { apiKey: pinned.secret, body: order });
    assertError(fromElsewhere, 403, 'IP_NOT_ALLOWED');
    const revoked = await newKey(trader, { scope: 'trade' });
    assert.equal((await revokeKey(trader, revoked.id)).status, 200);
    const afterRevocation = await call(svc.url, '/perps/orders', { apiKey: revoked.secret, body: order });
    assertError(afterRevocation, 401, 'UNAUTHENTICATED');
    assert.deepEqual(await openOrders(), []);
  });
});

describe('revocation ownership and the active-key cap', () => {
  test("revoking another account's key id is 404 and leaves the key working", async () => {
    const owner = await signIn(svc.url);
    const thief = await signIn(svc.url);
    const key = await newKey(owner);
    const path = `/perps/me/api-keys/${key.id}`;
    const reply = await call(svc.url, path, { method: 'DELETE', token: thief.token });
    assertError(reply, 404, 'NOT_FOUND');
    assertRecognised(await useKey(key.secret));
  });

  test('revoking an unknown id is 404; an over-long id is 400', async () => {
    const trader = await signIn(svc.url);
    const revoke = (id: string) => revokeKey(trader, id);
    const unknown = await revoke('f'.repeat(16));
    assertError(unknown, 404, 'NOT_FOUND');
    const long = await revoke('f'.repeat(65));
    assertError(long, 400, 'VALIDATION_ERROR');
  });

  test('the 21st active key is refused with 409; after a revocation one more fits', async () => {
    const trader = await signIn(svc.url);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await newKey(trader, { name: `k${i}` })).id);
    assertError(await createKey(trader, { name: 'k20', scope: 'read' }), 409, 'CONFLICT');
    await revokeKey(trader, ids[0]!);
    assert.equal((await createKey(trader, { name: 'k20', scope: 'read' })).status, 201);
    assertError(await createKey(trader, { name: 'k21', scope: 'read' }), 409, 'CONFLICT');
  });
});
