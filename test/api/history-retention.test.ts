/**
 * Retention of orders that ended without a fill, over real HTTP (docs/architecture.md "History"):
 * with HISTORY_UNFILLED_QUOTE_RETENTION_MS 60 s and HISTORY_UNFILLED_ORDER_RETENTION_MS 120 s, a
 * replaced bulk quote leaves the history once 60 s have passed since it ended, a cancelled order of
 * the client's own (perp and spot) once 120 s have; reads then answer as for an unknown order
 * (GET /perps/orders/{id} 404, absent from /perps/orders and /orders/me, a cancel 404 where it was
 * 409). A partly filled order, a filled one, a resting one and every fill stay. A restart on the
 * same files passes the strict replay check and reads the same. The OpenAPI descriptions of those
 * reads say so.
 *
 * How: a real service on loopback (temp SQLite kept across the restart, push index feed, no market
 * maker) whose clock the test moves forward; the journal worker prunes on service time (the time of
 * the newest command), so each step publishes the index once after moving the clock.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, call, fund, signIn, startService, type Reply, type TestService, type Trader } from '../support/harness.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '600000',
  TICK_MS: '60000',
  HISTORY_UNFILLED_QUOTE_RETENTION_MS: '60000',
  HISTORY_UNFILLED_ORDER_RETENTION_MS: '120000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};
const dir = mkdtempSync(join(tmpdir(), 'history-retention-'));
const clock = { offset: 0, now: () => Date.now() + clock.offset };
let svc: TestService;
let base: string;

before(async () => {
  svc = await startService(ENV, dir, { clock });
  base = svc.url;
  await publish();
});

after(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Publishes the index: a command stamped with the service's time, which the retention counts on. */
async function publish(): Promise<void> {
  const r = await call(base, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

function ok(reply: Reply, status = 200): Reply['body'] {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  return reply.body;
}

async function trader(): Promise<Trader> {
  const t = await signIn(base);
  await fund(base, t, '200000');
  for (const to of ['perps', 'spot']) {
    ok(await call(base, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to, amount: '100000' } }));
  }
  return t;
}

const post = (t: Trader, path: string, body: Record<string, unknown> = {}) => call(base, path, { method: 'POST', token: t.token, body });
const get = (t: Trader, path: string) => call(base, path, { token: t.token });
const perp = (t: Trader, fields: Record<string, unknown>) => post(t, '/perps/orders', { marketId: 'BTC-PERP', ...fields });

/** Moves the service clock on, publishes (the worker's time moves with it) and waits for `probe`. */
async function later(ms: number, probe: () => Promise<boolean>): Promise<void> {
  clock.offset += ms;
  await publish();
  const deadline = Date.now() + 10_000;
  while (!(await probe())) {
    assert.ok(Date.now() < deadline, 'not pruned within 10 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('unfilled ended orders leave the history after their retention; the rest stays, also after a restart', async () => {
  const [maker, taker] = await Promise.all([trader(), trader()]);
  const quote = { marketId: 'BTC-PERP', quoteId: 'q', cancelAll: true };
  const level = (price: string) => ({ side: 'buy', price, quantity: '0.01', postOnly: true });
  const replaced = ok(await post(maker, '/perps/quotes/bulk', { ...quote, quotes: [level('97000')] })).orders[0].id as string;
  const standing = ok(await post(maker, '/perps/quotes/bulk', { ...quote, quotes: [level('97100')] })).orders[0].id as string;
  const own = ok(await perp(maker, { side: 'buy', price: '98000', quantity: '0.01' }), 201).id as string;
  ok(await post(maker, `/perps/orders/${own}/cancel`));
  const partly = ok(await perp(maker, { side: 'sell', price: '100000', quantity: '0.02' }), 201).id as string;
  const taken = ok(await perp(taker, { side: 'buy', price: '100000', quantity: '0.01' }), 201).id as string;
  ok(await post(maker, `/perps/orders/${partly}/cancel`));
  const spot = ok(await post(maker, '/orders', { marketId: 'BTC-USDC', side: 'buy', price: '99000', quantity: '0.001' }), 201).id as string;
  ok(await post(maker, `/orders/${spot}/cancel`));
  const status = async (t: Trader, id: string) => (await get(t, `/perps/orders/${id}`)).status;
  assert.equal((await post(maker, `/perps/orders/${own}/cancel`)).status, 409, 'a finished order, while it is kept');

  await later(61_000, async () => (await status(maker, replaced)) === 404);
  assert.equal(await status(maker, own), 200, 'own orders keep 120 s');
  assert.equal(await status(maker, standing), 200, 'the live quote');

  await later(60_000, async () => (await status(maker, own)) === 404);
  const check = async () => {
    for (const id of [replaced, own]) assert.equal(await status(maker, id), 404, id);
    for (const id of [standing, partly]) assert.equal(await status(maker, id), 200, id);
    assert.equal(await status(taker, taken), 200);
    const listed = (ok(await get(maker, '/perps/orders')) as { id: string }[]).map((o) => o.id);
    assert.deepEqual(listed.sort(), [standing, partly].sort(), 'the list answers as if they never were');
    assert.deepEqual(ok(await get(maker, '/orders/me')), [], 'the cancelled spot order is gone too');
    const fills = ok(await get(maker, `/perps/orders/${partly}`)).fills as unknown[];
    assert.equal(fills.length, 1, 'a partly filled order keeps its fill');
    assert.equal((ok(await get(taker, '/perps/trades')) as unknown[]).length, 1);
    assert.equal((await post(maker, `/perps/orders/${own}/cancel`)).status, 404, 'a cancel of a pruned order: unknown');
    assert.equal((await post(maker, `/orders/${spot}/cancel`)).status, 404);
  };
  await check();

  await svc.close();
  svc = await startService(ENV, dir, { clock }); // JOURNAL_REPLAY_CHECK strict: balances reproduced
  base = svc.url;
  await check();
});

test('the OpenAPI document says so on the order reads', async () => {
  const doc = (await call(base, '/openapi.json')).body as { paths: Record<string, { get?: { description?: string } }> };
  for (const path of ['/perps/orders', '/perps/orders/{id}', '/orders/me', '/options/orders/me']) {
    assert.match(doc.paths[path]?.get?.description ?? '', /leave the history once a retention has passed/, path);
  }
  assert.match(doc.paths['/perps/orders/{id}']!.get!.description!, /pruned order's id is 404/);
});
