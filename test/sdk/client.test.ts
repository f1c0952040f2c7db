/**
 * The SDK (sdk/src) against the real service on loopback (test/support/harness.ts): SIWE sign-in
 * from a private key and from a viem account, session renewal before expiry and after a revoked
 * session (401), a deposit through the admin endpoint, transfers with their clientTransferId, a
 * perp trade between two SDK clients, amend / cancel / list, positions and close, bulk quotes,
 * API keys (x-api-key, scope, revocation), decimal strings checked before a request leaves, and the
 * contract's retry rules: a lost answer to an order retried with the same clientOrderId (one order,
 * read back), 429 retried after Retry-After within bounded attempts, and 503 / network failures
 * against a loopback stub (only requests safe to repeat are retried after a network failure).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ApiError, ExchangeClient, NetworkError, type RetryInfo } from '../../sdk/src/index.ts';
import { ADMIN_TOKEN, admin, call, startService, waitFor, type TestService } from '../support/harness.ts';
import { faultProxy } from './support.ts';

const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '60000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};
const BTC = 'BTC-PERP';

let svc: TestService;
let base: string;

before(async () => {
  svc = await startService(ENV);
  base = svc.url;
  const r = await call(base, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});

after(async () => {
  await svc.close();
});

/** A signed-in SDK client with `amount` USDC deposited through the admin endpoint and credited. */
async function funded(amount: string, url = base): Promise<ExchangeClient> {
  const client = new ExchangeClient({ baseUrl: url, signer: generatePrivateKey() });
  await client.signIn();
  const dep = await client.post('/admin/chain/deposits', {
    body: { walletAddress: client.address!, amount },
  }, { anonymous: true, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.match(dep.txHash, /^0x/);
  await waitFor(async () => (await client.balance()).walletBalance === amount, 5000);
  return client;
}

describe('sign-in and sessions', () => {
  test('signs in from a private key with the domain, uri and chainId the service names', async () => {
    const key = generatePrivateKey();
    const client = new ExchangeClient({ baseUrl: base, signer: key });
    const balance = await client.balance(); // the first call signs in
    assert.equal(balance.walletBalance, '0');
    const session = client.currentSession!;
    assert.equal(session.walletAddress.toLowerCase(), privateKeyToAccount(key).address.toLowerCase());
    assert.ok(session.expiresAt > Date.now() + 6 * 86_400_000, 'a 7-day session');
  });

  test('signs in with any viem account (a LocalAccount object)', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const client = new ExchangeClient({ baseUrl: base, signer: account });
    const addr = await client.depositAddress();
    assert.equal(addr.asset, 'USDC');
    assert.equal(client.currentSession!.walletAddress.toLowerCase(), account.address.toLowerCase());
  });

  test('signs in again before the session expires, and after the session is revoked (401)', async () => {
    const week = 7 * 86_400_000;
    // Renew when less than (7 days - 1.5 s) is left: the session (its expiry in whole seconds) is due
    // for renewal between 0.5 and 1.5 s after sign-in.
    const client = new ExchangeClient({ baseUrl: base, signer: generatePrivateKey(), renewBeforeMs: week - 1500 });
    await client.balance();
    const first = client.currentSession!.token;
    await client.balance();
    assert.equal(client.currentSession!.token, first, 'not renewed while fresh');
    await new Promise((r) => setTimeout(r, 1600));
    await client.balance();
    const second = client.currentSession!.token;
    assert.notEqual(second, first, 'renewed before expiry');

    // Revoked behind the client's back: the next call answers 401, the client signs in and retries.
    const out = await call(base, '/auth/logout', { method: 'POST', token: second });
    assert.equal(out.status, 200, JSON.stringify(out.body));
    assert.equal((await call(base, '/wallet/balance', { token: second })).status, 401);
    const steady = new ExchangeClient({ baseUrl: base, token: second });
    await assert.rejects(steady.balance(), (e: unknown) => e instanceof ApiError && e.status === 401);
    const again = new ExchangeClient({ baseUrl: base, signer: generatePrivateKey() });
    await again.balance();
    await call(base, '/auth/logout', { method: 'POST', token: again.currentSession!.token });
    const before = again.currentSession!.token;
    assert.equal((await again.balance()).walletBalance, '0');
    assert.notEqual(again.currentSession!.token, before, 'signed in again after the 401');
  });
});

describe('wallet', () => {
  test('deposit, transfer and withdraw in exact decimal strings; a transfer id moves money once', async () => {
    const client = await funded('1000.25');
    const id = 'sdk-transfer-1';
    const moved = await client.transfer({ from: 'wallet', to: 'perps', amount: '250.125', clientTransferId: id });
    assert.equal(moved.walletBalance, '750.125');
    assert.equal(moved.perpsBalance, '250.125');
    await assert.rejects(
      client.transfer({ from: 'wallet', to: 'perps', amount: '250.125', clientTransferId: id }),
      (e: unknown) => e instanceof ApiError && e.status === 409 && e.code === 'CONFLICT',
    );
    assert.equal((await client.balance()).perpsBalance, '250.125', 'nothing moved twice');
    // Without an id the SDK supplies a fresh one each time: two transfers move twice.
    await client.transfer({ from: 'perps', to: 'wallet', amount: '0.125' });
    await client.transfer({ from: 'perps', to: 'wallet', amount: '0.125' });
    assert.equal((await client.balance()).perpsBalance, '249.875');
    const w = await client.withdraw({ amount: '10' });
    assert.equal(typeof w.withdrawalId, 'string');
    const after = await client.balance();
    assert.equal(after.walletBalance, '740.375');
    assert.equal(after.pendingWithdrawalTotal === '10' || after.pendingWithdrawalTotal === '0', true);
  });

  test('a number or an exponent never leaves the client as money', async () => {
    const client = new ExchangeClient({ baseUrl: base, signer: generatePrivateKey() });
    const seen: string[] = [];
    const spy = new ExchangeClient({
      baseUrl: base, signer: generatePrivateKey(),
      fetch: (input, init) => {
        seen.push(String(input));
        return fetch(input, init);
      },
    });
    await assert.rejects(client.transfer({ from: 'wallet', to: 'perps', amount: 5 as unknown as string }), /decimal string/);
    await assert.rejects(spy.placeOrder({ marketId: BTC, side: 'buy', quantity: '1e-2', price: '100000' }), /quantity must be a decimal string/);
    assert.equal(seen.filter((u) => u.includes('/perps/orders')).length, 0, 'the order was never sent');
  });
});

describe('trading', () => {
  let maker: ExchangeClient;
  let taker: ExchangeClient;

  before(async () => {
    [maker, taker] = await Promise.all([funded('200000'), funded('200000')]);
    for (const c of [maker, taker]) await c.transfer({ from: 'wallet', to: 'perps', amount: '150000' });
  });

  test('place, list, fill, positions and close between two SDK clients', async () => {
    const ask = await maker.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.5', price: '100010', postOnly: true });
    assert.equal(ask.status, 'open');
    assert.match(ask.clientOrderId!, /^[0-9a-f-]{36}$/, 'a fresh clientOrderId');
    const open = await maker.openOrders();
    assert.deepEqual(open.map((o) => o.id), [ask.id]);
    const book = await taker.book(BTC);
    assert.deepEqual(book.asks[0], ['100010', '0.5']);

    const buy = await taker.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.2', price: '100010', timeInForce: 'ioc' });
    assert.equal(buy.status, 'filled');
    assert.equal(buy.filledQuantity, '0.2');
    assert.equal(buy.avgFillPrice, '100010');
    const { perps } = await taker.positions();
    const pos = perps.find((p) => p.marketId === BTC)!;
    assert.equal(pos.side, 'long');
    assert.equal(pos.size, '0.2');

    const bid = await maker.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.2', price: '100000', postOnly: true });
    const closed = await taker.closePosition({ marketId: BTC, orderType: 'market' });
    assert.equal(closed.side, 'sell');
    assert.equal(closed.filledQuantity, '0.2');
    assert.equal((await taker.positions()).perps.filter((p) => p.marketId === BTC && p.size !== '0').length, 0);
    assert.equal((await maker.get('/perps/orders/{id}', { params: { id: bid.id } })).status, 'filled');

    const recent = await maker.orders(10);
    assert.ok(recent.some((o) => o.id === ask.id && o.filledQuantity === '0.2'));
    const cancelled = await maker.cancelOrder(ask.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(await maker.openOrders(), []);
  });

  test('an order whose answer was lost is retried with the same clientOrderId: one order, read back', async () => {
    const proxy = await faultProxy(base);
    try {
      const client = new ExchangeClient({ baseUrl: proxy.url, token: maker.currentSession!.token, retry: { baseDelayMs: 10 } });
      proxy.loseNextAnswer((method, path) => method === 'POST' && path === '/perps/orders');
      const order = await client.placeOrder({ marketId: BTC, side: 'sell', quantity: '0.3', price: '100500', postOnly: true });
      assert.equal(proxy.seen.filter((r) => r === 'POST /perps/orders').length, 2, 'sent twice');
      const mine = (await maker.openOrders()).filter((o) => o.clientOrderId === order.clientOrderId);
      assert.equal(mine.length, 1, 'placed once');
      assert.equal(mine[0]!.id, order.id);
      assert.equal(order.quantity, '0.3');
      assert.deepEqual(await maker.cancelAll(BTC), [order.id]);
    } finally {
      await proxy.close();
    }
  });

  test('amend and cancel a spot order; bulk quotes replace a ladder', async () => {
    const grant = await maker.post('/admin/treasury/grant', {
      body: { walletAddress: maker.address!, asset: 'BTC', amount: '1' },
    }, { anonymous: true, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(grant.spotBalance, '1');
    await maker.transfer({ from: 'wallet', to: 'spot', amount: '10000' });
    const order = await maker.placeOrder({ marketId: 'BTC-USDC', side: 'sell', quantity: '0.1', price: '101000' });
    assert.equal(order.status, 'open');
    const amended = await maker.amendOrder(order.id, { price: '100900', quantity: '0.05' });
    assert.equal(amended.price, '100900');
    assert.equal(amended.quantity, '0.05');
    assert.equal((await maker.cancelOrder(order.id)).status, 'cancelled', 'found on the CLOB after the perps venue said 404');

    const ladder = (price: string) => ({
      marketId: BTC, quoteId: 'sdk-mm', cancelAll: true,
      quotes: [{ side: 'buy' as const, price, quantity: '0.1', postOnly: true }, { side: 'sell' as const, price: '100900', quantity: '0.1', postOnly: true }],
    });
    const q1 = await maker.bulkQuote(ladder('99000'));
    assert.equal(q1.orders.length, 2);
    const q2 = await maker.bulkQuote(ladder('99100'));
    assert.deepEqual([...q2.cancelled].sort(), q1.orders.map((o) => o.id).sort());
    assert.deepEqual((await maker.book(BTC)).bids[0], ['99100', '0.1']);
    assert.equal((await maker.cancelAll()).length, 2);
  });

  test('the dead-man switch is armed and disarmed through the SDK', async () => {
    const armed = await maker.cancelAllAfter(60_000);
    assert.equal(armed.armed, true);
    assert.equal((await maker.get('/orders/cancel-all-after')).armed, true);
    assert.equal((await maker.cancelAllAfter(0)).armed, false);
  });

  test('API keys: created, used as x-api-key within their scope, revoked', async () => {
    const created = await maker.createApiKey({ name: 'sdk test', scope: 'read' });
    const keyClient = new ExchangeClient({ baseUrl: base, apiKey: created.secret });
    assert.deepEqual((await keyClient.positions()).perps.filter((p) => p.size !== '0'), []);
    await assert.rejects(
      keyClient.placeOrder({ marketId: BTC, side: 'buy', quantity: '0.1', price: '90000' }),
      (e: unknown) => e instanceof ApiError && e.status === 403 && e.code === 'INSUFFICIENT_SCOPE',
    );
    assert.ok((await maker.apiKeys()).some((k) => k.id === created.id));
    await maker.revokeApiKey(created.id);
    await assert.rejects(keyClient.openOrders(), (e: unknown) => e instanceof ApiError && e.status === 401);
  });
});

describe('retries', () => {
  test('429 is retried after Retry-After, within the attempts allowed', async () => {
    const limited = await startService({ ...ENV, RATE_LIMIT_ANONYMOUS: '3', RATE_LIMIT_WINDOW_MS: '1000' });
    try {
      const retries: RetryInfo[] = [];
      const client = new ExchangeClient({ baseUrl: limited.url, onRetry: (r) => retries.push(r) });
      const started = Date.now();
      for (let i = 0; i < 5; i++) assert.equal((await client.markets()).length > 0, true);
      assert.ok(retries.length >= 1, 'at least one 429 was retried');
      assert.match(retries[0]!.reason, /^429 RATE_LIMITED/);
      assert.ok(retries[0]!.delayMs >= 1000, `waited Retry-After (${retries[0]!.delayMs} ms)`);
      assert.ok(Date.now() - started >= 900);

      const impatient = new ExchangeClient({ baseUrl: limited.url, retry: { maxAttempts: 1 } });
      const burst = await Promise.allSettled(Array.from({ length: 6 }, () => impatient.markets()));
      const refused = burst.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
      assert.ok(refused.length >= 1);
      assert.ok(refused.every((e) => e instanceof ApiError && e.status === 429 && e.retryAfterMs !== null && e.retryAfterMs >= 1000));
    } finally {
      await limited.close();
    }
  });

  test('503 with Retry-After (seconds or a date) is retried; network failures only when safe to repeat', async () => {
    let calls = 0;
    let mode: '503' | 'reset' = '503';
    const stub = createServer((req, res) => {
      calls++;
      if (mode === 'reset' && calls <= 2) return req.socket.destroy();
      if (mode === '503' && calls === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        return res.end(JSON.stringify({ error: 'UNAVAILABLE', message: 'starting' }));
      }
      if (mode === '503' && calls === 2) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': new Date(Date.now() + 1500).toUTCString() });
        return res.end(JSON.stringify({ error: 'UNAVAILABLE', message: 'starting' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[]');
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
    try {
      const retries: RetryInfo[] = [];
      const client = new ExchangeClient({ baseUrl: url, onRetry: (r) => retries.push(r), retry: { baseDelayMs: 10 } });
      assert.deepEqual(await client.markets(), []);
      assert.equal(calls, 3);
      assert.deepEqual(retries.map((r) => r.reason), ['503 UNAVAILABLE', '503 UNAVAILABLE']);
      assert.equal(retries[0]!.delayMs, 1000);
      assert.ok(retries[1]!.delayMs > 0 && retries[1]!.delayMs <= 1500);

      mode = 'reset';
      calls = 0;
      assert.deepEqual(await client.markets(), [], 'a GET is retried after a reset connection');
      assert.equal(calls, 3);
      calls = 0;
      const token = new ExchangeClient({ baseUrl: url, token: 'x', retry: { baseDelayMs: 10 } });
      await assert.rejects(token.post('/perps/quotes', { body: { marketId: BTC } }), NetworkError);
      assert.equal(calls, 1, 'a POST without an idempotency id is not repeated after a lost answer');
    } finally {
      stub.closeAllConnections();
      await new Promise<void>((r) => stub.close(() => r()));
    }
  });
});
