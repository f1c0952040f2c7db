/**
 * Two gateways over one leader core (and a standby), a history projector, real PostgreSQL and
 * NATS: any gateway serves any client, and what one gateway acknowledged, the other's next read
 * shows (live state from its replica, history from PostgreSQL), and what one revoked (an API key,
 * a session), the other refuses from the next request on. The roles reach NATS over TLS with a
 * token and client certificates.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { Cluster } from '../support/cluster.ts';
import { call, fund, signIn, waitFor } from '../support/harness.ts';

let cluster: Cluster;
let a: string;
let b: string;

before(async () => {
  // A short retention for orders that end unfilled: the projector prunes the history as the embedded worker does.
  // NATS over TLS with a token and client certificates, as docs/deploy.md asks of a deployment.
  cluster = await Cluster.start({ cores: 2, gateways: 2, secureNats: true, env: { HISTORY_UNFILLED_ORDER_RETENTION_MS: '1000' } });
  [a, b] = cluster.gateways.map((g) => g.url) as [string, string];
});

after(async () => {
  await cluster?.stop();
});

test('a session, a deposit and an order made through one gateway are read back at once through the other', { timeout: 120_000 }, async () => {
  const trader = await signIn(a);
  await fund(a, trader, '5000', 20_000);
  const onB = await call(b, '/wallet/balance', { token: trader.token });
  assert.equal(onB.status, 200, 'the session signed on gateway A is accepted by gateway B');
  assert.equal(onB.body.walletBalance, '5000');
  const moved = await call(b, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '1000' } });
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  const perps = await call(a, '/perps/balances', { token: trader.token });
  assert.equal(perps.status, 200, JSON.stringify(perps.body));
  assert.equal(perps.body.balance, '1000', 'gateway A shows the transfer gateway B acknowledged');

  await waitFor(async () => typeof (await call(a, '/perps/market-stats?marketId=BTC-PERP')).body?.markPrice === 'string', 20_000, 100);
  const mark = Number((await call(a, '/perps/market-stats?marketId=BTC-PERP')).body.markPrice);
  const placed = await call(a, '/perps/orders', {
    token: trader.token,
    body: { marketId: 'BTC-PERP', side: 'buy', type: 'limit', price: String(Math.floor(mark * 0.8)), quantity: '0.01', clientOrderId: 'cross-gateway-1' },
  });
  assert.equal(placed.status, 201, JSON.stringify(placed.body));
  const open = await call(b, '/perps/orders/open', { token: trader.token });
  assert.equal(open.status, 200, JSON.stringify(open.body));
  assert.deepEqual(open.body.map((o: { id: string }) => o.id), [placed.body.id], 'gateway B lists the order gateway A acknowledged');
  const inHistory = await call(b, `/perps/orders/${placed.body.id}`, { token: trader.token });
  assert.equal(inHistory.status, 200, JSON.stringify(inHistory.body));

  const ledger = await call(b, '/wallet/history', { token: trader.token });
  assert.equal(ledger.status, 200, JSON.stringify(ledger.body));
  assert.ok(JSON.stringify(ledger.body).includes('5000'), 'the deposit is in the history gateway B reads from PostgreSQL');

  const cancelled = await call(b, `/perps/orders/${placed.body.id}/cancel`, { method: 'POST', token: trader.token });
  assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
  assert.deepEqual((await call(a, '/perps/orders/open', { token: trader.token })).body, [], 'gateway A sees the cancel gateway B acknowledged');
});

test('an API key or a session revoked through one gateway is refused by the other on the next request', { timeout: 60_000 }, async () => {
  const trader = await signIn(a);
  const db = new pg.Client(cluster.postgres.url);
  await db.connect();
  for (let i = 0; i < 5; i++) {
    const created = await call(a, '/perps/me/api-keys', { token: trader.token, body: { name: `revoked-${i}`, scope: 'read' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await call(b, '/perps/balances', { apiKey: created.body.secret })).status, 200, 'the key works on B (and B now holds it in memory)');
    // The gateways' LISTEN connections dropped (they listen again 500 ms later): the revocation's
    // notification is lost, so only B's read before the check can refuse the key at once.
    await db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN identity_changed%'");
    const revoked = await call(a, `/perps/me/api-keys/${created.body.id}`, { method: 'DELETE', token: trader.token });
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    const onB = await call(b, '/perps/balances', { apiKey: created.body.secret });
    assert.equal(onB.status, 401, `key ${i}: revoked on A, refused by B at once (${JSON.stringify(onB.body)})`);
    await new Promise((resolve) => setTimeout(resolve, 600));
  }
  await db.end();
  const session = await signIn(b);
  assert.equal((await call(a, '/wallet/balance', { token: session.token })).status, 200);
  assert.equal((await call(b, '/auth/logout', { method: 'POST', token: session.token })).status < 300, true);
  assert.equal((await call(a, '/wallet/balance', { token: session.token })).status, 401, 'signed out on B, refused by A at once');
});

test('the projector prunes an order that ended unfilled once its retention has passed', { timeout: 60_000 }, async () => {
  const trader = await signIn(b);
  await fund(b, trader, '1000', 20_000);
  assert.equal((await call(a, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '1000' } })).status, 200);
  const mark = Number((await call(a, '/perps/market-stats?marketId=BTC-PERP')).body.markPrice);
  const placed = await call(a, '/perps/orders', {
    token: trader.token,
    body: { marketId: 'BTC-PERP', side: 'buy', type: 'limit', price: String(Math.floor(mark * 0.8)), quantity: '0.001' },
  });
  assert.equal(placed.status, 201, JSON.stringify(placed.body));
  assert.equal((await call(b, `/perps/orders/${placed.body.id}/cancel`, { method: 'POST', token: trader.token })).status, 200);
  assert.equal((await call(a, `/perps/orders/${placed.body.id}`, { token: trader.token })).status, 200, 'kept while its retention runs');
  await waitFor(async () => (await call(b, `/perps/orders/${placed.body.id}`, { token: trader.token })).status === 404, 20_000, 250);
});
