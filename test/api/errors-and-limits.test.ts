/**
 * Error envelope, input hygiene, CSRF, rate limits and the documentation surface over HTTP
 * (interface.md "Errors" and "Limits", decisions.md "Numbers", "Errors", "Limits" and "Running
 * the service", research/reliability.md 5.4-5.6 and 7.8-7.10). Real services on loopback via
 * test/support/harness.ts, one per describe where the settings differ (tight anonymous budget,
 * tight account budget, 500 ms window, no ADMIN_TOKEN). Every refusal is checked for its exact
 * status, its exact `{ error, message }` body and, where money could move, an unchanged balance;
 * each table has a control that succeeds. Fixed rate-limit windows are aligned to their start
 * before counting, so a window boundary never falls inside a counted sequence.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { TypedApp } from '../../src/gateway/app.ts';
import {
  admin,
  ADMIN_TOKEN,
  call,
  fund,
  PUBLIC_ORIGIN,
  signIn,
  startService,
  type Reply,
  type RequestOptions,
  type TestService,
  type Trader,
} from '../support/harness.ts';

const MULTIPART = '--x\r\nContent-Disposition: form-data; name="amount"\r\n\r\n1\r\n--x--';
/** Origins a cookie-authenticated state change must not come from (PUBLIC_ORIGIN is http://exchange.test). */
const HOSTILE_ORIGINS = [
  'https://evil.example',
  'null',
  'http://exchange.test.evil.example',
  'https://exchange.test',
];
/** Routes the served-route parser must find, so comparing it with the OpenAPI paths is not vacuous. */
const KNOWN_ROUTES = [
  'POST /auth/siwe',
  'POST /wallet/transfer',
  'DELETE /perps/me/api-keys/:id',
  'POST /admin/index',
];
const HIGH = { RATE_LIMIT_ANONYMOUS: '1000000', RATE_LIMIT_ACCOUNT: '1000000' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/*
 * The rate limiter's windows run on the server's monotonic clock from its process start (windows
 * [0, w), [w, 2w), ...): the tests below cannot align with them from outside. Each service is
 * started with windows long enough that its test runs inside the first one, except the test of the
 * window's end, which tells a straddled boundary from the budgets themselves.
 */

function assertEnvelope(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(typeof reply.body, 'object', String(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message'], JSON.stringify(reply.body));
  assert.equal(reply.body.error, code, reply.body.message);
  assert.equal(typeof reply.body.message, 'string');
  assert.ok(reply.body.message.length > 0);
  assert.doesNotMatch(reply.body.message, /\n\s+at /, 'no stack trace in messages');
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
}

function assertLimitHeaders(reply: Reply, limit?: number, maxResetSeconds = 10): void {
  assert.equal(reply.headers.get('x-api-version'), '1');
  const l = reply.headers.get('x-ratelimit-limit');
  const r = reply.headers.get('x-ratelimit-remaining');
  const reset = reply.headers.get('x-ratelimit-reset');
  assert.match(l ?? '', /^\d+$/, `X-RateLimit-Limit ${l}`);
  assert.match(r ?? '', /^\d+$/, `X-RateLimit-Remaining ${r}`);
  assert.match(reset ?? '', /^\d+$/, `X-RateLimit-Reset ${reset}`);
  if (limit !== undefined) assert.equal(Number(l), limit);
  assert.ok(Number(r) <= Number(l));
  assert.ok(Number(reset) >= 0 && Number(reset) <= maxResetSeconds, `X-RateLimit-Reset ${reset}`);
}

/**
 * Sends `request` as written over a fresh TCP connection and parses the one response the server
 * sends before closing it (fetch cannot send a malformed request line or header).
 */
function rawHttp(url: string, request: string): Promise<Reply> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error('no response within 5 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
      const headers = new Headers(lines.map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()] as [string, string];
      }));
      const body = text.slice(split + 4);
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: body === '' ? body : JSON.parse(body) });
    });
  });
}

/** Parses `printRoutes` into "METHOD /path" entries (HEAD routes are Fastify's automatic ones). */
function servedRoutes(app: TypedApp): Set<string> {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (m === null) continue;
    const depth = m[1]!.length / 4;
    const path = (depth === 0 ? '' : stack[depth - 1]!) + m[2]!;
    stack.length = depth;
    stack.push(path);
    const methods = (m[3] ?? '').split(', ').filter((x) => x !== '' && x !== 'HEAD');
    for (const method of methods) out.add(`${method} ${path}`);
  }
  return out;
}

function documentedRoutes(doc: { paths: Record<string, Record<string, unknown>> }): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) {
        out.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
      }
    }
  }
  return out;
}

describe('the main service', () => {
  let svc: TestService;
  let trader: Trader;

  const balance = async () => (await call(svc.url, '/wallet/balance', { token: trader.token })).body;
  const transfer = (body: unknown, options: RequestOptions = { token: trader.token }) =>
    call(svc.url, '/wallet/transfer', { ...options, body });
  const rawTransfer = (raw: string) => call(svc.url, '/wallet/transfer', { raw, token: trader.token });
  const asTrader = (options: RequestOptions = {}) => ({ ...options, token: trader.token });

  before(async () => {
    svc = await startService(HIGH);
    trader = await signIn(svc.url);
    await fund(svc.url, trader, '100');
  });

  after(async () => {
    await svc.close();
  });

  describe('every error body is exactly { error, message }', () => {
    test('an unknown route is 404 NOT_FOUND for any method', async () => {
      assertEnvelope(await call(svc.url, '/nope'), 404, 'NOT_FOUND');
      assertEnvelope(await call(svc.url, '/nope', { body: { a: 1 } }), 404, 'NOT_FOUND');
      const wrongMethod = await call(svc.url, '/wallet/balance', asTrader({ method: 'DELETE' }));
      assertEnvelope(wrongMethod, 404, 'NOT_FOUND');
      assertEnvelope(await call(svc.url, '/perps/me/api-keys/abc', asTrader()), 404, 'NOT_FOUND');
    });

    test('a malformed %-escape or an over-long path parameter is 400 VALIDATION_ERROR', async () => {
      const replies = [
        await call(svc.url, '/%E0%A4%A'),
        await call(svc.url, '/wallet/settlements/%ZZ', asTrader()),
        await call(svc.url, `/perps/me/api-keys/${'a'.repeat(300)}`, asTrader({ method: 'DELETE' })),
      ];
      for (const reply of replies) {
        assertEnvelope(reply, 400, 'VALIDATION_ERROR');
        assertLimitHeaders(reply);
      }
    });

    test('malformed JSON is 400 VALIDATION_ERROR', async () => {
      const malformed = ['{', '{"from":}', "{'from':'wallet'}", '{"from":"wallet",}', '{"a":1}{"b":2}', 'x'];
      for (const raw of malformed) {
        assertEnvelope(await rawTransfer(raw), 400, 'VALIDATION_ERROR');
      }
    });

    test('JSON arrays, strings, numbers, booleans and null are 400 VALIDATION_ERROR', async () => {
      for (const raw of ['[]', '[{"from":"wallet","to":"perps","amount":"1"}]', '"x"', '5', 'true', 'null']) {
        assertEnvelope(await rawTransfer(raw), 400, 'VALIDATION_ERROR');
      }
    });

    test('an empty body with Content-Type application/json is no body: 400 where one is required, accepted where optional', async () => {
      assertEnvelope(await rawTransfer(''), 400, 'VALIDATION_ERROR');
      // Before: 400 "body must not be empty" here too, though no body means "cancel everything".
      for (const path of ['/perps/orders/cancel-all', '/orders/cancel-all']) {
        const reply = await call(svc.url, path, { raw: '', token: trader.token });
        assert.equal(reply.status, 200, `${path}: ${JSON.stringify(reply.body)}`);
        assert.deepEqual(reply.body, { cancelled: [] });
      }
    });

    test('text/plain, form-encoded and multipart bodies are 415 and nothing moves', async () => {
      const before = await balance();
      const json = JSON.stringify({ from: 'wallet', to: 'perps', amount: '1' });
      const bodies: [string, string][] = [
        ['text/plain', json],
        ['text/plain;charset=UTF-8', json],
        ['application/x-www-form-urlencoded', 'from=wallet&to=perps&amount=1'],
        ['multipart/form-data; boundary=x', MULTIPART],
        ['application/xml', '<t/>'],
      ];
      for (const [type, raw] of bodies) {
        for (const auth of [{ token: trader.token }, { headers: { cookie: `session=${trader.token}` } }]) {
          const headers = { ...('headers' in auth ? auth.headers : {}), 'content-type': type };
          const reply = await call(svc.url, '/wallet/transfer', { ...auth, raw, headers });
          assertEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE');
        }
      }
      assert.deepEqual(await balance(), before);
    });

    test('a compressed JSON body is 415 (not a parse error) and nothing moves; identity passes', async () => {
      const before = await balance();
      const raw = JSON.stringify({ from: 'wallet', to: 'perps', amount: '1' });
      const sent = (encoding: string, body = raw) => call(svc.url, '/wallet/transfer', {
        token: trader.token, raw: body, headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      });
      for (const encoding of ['gzip', 'br', 'deflate']) {
        const reply = await sent(encoding);
        assertEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match((reply.body as { message: string }).message, new RegExp(encoding));
      }
      assert.deepEqual(await balance(), before);
      // identity is plain JSON: the body is read (and this one refused for its zero amount)
      assertEnvelope(await sent('identity', raw.replace('"1"', '"0"')), 400, 'INVALID_DECIMAL');
    });

    test('the Bearer scheme is case-insensitive (RFC 7235)', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
        const reply = await call(svc.url, '/perps/balances', { headers: { authorization: `${scheme} ${trader.token}` } });
        assert.equal(reply.status, 200, scheme);
      }
    });

    test('__proto__ and constructor.prototype payloads are 400 and pollute nothing', async () => {
      const raws = [
        '{"__proto__":{"polluted":"yes"},"from":"wallet","to":"perps","amount":"1"}',
        '{"from":"wallet","to":"perps","amount":"1","__proto__":{"amount":"50"}}',
        '{"constructor":{"prototype":{"polluted":"yes"}},"from":"wallet","to":"perps","amount":"1"}',
        '{"walletAddress":"0x0000000000000000000000000000000000000001","__proto__":{"polluted":"yes"}}',
      ];
      const before = await balance();
      for (const raw of raws.slice(0, 3)) assertEnvelope(await rawTransfer(raw), 400, 'VALIDATION_ERROR');
      assertEnvelope(await call(svc.url, '/auth/nonce', { raw: raws[3] }), 400, 'VALIDATION_ERROR');
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.deepEqual(await balance(), before);
    });

    test('a body over 256 KiB is 413 PAYLOAD_TOO_LARGE', async () => {
      const raw = JSON.stringify({ from: 'wallet', to: 'perps', amount: '1', pad: 'x'.repeat(300 * 1024) });
      assertEnvelope(await rawTransfer(raw), 413, 'PAYLOAD_TOO_LARGE');
    });

    test('unknown fields, a wrong enum, a missing field and from = to are 400 VALIDATION_ERROR', async () => {
      const before = await balance();
      const bodies = [
        { from: 'wallet', to: 'perps', amount: '1', memo: 'hi' },
        { from: 'bank', to: 'perps', amount: '1' },
        { from: 'wallet', to: 'Perps', amount: '1' },
        { from: 'wallet', to: 'perps' },
        { to: 'perps', amount: '1' },
        { from: 'wallet', to: 'wallet', amount: '1' },
      ];
      for (const body of bodies) assertEnvelope(await transfer(body), 400, 'VALIDATION_ERROR');
      // A wrong enum names the field and lists the allowed values, for a wrong string and a wrong type.
      for (const from of ['bank', 7]) {
        const reply = await transfer({ from, to: 'perps', amount: '1' });
        assert.equal(reply.body.message, 'body.from must be one of "wallet", "perps", "options", "spot"');
      }
      assert.deepEqual(await balance(), before);
    });

    test('more than the source bucket holds is 400 INSUFFICIENT_BALANCE', async () => {
      const before = await balance();
      const over = await transfer({ from: 'wallet', to: 'perps', amount: '100.000001' });
      assertEnvelope(over, 400, 'INSUFFICIENT_BALANCE');
      const empty = await transfer({ from: 'options', to: 'perps', amount: '1' });
      assertEnvelope(empty, 400, 'INSUFFICIENT_BALANCE');
      assert.deepEqual(await balance(), before);
    });

    test('missing credentials are 401 UNAUTHENTICATED', async () => {
      assertEnvelope(await call(svc.url, '/wallet/balance'), 401, 'UNAUTHENTICATED');
      const anonymous = await transfer({ from: 'wallet', to: 'perps', amount: '1' }, {});
      assertEnvelope(anonymous, 401, 'UNAUTHENTICATED');
    });
  });

  describe('decimal amounts on POST /wallet/transfer', () => {
    const hostile: [label: string, amount: unknown][] = [
      ['1e5', '1e5'],
      ['1E5', '1E5'],
      ['.5', '.5'],
      ['5.', '5.'],
      ['0x10', '0x10'],
      ['0b1', '0b1'],
      ['+1', '+1'],
      ['" 1"', ' 1'],
      ['"1 "', '1 '],
      ['"\\t1"', '\t1'],
      ['"1\\n"', '1\n'],
      ['-0', '-0'],
      ['-0.0', '-0.0'],
      ['-1', '-1'],
      ['0', '0'],
      ['0.000000', '0.000000'],
      ['1_000', '1_000'],
      ['1,5', '1,5'],
      ['1..2', '1..2'],
      ['-', '-'],
      ['fullwidth １', '１'],
      ['NaN', 'NaN'],
      ['Infinity', 'Infinity'],
      ['""', ''],
      ['an 80-digit string', '9'.repeat(80)],
      ['a 10,000-digit string', '9'.repeat(10_000)],
      ['19 fractional digits', `0.${'0'.repeat(18)}1`],
      ['1.0000001 (7 places; USDC has 6)', '1.0000001'],
      ['JSON number 5', 5],
      ['JSON number 1.5', 1.5],
      ['null', null],
      ['true', true],
      ['an array', ['1']],
      ['an object', { value: '1' }],
    ];
    for (const [label, amount] of hostile) {
      test(`amount ${label} is 400 INVALID_DECIMAL and the balance is unchanged`, async () => {
        const before = await balance();
        const started = Date.now();
        assertEnvelope(await transfer({ from: 'wallet', to: 'perps', amount }), 400, 'INVALID_DECIMAL');
        assert.ok(Date.now() - started < 2000, 'refused fast');
        assert.deepEqual(await balance(), before);
      });
    }

    test('a plain amount with 6 places (control) moves exactly that amount, and back', async () => {
      const before = await balance();
      const moved = await transfer({ from: 'wallet', to: 'perps', amount: '1.000001' });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal(moved.body.walletBalance, '98.999999');
      assert.equal(moved.body.perpsBalance, '1.000001');
      const back = await transfer({ from: 'perps', to: 'wallet', amount: '1.000001' });
      assert.equal(back.status, 200, JSON.stringify(back.body));
      assert.deepEqual(await balance(), before);
    });
  });

  describe('cross-origin cookie requests (CSRF)', () => {
    const cookie = () => ({ cookie: `session=${trader.token}` });

    test('a cookie POST from another Origin is 403 FORBIDDEN and nothing moves', async () => {
      const before = await balance();
      for (const origin of HOSTILE_ORIGINS) {
        const headers = { ...cookie(), origin };
        const reply = await transfer({ from: 'wallet', to: 'perps', amount: '1' }, { headers });
        assertEnvelope(reply, 403, 'FORBIDDEN');
        const withdraw = await call(svc.url, '/wallet/withdraw', { body: { amount: '1' }, headers });
        assertEnvelope(withdraw, 403, 'FORBIDDEN');
        const newKey = { name: 'csrf', scope: 'trade' };
        const key = await call(svc.url, '/perps/me/api-keys', { body: newKey, headers });
        assertEnvelope(key, 403, 'FORBIDDEN');
      }
      assert.deepEqual(await balance(), before);
      assert.deepEqual((await call(svc.url, '/perps/me/api-keys', { token: trader.token })).body, []);
    });

    test('the same cookie POST from PUBLIC_ORIGIN works (control)', async () => {
      const before = await balance();
      const headers = { ...cookie(), origin: PUBLIC_ORIGIN };
      const reply = await transfer({ from: 'wallet', to: 'perps', amount: '1' }, { headers });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(Number(reply.body.perpsBalance), Number(before.perpsBalance) + 1);
      assert.equal((await transfer({ from: 'perps', to: 'wallet', amount: '1' })).status, 200);
    });
  });

  // Before: Node's HTTP parser refusals went to Fastify's default client-error handler, which
  // answered `{ error: "Bad Request", message, statusCode }` without X-Api-Version or X-RateLimit-*.
  describe('requests the HTTP parser refuses (no route ever runs)', () => {
    const refused: [string, string, number][] = [
      ['request headers over the size limit', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
      ['a non-numeric Content-Length', 'POST /auth/nonce HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}', 400],
    ];
    for (const [name, request, status] of refused) {
      test(`${name}: ${status} VALIDATION_ERROR envelope with the usual headers, connection closed`, async () => {
        const reply = await rawHttp(svc.url, request);
        assertEnvelope(reply, status, 'VALIDATION_ERROR');
        assertLimitHeaders(reply, 1_000_000);
        assert.equal(reply.headers.get('connection'), 'close');
      });
    }

    test('the service still answers on a new connection afterwards', async () => {
      await rawHttp(svc.url, 'GARBAGE\r\n\r\n');
      assert.equal((await call(svc.url, '/health')).status, 200);
    });
  });

  describe('headers on every response', () => {
    test('200, 400, 401, 404, 413 and 415 responses carry X-RateLimit-* and X-Api-Version: 1', async () => {
      const replies: [number, Reply][] = [
        [200, await call(svc.url, '/health')],
        [200, await call(svc.url, '/wallet/balance', { token: trader.token })],
        [400, await call(svc.url, '/wallet/transfer', { raw: '{', token: trader.token })],
        [401, await call(svc.url, '/wallet/balance')],
        [404, await call(svc.url, '/nope')],
        [413, await call(svc.url, '/auth/nonce', { raw: JSON.stringify({ pad: 'x'.repeat(300_000) }) })],
        [415, await call(svc.url, '/auth/nonce', { raw: '{}', headers: { 'content-type': 'text/plain' } })],
      ];
      for (const [status, reply] of replies) {
        assert.equal(reply.status, status);
        assertLimitHeaders(reply);
      }
    });

    test('anonymous and authenticated requests report their own budgets', async () => {
      assertLimitHeaders(await call(svc.url, '/health'), 1_000_000);
      const first = await call(svc.url, '/health', { token: trader.token });
      const second = await call(svc.url, '/health', { token: trader.token });
      assertLimitHeaders(first, 1_000_000);
      const left = (r: Reply) => Number(r.headers.get('x-ratelimit-remaining'));
      assert.equal(left(second), left(first) - 1);
    });
  });

  describe('admin routes', () => {
    const body = { underlying: 'BTC', price: '100000' };

    test('without a token, with a wrong token, or with a session they are 401 UNAUTHENTICATED', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}x` },
        { authorization: `Bearer ${ADMIN_TOKEN}0` },
        { authorization: ADMIN_TOKEN },
        { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
        { authorization: `Bearer ${trader.token}` },
        { cookie: `session=${trader.token}` },
      ];
      for (const headers of attempts) {
        assertEnvelope(await call(svc.url, '/admin/index', { body, headers }), 401, 'UNAUTHENTICATED');
        const deposit = { walletAddress: trader.address, amount: '1000' };
        const reply = await call(svc.url, '/admin/chain/deposits', { body: deposit, headers });
        assertEnvelope(reply, 401, 'UNAUTHENTICATED');
      }
    });

    test('with the token they work (control)', async () => {
      const reply = await call(svc.url, '/admin/index', { body, headers: admin });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.price, '100000');
    });
  });

  describe('documentation and health', () => {
    test('/openapi.json is OpenAPI 3.1 and documents exactly the routes the app serves', async () => {
      const reply = await call(svc.url, '/openapi.json');
      assert.equal(reply.status, 200);
      assert.match(reply.body.openapi, /^3\.1\.\d+$/);
      // Swagger UI, the document itself and the web terminal (`/`, `/assets/*`, printed as `/*`: docs/web.md) are pages, not API.
      const served = [...servedRoutes(svc.service.app)].filter((r) => !/ \/(docs|openapi\.json|assets\/|\*$|$)/.test(r));
      for (const route of KNOWN_ROUTES) {
        assert.ok(served.includes(route), `printRoutes parsing lost ${route}: ${served.join(', ')}`);
      }
      assert.deepEqual([...documentedRoutes(reply.body)].sort(), served.sort());
    });

    test('every schema in /openapi.json is valid JSON Schema 2020-12 (what OpenAPI 3.1 uses)', async () => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed JSON document walked by key
      type Json = any;
      const doc = (await call(svc.url, '/openapi.json')).body as { paths: Record<string, Record<string, Json>> };
      const ajv = new Ajv2020({ strict: false, validateFormats: false });
      let schemas = 0;
      const check = (where: string, schema: unknown) => {
        if (schema === undefined) return;
        schemas++;
        // Before: the order books' [price, size] levels were tuples written as `items: [...]`.
        assert.doesNotThrow(() => ajv.compile(schema as object), where);
      };
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
            for (const media of Object.values((r.content ?? {}) as Record<string, Json>)) check(`${method} ${path} ${status}`, media.schema);
          }
          for (const media of Object.values((op.requestBody?.content ?? {}) as Record<string, Json>)) check(`${method} ${path} body`, media.schema);
          for (const p of (op.parameters ?? []) as Json[]) check(`${method} ${path} ${p.name}`, p.schema);
        }
      }
      assert.ok(schemas > 100, `${schemas} schemas checked`);
    });

    test('/docs serves the HTML documentation', async () => {
      const res = await fetch(`${svc.url}/docs`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(await res.text(), /<html/i);
    });

    test('GET /health is 200 ok', async () => {
      const reply = await call(svc.url, '/health');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.status, 'ok');
      assert.ok(Number.isInteger(reply.body.journalSeq));
      assert.ok(Number.isInteger(reply.body.uptimeSeconds));
    });
  });
});

describe('a service without ADMIN_TOKEN', () => {
  let svc: TestService;

  before(async () => {
    svc = await startService({ ...HIGH, ADMIN_TOKEN: '' });
  });

  after(async () => {
    await svc.close();
  });

  test('serves no /admin route: 404 NOT_FOUND even with a well-formed admin token', async () => {
    assert.equal(svc.settings.adminToken, null);
    const price = { underlying: 'BTC', price: '1' };
    const index = await call(svc.url, '/admin/index', { body: price, headers: admin });
    assertEnvelope(index, 404, 'NOT_FOUND');
    const deposit = { walletAddress: `0x${'11'.repeat(20)}`, amount: '1' };
    const reply = await call(svc.url, '/admin/chain/deposits', { body: deposit, headers: admin });
    assertEnvelope(reply, 404, 'NOT_FOUND');
    assertEnvelope(await call(svc.url, '/admin/chain/reorg', { body: { depth: 1 } }), 404, 'NOT_FOUND');
  });

  test('and documents none', async () => {
    const doc = (await call(svc.url, '/openapi.json')).body;
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/admin')), []);
    assert.ok(Object.keys(doc.paths).includes('/wallet/transfer'));
  });
});

describe('the anonymous budget (RATE_LIMIT_ANONYMOUS=5, 60 s window)', () => {
  let svc: TestService;

  before(async () => {
    svc = await startService({ RATE_LIMIT_ANONYMOUS: '5', RATE_LIMIT_WINDOW_MS: '60000' });
  });

  after(async () => {
    await svc.close();
  });

  test('the 6th anonymous request in a window is 429 RATE_LIMITED with Retry-After', async () => {
    const paths = ['/health', '/nope', '/wallet/balance', '/openapi.json', '/health'];
    const expected = [200, 404, 401, 200, 200];
    for (let i = 0; i < 5; i++) {
      const reply = await call(svc.url, paths[i]!);
      assert.equal(reply.status, expected[i], `request ${i + 1}`);
      assertLimitHeaders(reply, 5, 60);
      assert.equal(reply.headers.get('x-ratelimit-remaining'), String(4 - i));
    }
    for (const path of ['/health', '/nope', '/wallet/balance']) {
      const limited = await call(svc.url, path);
      assertEnvelope(limited, 429, 'RATE_LIMITED');
      assertLimitHeaders(limited, 5, 60);
      assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
      const retryAfter = limited.headers.get('retry-after');
      assert.match(retryAfter ?? '', /^\d+$/);
      assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
      assert.equal(retryAfter, limited.headers.get('x-ratelimit-reset'));
    }
    const nonce = await call(svc.url, '/auth/nonce', { body: { walletAddress: `0x${'22'.repeat(20)}` } });
    assertEnvelope(nonce, 429, 'RATE_LIMITED');
  });
});

describe('the account budget (RATE_LIMIT_ACCOUNT=6, RATE_LIMIT_ANONYMOUS=4)', () => {
  const WINDOW = 3_600_000;
  let svc: TestService;
  let a: Trader;
  let b: Trader;

  before(async () => {
    svc = await startService({
      RATE_LIMIT_ANONYMOUS: '4',
      RATE_LIMIT_ACCOUNT: '6',
      RATE_LIMIT_WINDOW_MS: String(WINDOW),
    });
    a = await signIn(svc.url);
    b = await signIn(svc.url);
  });

  after(async () => {
    await svc.close();
  });

  test('authenticated requests do not draw on the spent anonymous budget', async () => {
    // The two sign-ins spent the 4 anonymous requests of this IP.
    const anonymous = await call(svc.url, '/health');
    assertEnvelope(anonymous, 429, 'RATE_LIMITED');
    const badKey = await call(svc.url, '/health', { apiKey: 'exk_unknown' });
    assertEnvelope(badKey, 429, 'RATE_LIMITED');
    const signedIn = await call(svc.url, '/health', { token: a.token });
    assert.equal(signedIn.status, 200);
    assertLimitHeaders(signedIn, 6, WINDOW / 1000);
  });

  test("an account's session, cookie and keys share one budget; another account has its own", async () => {
    const body = { name: 'k', scope: 'read' };
    const created = await call(svc.url, '/perps/me/api-keys', { token: a.token, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const key = created.body.secret as string;
    let remaining = Number(created.headers.get('x-ratelimit-remaining'));
    assert.ok(remaining >= 2, `remaining ${remaining}`);
    const cookie = { cookie: `session=${a.token}` };
    const senders: RequestOptions[] = [{ apiKey: key }, { token: a.token }, { headers: cookie }];
    for (let i = 0; remaining > 0; i++) {
      const reply = await call(svc.url, '/health', senders[i % senders.length]);
      assert.equal(reply.status, 200);
      assertLimitHeaders(reply, 6, WINDOW / 1000);
      const left = Number(reply.headers.get('x-ratelimit-remaining'));
      assert.equal(left, remaining - 1, `sender ${i % senders.length}`);
      remaining -= 1;
    }
    for (const sender of senders) assertEnvelope(await call(svc.url, '/health', sender), 429, 'RATE_LIMITED');
    const other = await call(svc.url, '/health', { token: b.token });
    assert.equal(other.status, 200);
    assertLimitHeaders(other, 6, WINDOW / 1000);
    assert.equal(other.headers.get('x-ratelimit-remaining'), '5');
  });
});

describe('order actions have a budget of their own (RATE_LIMIT_ORDERS=2)', () => {
  const WINDOW = 3_600_000;
  let svc: TestService;
  let trader: Trader;
  let key: string;

  before(async () => {
    svc = await startService({ ...HIGH, RATE_LIMIT_ORDERS: '2', RATE_LIMIT_WINDOW_MS: String(WINDOW) });
    trader = await signIn(svc.url);
    const body = { name: 'k', scope: 'trade' };
    const created = await call(svc.url, '/perps/me/api-keys', { token: trader.token, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    key = created.body.secret;
  });

  after(async () => {
    await svc.close();
  });

  test('the third order action of an account is 429 whoever sends it; other requests pass', async () => {
    const cancelAll = (auth: RequestOptions) =>
      call(svc.url, '/perps/orders/cancel-all', { ...auth, body: {} });
    const first = await cancelAll({ token: trader.token });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assertLimitHeaders(first, 2, WINDOW / 1000);
    assert.equal(first.headers.get('x-ratelimit-remaining'), '1');
    const second = await cancelAll({ apiKey: key });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.headers.get('x-ratelimit-remaining'), '0');
    assertEnvelope(await cancelAll({ token: trader.token }), 429, 'RATE_LIMITED');
    assertEnvelope(await cancelAll({ apiKey: key }), 429, 'RATE_LIMITED');
    const read = await call(svc.url, '/perps/orders/open', { apiKey: key });
    assert.equal(read.status, 200);
    assertLimitHeaders(read, 1_000_000, WINDOW / 1000);
    const other = await signIn(svc.url);
    assert.equal((await cancelAll({ token: other.token })).status, 200);
  });
});

describe('budgets reset after the window (RATE_LIMIT_WINDOW_MS=500, RATE_LIMIT_ANONYMOUS=3)', () => {
  let svc: TestService;

  before(async () => {
    svc = await startService({ RATE_LIMIT_ANONYMOUS: '3', RATE_LIMIT_WINDOW_MS: '500' });
  });

  after(async () => {
    await svc.close();
  });

  test('a spent budget is whole again in the next window', async () => {
    // The server's windows run on its own monotonic clock, which the test cannot align with. A
    // pause of a whole window after the last request puts the next ones in a window nobody used;
    // four requests that straddle a boundary show it in their remaining budgets (one stays or goes
    // back up before the budget is spent), prove nothing either way, and are repeated.
    const remaining = (replies: Reply[]) => replies.map((r) => r.headers.get('x-ratelimit-remaining'));
    let replies: Reply[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      await sleep(530);
      replies = [];
      for (let i = 0; i < 4; i++) replies.push(await call(svc.url, '/health'));
      // one window: the budget only falls (2, 1, 0, then 0 refused); a new window puts it back up
      const left = remaining(replies).map(Number);
      if (left.every((n, i) => i === 0 || n < left[i - 1]! || n === 0)) break;
    }
    assert.deepEqual(replies.map((r) => r.status), [200, 200, 200, 429]);
    assert.deepEqual(replies.map((r) => r.headers.get('x-ratelimit-remaining')), ['2', '1', '0', '0']);
    const limited = replies[3]!;
    assertEnvelope(limited, 429, 'RATE_LIMITED');
    assertLimitHeaders(limited, 3, 1);
    assert.equal(limited.headers.get('retry-after'), '1');
    await sleep(530); // a whole window later: another window, whatever its boundaries
    const fresh = await call(svc.url, '/health');
    assert.equal(fresh.status, 200);
    assert.equal(fresh.headers.get('x-ratelimit-remaining'), '2');
  });
});
