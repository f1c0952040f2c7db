/**
 * GET /portfolio/balances/stream over HTTP with a real EventSource against the real service.
 *
 * Covers: the snapshot `{ type: 'snapshot', ... payload }` with the four USDC buckets
 * `{ available, locked, total }`, pendingWithdrawalTotal and updatedAt; `update` frames after a
 * bucket transfer, a resting order (perps locked), and a withdrawal (pending total); another
 * account's changes never reaching the stream; and `event: error` UPSTREAM_UNAVAILABLE
 * (retryable) when the core stops (an exception injected into the exchange's execute, the
 * fail-stop path) or the service shuts down, with new streams then refused with 503.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, call, fund, holdJournal, signIn, startService, waitFor } from '../support/harness.ts';
import type { TestService, Trader } from '../support/harness.ts';
import { assertSequence, bearer, limit, publishIndex, stopService } from './support.ts';
import { STREAM_ENV, StreamClient } from './support.ts';

let ts: TestService;
let url: string;
let a: Trader;
let b: Trader;

const streamUrl = () => `${url}/portfolio/balances/stream`;
const zero = { available: '0', locked: '0', total: '0' };

before(async () => {
  ts = await startService(STREAM_ENV);
  url = ts.url;
  await publishIndex(url, 'BTC', '100000');
  [a, b] = await Promise.all([signIn(url), signIn(url)]);
  await Promise.all([fund(url, a, '1000'), fund(url, b, '1000')]);
});
after(async () => {
  await stopService(ts);
});

async function transfer(t: Trader, from: string, to: string, amount: string): Promise<void> {
  const r = await call(url, '/wallet/transfer', { token: t.token, body: { from, to, amount } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

describe('GET /portfolio/balances/stream', () => {
  test('snapshot, then an update whenever the caller\'s balances change', async () => {
    const client = new StreamClient(streamUrl(), bearer(a));
    try {
      const snap = await client.next((m) => m.event === 'snapshot');
      assert.equal(snap.data.type, 'snapshot');
      assert.equal(snap.data.eventType, 'BalancesSnapshot');
      const { updatedAt, ...buckets } = snap.data.payload;
      assert.match(updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.deepEqual(buckets, {
        wallet: { available: '1000', locked: '0', total: '1000' },
        perps: zero,
        options: zero,
        spot: zero,
        pendingWithdrawalTotal: '0',
      });

      await transfer(a, 'wallet', 'perps', '400');
      let u = await client.next((m) => m.event === 'update');
      assert.equal(u.data.type, 'update');
      assert.equal(u.data.eventType, 'BalancesUpdate');
      assert.deepEqual(u.data.payload.wallet, { available: '600', locked: '0', total: '600' });
      assert.deepEqual(u.data.payload.perps, { available: '400', locked: '0', total: '400' });

      let seen = client.messages.length;
      await limit(url, a, 'buy', '0.01', '90000');
      u = await client.next((m) => m.event === 'update', 5000, seen);
      const perps = u.data.payload.perps;
      assert.equal(perps.total, '400');
      assert.ok(Number(perps.locked) > 0, JSON.stringify(perps));
      assert.equal(Number(perps.available) + Number(perps.locked), 400);

      seen = client.messages.length;
      const w = await call(url, '/wallet/withdraw', { token: a.token, body: { amount: '100' } });
      assert.equal(w.status, 200, JSON.stringify(w.body));
      u = await client.next((m) => m.event === 'update' && m.data.payload.wallet.total === '500', 5000, seen);
      // the simulated chain may pay out within one interval; while pending, the total says so
      const pendings = client.messages.slice(seen).map((m) => m.data.payload.pendingWithdrawalTotal);
      assert.ok(pendings.every((p) => p === '100' || p === '0'), JSON.stringify(pendings));

      // another account's activity never reaches this stream
      await waitFor(() => ts.service.streams.stats().connections === 1);
      await new Promise((r) => setTimeout(r, 600));
      seen = client.messages.length;
      await transfer(b, 'wallet', 'perps', '250');
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(client.messages.length, seen, JSON.stringify(client.messages.slice(seen)));
      assertSequence(client.messages);
    } finally {
      client.close();
    }
  });
});

describe('durability', () => {
  test('a balance is streamed only once durable: neither an update nor a joiner\'s snapshot shows a batch still being written', async () => {
    const svc = await startService(STREAM_ENV);
    const perpsTotal = (m: { data: { payload: { perps: { total: string } } } }) => m.data.payload.perps.total;
    try {
      const t = await signIn(svc.url);
      await fund(svc.url, t, '1000');
      const move = (amount: string) =>
        call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount } });
      const early = new StreamClient(`${svc.url}/portfolio/balances/stream`, bearer(t));
      let late: StreamClient | null = null;
      const journal = holdJournal(svc, 'wallet.transfer');
      try {
        await early.next((m) => m.event === 'snapshot');
        const first = move('100');
        await waitFor(() => journal.held() === 1);
        const second = move('200'); // applied by the core, its own batch, held
        await waitFor(() => journal.held() === 2);
        journal.release();
        assert.equal((await first).status, 200);
        // The first transfer's event marks the group dirty; its next read sees the second transfer.
        late = new StreamClient(`${svc.url}/portfolio/balances/stream`, bearer(t));
        await new Promise((r) => setTimeout(r, 1000));
        const shown = [...early.messages, ...late.messages].filter((m) => m.event !== 'error').map(perpsTotal);
        assert.ok(!shown.includes('300'), `shown before durable (before: an update and the snapshot said 300): ${shown}`);
        journal.release();
        assert.equal((await second).status, 200);
        await early.next((m) => m.event === 'update' && perpsTotal(m) === '300');
        const snap = await late.next((m) => m.event === 'snapshot');
        assert.equal(perpsTotal(snap), '300');
        assertSequence(early.messages);
        assertSequence(late.messages);
      } finally {
        journal.releaseAll(); // a failed assertion must not leave the service waiting on its disk
        early.close();
        late?.close();
      }
    } finally {
      await stopService(svc);
    }
  });
});

describe('upstream failure and shutdown', () => {
  test('the core stopping ends streams with UPSTREAM_UNAVAILABLE (retryable); new ones get 503', async () => {
    const svc = await startService(STREAM_ENV);
    const loud = console.error;
    try {
      const t = await signIn(svc.url);
      const balances = new StreamClient(`${svc.url}/portfolio/balances/stream`, bearer(t));
      const book = new StreamClient(`${svc.url}/perps/book-stream?marketId=BTC-PERP`);
      try {
        await balances.next((m) => m.event === 'snapshot');
        await book.next((m) => m.event === 'snapshot');
        // fault injection: the next command throws inside the core, which is the fail-stop path
        const exchange = svc.service.exchange;
        console.error = () => undefined; // the harness reports the (expected) fail-stop loudly
        exchange.execute = () => {
          throw new Error('injected invariant failure');
        };
        const body = { underlying: 'BTC', price: '1' };
        const failed = await call(svc.url, '/admin/index', { body, headers: admin });
        assert.ok(failed.status >= 500, String(failed.status));
        for (const c of [balances, book]) {
          const err = await c.next((m) => m.event === 'error', 3000);
          assert.equal(err.data.code, 'UPSTREAM_UNAVAILABLE');
          assert.equal(err.data.retryable, true);
          assert.equal(typeof err.data.message, 'string');
        }
        const refused = await call(svc.url, '/perps/book-stream?marketId=BTC-PERP');
        assert.equal(refused.status, 503);
        assert.equal(refused.body.error, 'UNAVAILABLE');
      } finally {
        balances.close();
        book.close();
      }
    } finally {
      await stopService(svc);
      console.error = loud;
    }
  });

  test('shutting the service down ends open streams with UPSTREAM_UNAVAILABLE (retryable)', async () => {
    const svc = await startService(STREAM_ENV);
    const book = new StreamClient(`${svc.url}/perps/book-stream?marketId=BTC-PERP`);
    try {
      await book.next((m) => m.event === 'snapshot');
      await stopService(svc);
      const err = await book.next((m) => m.event === 'error', 3000);
      assert.equal(err.data.code, 'UPSTREAM_UNAVAILABLE');
      assert.equal(err.data.retryable, true);
    } finally {
      book.close();
    }
  });
});
