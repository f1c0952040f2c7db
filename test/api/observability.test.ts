/**
 * Operators' view of the service over HTTP (gateway/metrics.ts, gateway/request-log.ts), on real
 * services on loopback (test/support/harness.ts):
 *
 * 1. GET /metrics with ADMIN_TOKEN: 401 without the token or with another one, the Prometheus text
 *    with it; after traffic the series move by exactly what was done — requests by route pattern
 *    (not the raw URL) and status, commands applied and rejected by type and code, journal batches
 *    and commit times, open and opened streams, index freshness per underlying, process figures.
 *    Two services in one process keep their own figures.
 * 2. Without ADMIN_TOKEN the route does not exist: 404, with or without a Bearer token.
 * 3. The reference market maker's health (MARKET_MAKER=on, push feed): running, cycles completing,
 *    the markets it quotes once an index arrives; its own requests are counted but not logged at info.
 * 4. X-Request-Id: a well-formed client id is echoed, anything else replaced by a generated one;
 *    on 200, 400 (validation), 401, 404, 429, a router refusal, a parser refusal and a stream.
 * 5. The request log: one line per request with method, route, status, duration, account and
 *    request id, never the body or a credential.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { ADMIN_TOKEN, admin, call, fund, signIn, startService, waitFor, type TestService } from '../support/harness.ts';
import { rawRead } from '../streams/support.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

type Series = Map<string, number>;

/** `name{k=v,...}` with the labels sorted: one key per series, whatever order they were printed in. */
function key(name: string, labels: Record<string, string> = {}): string {
  return `${name}{${Object.entries(labels).map(([k, v]) => `${k}=${v}`).sort().join(',')}}`;
}

/** Parses the Prometheus text format; every line must be a comment or a sample. */
function parse(text: string): Series {
  const out: Series = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m !== null, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of m[2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? []) labels[k!] = v!;
    out.set(key(m[1]!, labels), Number(m[3]));
  }
  return out;
}

async function scrape(base: string): Promise<Series> {
  const r = await fetch(`${base}/metrics`, { headers: admin });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await r.text());
}

const value = (s: Series, name: string, labels: Record<string, string> = {}) => s.get(key(name, labels)) ?? 0;
const requests = (s: Series, method: string, route: string, status: number) =>
  value(s, 'exchange_http_request_duration_seconds_count', { method, route, status: String(status) });

describe('GET /metrics with ADMIN_TOKEN', () => {
  let svc: TestService;
  let other: TestService;
  before(async () => {
    [svc, other] = await Promise.all([startService(), startService()]);
  });
  after(async () => {
    await Promise.all([svc?.close(), other?.close()]);
  });

  test('without the admin token, or with another one, it is 401 UNAUTHENTICATED', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer not-the-admin-token-at-all' }, { authorization: ADMIN_TOKEN }];
    for (const headers of attempts) {
      const r = await call(svc.url, '/metrics', { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.deepEqual(r.body, { error: 'UNAUTHENTICATED', message: 'admin token required' });
    }
    const trader = await signIn(svc.url);
    assert.equal((await call(svc.url, '/metrics', { token: trader.token })).status, 401, 'a session is not the admin token');
  });

  test('series move by what the traffic did', async () => {
    const trader = await signIn(svc.url);
    await fund(svc.url, trader, '100');
    const before = await scrape(svc.url);

    for (let i = 0; i < 3; i++) assert.equal((await call(svc.url, '/health')).status, 200);
    assert.equal((await call(svc.url, '/orderbook/BTC-USDC')).status, 200);
    assert.equal((await call(svc.url, '/orderbook/ETH-USDC')).status, 200);
    assert.equal((await call(svc.url, '/no/such/route')).status, 404);
    const moved = await call(svc.url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '40' } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    const refused = await call(svc.url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '1000' } });
    assert.equal(refused.body.error, 'INSUFFICIENT_BALANCE');
    // a stream open while the next scrape runs
    const held = await fetch(`${svc.url}/perps/book-stream?marketId=BTC-PERP`);
    assert.equal(held.status, 200, 'a stream opens');
    const after = await scrape(svc.url);
    await held.body?.cancel();

    assert.equal(requests(after, 'GET', '/health', 200) - requests(before, 'GET', '/health', 200), 3);
    assert.equal(requests(after, 'GET', '/orderbook/:marketId', 200) - requests(before, 'GET', '/orderbook/:marketId', 200), 2, 'labelled by the route pattern');
    assert.ok(![...after.keys()].some((k) => k.includes('BTC-USDC') || k.includes('/no/such/route')), 'no raw URL in a label');
    assert.equal(requests(after, 'GET', 'unmatched', 404) - requests(before, 'GET', 'unmatched', 404), 1);
    assert.equal(requests(after, 'POST', '/wallet/transfer', 200) - requests(before, 'POST', '/wallet/transfer', 200), 1);
    assert.equal(requests(after, 'POST', '/wallet/transfer', 400) - requests(before, 'POST', '/wallet/transfer', 400), 1);
    assert.equal(requests(after, 'GET', '/metrics', 200) - requests(before, 'GET', '/metrics', 200), 1, 'the scrape before this one');
    const buckets = [...after.entries()].filter(([k]) => k.startsWith('exchange_http_request_duration_seconds_bucket{') && k.includes('route=/health,'));
    assert.ok(buckets.length > 5, 'the latency histogram has buckets');
    assert.equal(value(after, 'exchange_http_request_duration_seconds_bucket', { method: 'GET', route: '/health', status: '200', le: '+Inf' }), requests(after, 'GET', '/health', 200));

    const commands = (s: Series, type: string) => value(s, 'exchange_commands_total', { type });
    const rejections = (s: Series, type: string, code: string) => value(s, 'exchange_command_rejections_total', { type, code });
    assert.equal(commands(after, 'wallet.transfer') - commands(before, 'wallet.transfer'), 1);
    assert.equal(rejections(after, 'wallet.transfer', 'INSUFFICIENT_BALANCE') - rejections(before, 'wallet.transfer', 'INSUFFICIENT_BALANCE'), 1);
    assert.ok(commands(after, 'prices.observe') > 0, 'the simulated feed\'s observations are commands too');

    const batches = (s: Series) => value(s, 'exchange_journal_batch_commands_count');
    assert.ok(batches(after) > batches(before), 'the transfer went to the journal in a batch');
    assert.ok(value(after, 'exchange_journal_batch_commands_sum') >= batches(after), 'a batch holds at least one command');
    assert.equal(value(after, 'exchange_journal_commit_seconds_count'), batches(after), 'each batch has its commit time');
    assert.ok(value(after, 'exchange_journal_commit_seconds_sum') > 0);
    assert.ok(value(after, 'exchange_journal_transactions_total') > 0);
    assert.ok(value(after, 'exchange_journal_transactions_total') <= batches(after), 'a transaction holds one batch or more');
    assert.ok(value(after, 'exchange_journal_seq') > value(before, 'exchange_journal_seq'));
    assert.equal(value(after, 'exchange_core_healthy'), 1);

    assert.equal(value(after, 'exchange_streams_open') - value(before, 'exchange_streams_open'), 1);
    assert.equal(value(after, 'exchange_streams_opened_total') - value(before, 'exchange_streams_opened_total'), 1);
    assert.ok(after.has(key('exchange_stream_slow_consumer_drops_total')));

    for (const underlying of ['BTC', 'ETH']) {
      assert.equal(value(after, 'exchange_index_available', { underlying }), 1, underlying);
      const age = after.get(key('exchange_index_age_seconds', { underlying }));
      assert.ok(age !== undefined && age >= 0 && age < 10, `${underlying} index age ${age}`);
    }
    assert.ok(value(after, 'process_cpu_user_seconds_total') > 0);
    assert.ok(after.has(key('nodejs_eventloop_lag_seconds')));
    assert.ok(value(after, 'process_resident_memory_bytes') > 0);
    assert.ok(!after.has(key('exchange_market_maker_running')), 'no maker series with MARKET_MAKER=off');

    await waitFor(async () => value(await scrape(svc.url), 'exchange_streams_open') === value(before, 'exchange_streams_open'));
  });

  test('an index nobody publishes ages and goes unavailable (push feed)', async () => {
    const push = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: '1500' });
    try {
      const none = await scrape(push.url);
      assert.equal(value(none, 'exchange_index_available', { underlying: 'BTC' }), 0, 'a listed underlying before any price');
      assert.ok(!none.has(key('exchange_index_age_seconds', { underlying: 'BTC' })), 'no age before any input');
      assert.equal((await call(push.url, '/admin/index', { body: { underlying: 'BTC', price: '97000' }, headers: admin })).status, 200);
      const fresh = await scrape(push.url);
      assert.equal(value(fresh, 'exchange_index_available', { underlying: 'BTC' }), 1);
      assert.ok(value(fresh, 'exchange_index_age_seconds', { underlying: 'BTC' }) < 1.5);
      await new Promise((r) => setTimeout(r, 1600));
      const stale = await scrape(push.url);
      assert.equal(value(stale, 'exchange_index_available', { underlying: 'BTC' }), 0);
      assert.ok(value(stale, 'exchange_index_age_seconds', { underlying: 'BTC' }) >= 1.6);
    } finally {
      await push.close();
    }
  });

  test('two services in one process keep their own figures', async () => {
    const before = await scrape(other.url);
    for (let i = 0; i < 4; i++) await call(svc.url, '/health');
    const after = await scrape(other.url);
    assert.equal(requests(after, 'GET', '/health', 200), requests(before, 'GET', '/health', 200), 'the other service saw none of them');
    assert.equal(requests(after, 'GET', '/metrics', 200) - requests(before, 'GET', '/metrics', 200), 1);
  });
});

describe('GET /metrics without ADMIN_TOKEN', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ ADMIN_TOKEN: '' });
  });
  after(() => svc?.close());

  test('the route does not exist: 404 NOT_FOUND, with or without a Bearer token', async () => {
    for (const headers of [{}, admin]) {
      const r = await call(svc.url, '/metrics', { headers });
      assert.equal(r.status, 404);
      assert.deepEqual(r.body, { error: 'NOT_FOUND', message: 'route GET /metrics not found' });
    }
    const doc = (await call(svc.url, '/openapi.json')).body as { paths: Record<string, unknown> };
    assert.ok(!('/metrics' in doc.paths), 'not documented when not served');
  });
});

describe('the market maker\'s health in /metrics (MARKET_MAKER=on, push feed)', () => {
  let svc: TestService;
  const lines: string[] = [];
  before(async () => {
    svc = await startService({ MARKET_MAKER: 'on', FEED: 'push', RATE_LIMIT_ANONYMOUS: '1000000', LOG_LEVEL: 'info' }, undefined, {
      logStream: { write: (line) => void lines.push(line) },
    });
  });
  after(() => svc?.close());

  test('running, cycling, and quoting the markets an index arrives for', async () => {
    let s: Series = new Map();
    const first = await scrape(svc.url);
    assert.ok(first.has(key('exchange_market_maker_last_cycle_age_seconds')));
    await waitFor(async () => {
      s = await scrape(svc.url);
      return value(s, 'exchange_market_maker_running') === 1;
    }, 20_000, 100);
    assert.equal(value(s, 'exchange_market_maker_markets_quoted'), 0, 'no index, nothing to quote');
    assert.equal(value(s, 'exchange_market_maker_cycle_failures_total'), 0);
    // cycles keep completing (every second): the age stays below a few cycles
    await new Promise((r) => setTimeout(r, 1500));
    const later = await scrape(svc.url);
    assert.ok(value(later, 'exchange_market_maker_last_cycle_age_seconds') < 3, String(value(later, 'exchange_market_maker_last_cycle_age_seconds')));
    assert.equal((await call(svc.url, '/admin/index', { body: { underlying: 'BTC', price: '97000' }, headers: admin })).status, 200);
    await waitFor(async () => value(await scrape(svc.url), 'exchange_market_maker_markets_quoted') > 0, 20_000, 100);
    const quoting = await scrape(svc.url);
    assert.ok(value(quoting, 'exchange_commands_total', { type: 'perp.quote' }) > value(s, 'exchange_commands_total', { type: 'perp.quote' }), 'its quotes are commands');
    assert.equal(value(quoting, 'exchange_market_maker_cycle_failures_total'), 0);
    // the maker's own requests (its account, over HTTP) are below info: the request log shows the
    // clients, the maker's sign-in and the operator's funding of it (ADMIN_TOKEN: the admin routes)
    const routes = new Set(lines.map((l) => JSON.parse(l) as { msg: string; route: string }).filter((l) => l.msg === 'request').map((l) => l.route));
    assert.deepEqual([...routes].sort(), [
      '/admin/chain/deposits', '/admin/index', '/admin/treasury/grant', '/auth/nonce', '/auth/siwe', '/metrics',
    ]);
    assert.ok(requests(quoting, 'POST', '/perps/quotes/bulk', 200) > 0, 'but they are counted');
  });
});

describe('X-Request-Id', () => {
  let svc: TestService;
  let tight: TestService;
  before(async () => {
    [svc, tight] = await Promise.all([
      startService({ RATE_LIMIT_ANONYMOUS: '1000000' }),
      startService({ RATE_LIMIT_ANONYMOUS: '2', RATE_LIMIT_WINDOW_MS: '60000' }),
    ]);
  });
  after(async () => {
    await Promise.all([svc?.close(), tight?.close()]);
  });

  // First: a stream opened after several keep-alive requests leaves the service's close waiting
  // 60 s for a connection (so it was before X-Request-Id existed); opened first, it does not.
  test('a stream\'s head carries it', async () => {
    const r = await rawRead(`${svc.url}/perps/book-stream?marketId=BTC-PERP`, { 'x-request-id': 'stream-1' }, (t) => t.includes('snapshot'), 3000);
    assert.equal(r.status, 200);
    assert.match(r.text, /event: snapshot/);
    assert.equal(r.headers.get('x-request-id'), 'stream-1');
  });

  test('a well-formed client id is echoed', async () => {
    for (const id of ['abc', 'A.b-c_9', 'x'.repeat(128), '0']) {
      const r = await call(svc.url, '/health', { headers: { 'x-request-id': id } });
      assert.equal(r.headers.get('x-request-id'), id);
    }
  });

  test('without one, or with a malformed one, a new UUID is generated (never the client\'s text)', async () => {
    const seen = new Set<string>();
    for (const id of [undefined, '', 'x'.repeat(129), 'has space', 'semi;colon', 'quote"d', 'ünï', 'a/b', 'a,b']) {
      const r = await call(svc.url, '/health', { headers: id === undefined ? {} : { 'x-request-id': id } });
      const got = r.headers.get('x-request-id') ?? '';
      assert.match(got, UUID, `sent ${JSON.stringify(id)}`);
      seen.add(got);
    }
    assert.equal(seen.size, 9, 'each request its own id');
  });

  test('errors carry it too: 400, 401, 404, 429, a router refusal', async () => {
    const id = { 'x-request-id': 'err-1' };
    const cases = [
      await call(svc.url, '/wallet/transfer', { body: { from: 'wallet' }, headers: id }),
      await call(svc.url, '/auth/nonce', { raw: '{not json', headers: id }),
      await call(svc.url, '/wallet/balance', { headers: id }),
      await call(svc.url, '/no/such/route', { headers: id }),
      await call(svc.url, '/orderbook/%zz', { headers: id }),
    ];
    assert.deepEqual(cases.map((r) => r.status), [401, 400, 401, 404, 400]);
    for (const r of cases) assert.equal(r.headers.get('x-request-id'), 'err-1', JSON.stringify(r.body));
    const validation = await call(svc.url, '/auth/nonce', { body: { walletAddress: 1 }, headers: id });
    assert.equal(validation.status, 400);
    assert.equal(validation.headers.get('x-request-id'), 'err-1');

    let limited = await call(tight.url, '/health', { headers: { 'x-request-id': 'limited' } });
    for (let i = 0; i < 3 && limited.status !== 429; i++) limited = await call(tight.url, '/health', { headers: { 'x-request-id': 'limited' } });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('x-request-id'), 'limited');
  });

  test('a request the HTTP parser refuses gets a generated one', async () => {
    const { port } = new URL(svc.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1');
      let got = '';
      socket.on('data', (d) => (got += d.toString()));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine\r\nBad Header\r\n\r\n');
    });
    assert.match(text, /^HTTP\/1\.1 400 /);
    const header = /\r\nX-Request-Id: ([^\r]*)\r\n/i.exec(text)?.[1] ?? '';
    assert.match(header, UUID);
  });
});

describe('the request log', () => {
  let svc: TestService;
  const lines: string[] = [];
  before(async () => {
    svc = await startService({ LOG_LEVEL: 'info' }, undefined, { logStream: { write: (line) => void lines.push(line) } });
  });
  after(() => svc?.close());

  test('one info line per request: method, route, status, duration, account, request id; never a body or credential', async () => {
    const trader = await signIn(svc.url);
    const secretBody = { from: 'wallet', to: 'perps', amount: '123.456789' };
    const r = await call(svc.url, '/wallet/transfer', { token: trader.token, body: secretBody, headers: { 'x-request-id': 'log-me-1' } });
    assert.equal(r.status, 400);
    await call(svc.url, '/no/such/route?q=secret-query', { headers: { 'x-request-id': 'log-me-2' } });
    await waitFor(() => lines.some((l) => l.includes('log-me-2')));
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = parsed.filter((l) => l.requestId === 'log-me-1');
    assert.equal(mine.length, 1, 'exactly one line for the request');
    const line = mine[0]!;
    assert.equal(line.level, 30, 'info');
    assert.equal(line.msg, 'request');
    assert.equal(line.method, 'POST');
    assert.equal(line.route, '/wallet/transfer');
    assert.equal(line.status, 400);
    assert.equal(typeof line.durationMs, 'number');
    assert.ok((line.durationMs as number) >= 0);
    assert.equal(line.account, trader.lower);
    const unmatched = parsed.find((l) => l.requestId === 'log-me-2')!;
    assert.deepEqual([unmatched.route, unmatched.status, unmatched.account], [null, 404, null]);
    const all = lines.join('\n');
    assert.ok(!all.includes('123.456789'), 'no body');
    assert.ok(!all.includes(trader.token), 'no session token');
    assert.ok(!all.includes(ADMIN_TOKEN), 'no admin token');
    assert.ok(!all.includes('secret-query'), 'no query string');
    const anonymous = parsed.find((l) => l.msg === 'request' && l.route === '/auth/nonce');
    assert.ok(anonymous !== undefined && anonymous.account === null && typeof anonymous.requestId === 'string');
  });
});
