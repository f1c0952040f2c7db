/**
 * The dead-man switch (`POST /orders/cancel-all-after`) and cancel on disconnect (private streams
 * with `cancelOnDisconnect=true`) over real HTTP and real SSE sockets against the real service, on a
 * manual clock (harness `startService(env, dir, { clock })`): the test moves service time and
 * submits `clock.tick` itself, so deadlines are hit to the millisecond; TICK_MS is a minute of wall
 * time, so the service's own ticker stays out of the way.
 *
 * Every trader holds three live orders on two venues: a resting BTC-PERP bid, an untriggered
 * BTC-PERP stop, and a resting BTC-USDC spot bid (CLOB engine).
 *   - validation: bad timeouts, extra fields, strings are 400 with the envelope and change nothing;
 *     no credentials 401; a read key 403; a trade key may arm it;
 *   - a client that stops calling loses every order at its deadline and not a millisecond before,
 *     with the usual order events (the order history shows them cancelled); one that keeps calling
 *     keeps them; 0 disarms;
 *   - cancel on disconnect: a stream killed from the client side (socket destroyed) cancels the
 *     account's orders, one without the flag does not; a read key may not ask for it;
 *   - a restart (snapshot, then journal): an armed switch keeps its deadline and fires at it; one
 *     whose deadline passed while the service was down fires on the first tick after the start; a
 *     flagged stream ended by the clean shutdown cancels nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { admin, call, fund, signIn, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const clock = { t: T0, now() { return this.t; } };
const ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: String(86_400_000),
  TICK_MS: '60000',
  DEPOSIT_CONFIRMATIONS: '1',
  SSE_HEARTBEAT_MS: '100',
  RATE_LIMIT_ANONYMOUS: '100000',
  RATE_LIMIT_ACCOUNT: '100000',
  RATE_LIMIT_ORDERS: '100000',
};
const dataDir = mkdtempSync(join(tmpdir(), 'cancel-after-'));
let ts: TestService;
let url: string;

before(async () => {
  ts = await startService(ENV, dataDir, { clock });
  url = ts.url;
  const r = await call(url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});
after(async () => {
  await ts.close();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Holder {
  readonly t: Trader;
  /** The ids of its three orders, sorted. */
  readonly ids: string[];
}

async function ok(path: string, t: Trader, body?: unknown, status = 200) {
  const r = await call(url, path, { token: t.token, body });
  assert.equal(r.status, status, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A signed-in trader with a resting perp bid, an untriggered perp stop and a resting spot bid. */
async function holder(): Promise<Holder> {
  const t = await signIn(url);
  await fund(url, t, '20000');
  await ok('/wallet/transfer', t, { from: 'wallet', to: 'perps', amount: '10000' });
  await ok('/wallet/transfer', t, { from: 'wallet', to: 'spot', amount: '10000' });
  const bid = await ok('/perps/orders', t, { marketId: 'BTC-PERP', side: 'buy', type: 'limit', quantity: '0.01', price: '95000' }, 201);
  const stop = await ok('/perps/orders', t, { marketId: 'BTC-PERP', side: 'buy', type: 'market', quantity: '0.01', stopPrice: '101000' }, 201);
  const spot = await ok('/orders', t, { marketId: 'BTC-USDC', side: 'buy', type: 'limit', quantity: '0.01', price: '95000' }, 201);
  assert.deepEqual([bid.status, stop.status, spot.status], ['open', 'untriggered', 'open']);
  return { t, ids: [bid.id, stop.id, spot.id].sort() };
}

/** The ids of the trader's live orders on both engines (perp resting and untriggered, option and spot), sorted. */
async function live(t: Trader): Promise<string[]> {
  const perps = await ok('/perps/orders/open', t) as { id: string }[];
  const clob = await ok('/orders/open', t) as { id: string }[];
  return [...perps, ...clob].map((o) => o.id).sort();
}

const arm = (t: Trader, timeoutMs: number) => ok('/orders/cancel-all-after', t, { timeoutMs });

/** Moves the clock to `at` and applies one clock tick there, as the service's ticker would. */
async function tickAt(at: number): Promise<void> {
  assert.ok(at >= clock.t, 'time only moves forward');
  clock.t = at;
  const outcome = await ts.service.ctx.sequencer.submit({ type: 'clock.tick' });
  assert.ok(outcome.ok, 'tick refused');
}

describe('POST /orders/cancel-all-after: validation and access', () => {
  let v: Trader;
  before(async () => {
    v = await signIn(url);
  });

  test('a bad timeoutMs, a missing or extra field is 400 VALIDATION_ERROR and arms nothing', async () => {
    const bodies: unknown[] = [
      { timeoutMs: 1 }, { timeoutMs: 4_999 }, { timeoutMs: 600_001 }, { timeoutMs: -5_000 }, { timeoutMs: 7_500.5 },
      { timeoutMs: '10000' }, { timeoutMs: null }, {}, { timeoutMs: 10_000, marketId: 'BTC-PERP' },
    ];
    for (const body of bodies) {
      const r = await call(url, '/orders/cancel-all-after', { token: v.token, body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'VALIDATION_ERROR', JSON.stringify(body));
      assert.equal(typeof r.body.message, 'string');
    }
    assert.deepEqual(await ok('/orders/cancel-all-after', v), { armed: false, deadline: null, deadlineMs: null });
  });

  test('no credentials 401; a read key 403 INSUFFICIENT_SCOPE; a trade key arms and reads it', async () => {
    const none = await call(url, '/orders/cancel-all-after', { body: { timeoutMs: 10_000 } });
    assert.equal(none.status, 401);
    assert.equal(none.body.error, 'UNAUTHENTICATED');
    const key = async (scope: string) => (await ok('/perps/me/api-keys', v, { name: scope, scope }, 201)).secret as string;
    const [read, trade] = [await key('read'), await key('trade')];
    const refused = await call(url, '/orders/cancel-all-after', { apiKey: read, body: { timeoutMs: 10_000 } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'INSUFFICIENT_SCOPE');
    const armed = await call(url, '/orders/cancel-all-after', { apiKey: trade, body: { timeoutMs: 10_000 } });
    assert.equal(armed.status, 200, JSON.stringify(armed.body));
    assert.equal(armed.body.deadlineMs, clock.t + 10_000);
    const seen = await call(url, '/orders/cancel-all-after', { apiKey: read });
    assert.equal(seen.status, 200);
    assert.deepEqual(seen.body, { armed: true, deadline: new Date(clock.t + 10_000).toISOString(), deadlineMs: clock.t + 10_000 });
    assert.equal((await call(url, '/orders/cancel-all-after', { apiKey: trade, body: { timeoutMs: 0 } })).body.armed, false);
  });
});

describe('the dead-man switch fires at its deadline', () => {
  test('a client that stops calling loses every order at the deadline, not before; one that keeps calling keeps them; 0 disarms', async () => {
    const [a, b] = [await holder(), await holder()];
    const t0 = clock.t;
    const r = await arm(a.t, 10_000);
    assert.deepEqual(r, {
      timeoutMs: 10_000, armed: true, deadline: new Date(t0 + 10_000).toISOString(), deadlineMs: t0 + 10_000, cancelled: [],
    });
    await arm(b.t, 10_000);

    await tickAt(t0 + 5_000);
    assert.equal((await arm(b.t, 10_000)).deadlineMs, t0 + 15_000, 'a call before the deadline re-arms it from now');
    await tickAt(t0 + 9_999);
    assert.deepEqual(await live(a.t), a.ids, 'not a millisecond before the deadline');
    await tickAt(t0 + 10_000);
    assert.deepEqual(await live(a.t), [], 'every order of A on both venues, the untriggered stop too');
    assert.deepEqual(await live(b.t), b.ids);
    assert.deepEqual(await ok('/orders/cancel-all-after', a.t), { armed: false, deadline: null, deadlineMs: null }, 'a fired switch disarms');
    const perpHistory = await ok('/perps/orders?limit=10', a.t) as { id: string; status: string }[];
    const clobHistory = await ok('/orders/me?limit=10', a.t) as { id: string; status: string }[];
    const ended = [...perpHistory, ...clobHistory].filter((o) => a.ids.includes(o.id));
    assert.deepEqual(ended.map((o) => o.status), ['cancelled', 'cancelled', 'cancelled'], 'the order history follows');

    // B keeps calling every 5 s, the clock ticking every second: its orders stay past every deadline it would have missed.
    for (let s = 11; s <= 40; s++) {
      if (s % 5 === 0) await arm(b.t, 10_000);
      await tickAt(t0 + s * 1_000);
    }
    assert.deepEqual(await live(b.t), b.ids, 'still calling at 40 s');
    const off = await arm(b.t, 0);
    assert.deepEqual(off, { timeoutMs: 0, armed: false, deadline: null, deadlineMs: null, cancelled: [] });
    await tickAt(clock.t + 3_600_000);
    assert.deepEqual(await live(b.t), b.ids, 'disarmed: nothing fires');
  });
});

/** A private stream opened on a raw socket, so the test can kill it from the client side. */
interface RawStream {
  readonly headers: http.IncomingHttpHeaders;
  destroy(): void;
}

function openRaw(path: string, headers: Record<string, string>): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url + path, { headers }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`${path}: ${res.statusCode}`));
        return;
      }
      let text = '';
      res.on('data', (b: Buffer) => {
        text += b.toString();
        if (text.includes('event: snapshot')) resolve({ headers: res.headers, destroy: () => req.destroy() });
      });
    });
    req.on('error', () => undefined); // destroyed on purpose
  });
}

const connections = () => ts.service.streams.stats().connections;

/** Kills the stream from the client side and waits until the server saw it close. */
async function kill(stream: RawStream): Promise<void> {
  const before = connections();
  stream.destroy();
  await waitFor(() => connections() < before, 5_000, 10);
}

describe('cancel on disconnect', () => {
  test('a flagged stream killed by the client cancels the account\'s orders; an unflagged one does not', async () => {
    const [e, f, g] = [await holder(), await holder(), await holder()];
    const flagged = await openRaw('/perps/stream/user?cancelOnDisconnect=true', { authorization: `Bearer ${e.t.token}` });
    assert.equal(flagged.headers['x-cancel-on-disconnect'], 'true');
    const plain = await openRaw('/perps/stream/user', { authorization: `Bearer ${f.t.token}` });
    assert.equal(plain.headers['x-cancel-on-disconnect'], undefined);
    const key = (await ok('/perps/me/api-keys', g.t, { name: 'bot', scope: 'trade' }, 201)).secret as string;
    const balances = await openRaw('/portfolio/balances/stream?cancelOnDisconnect=true', { 'x-api-key': key });

    await kill(plain);
    // Its close is handled (a cancel would have been applied at once): F keeps everything.
    assert.deepEqual(await live(f.t), f.ids, 'no flag, no cancel');
    assert.deepEqual(await live(e.t), e.ids);

    await kill(flagged);
    await waitFor(async () => (await live(e.t)).length === 0, 5_000);
    const history = await ok('/perps/orders?limit=10', e.t) as { id: string; status: string }[];
    assert.deepEqual(history.filter((o) => e.ids.includes(o.id)).map((o) => o.status), ['cancelled', 'cancelled']);
    assert.deepEqual(await live(f.t), f.ids, 'another account\'s orders stay');
    assert.deepEqual(await live(g.t), g.ids);

    await kill(balances);
    await waitFor(async () => (await live(g.t)).length === 0, 5_000);
  });

  test('a read key may not ask for it (403), a bad value is 400, and nothing opens', async () => {
    const h = await signIn(url);
    const read = (await ok('/perps/me/api-keys', h, { name: 'ro', scope: 'read' }, 201)).secret as string;
    const opened = ts.service.streams.stats().opened;
    const refused = await call(url, '/perps/stream/user?cancelOnDisconnect=true', { apiKey: read });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'INSUFFICIENT_SCOPE');
    const bad = await call(url, '/perps/stream/user?cancelOnDisconnect=maybe', { token: h.token });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'VALIDATION_ERROR');
    assert.equal(ts.service.streams.stats().opened, opened);
  });
});

describe('across a restart', () => {
  test('an armed switch keeps its deadline; downtime past a deadline fires on the first tick; a clean shutdown cancels nothing', async () => {
    const [c, d, h] = [await holder(), await holder(), await holder()];
    const tc = clock.t;
    await arm(c.t, 60_000);
    await arm(d.t, 20_000);
    const stream = await openRaw('/perps/stream/user?cancelOnDisconnect=true', { authorization: `Bearer ${h.t.token}` });
    assert.equal(stream.headers['x-cancel-on-disconnect'], 'true');
    // A snapshot that holds both switches: the restart restores it, then replays the journal after it.
    const head = ts.service.ctx.sequencer.stats().journalHead;
    await waitFor(async () => {
      const report = await ts.service.snapshotter.snapshotNow();
      return report.ok && report.seq >= head;
    }, 10_000, 50);

    await ts.close(); // the clean shutdown ends H's flagged stream
    clock.t = tc + 30_000; // 30 s of downtime: past D's deadline, not C's
    ts = await startService(ENV, dataDir, { clock });
    url = ts.url;

    // The ticker ticked once as the service started, at tc + 30 s.
    await waitFor(async () => (await live(d.t)).length === 0, 5_000);
    assert.deepEqual(await live(c.t), c.ids);
    assert.deepEqual(await live(h.t), h.ids, 'the shutdown is not a disconnect');
    assert.deepEqual(await ok('/orders/cancel-all-after', c.t), {
      armed: true, deadline: new Date(tc + 60_000).toISOString(), deadlineMs: tc + 60_000,
    });
    assert.equal((await ok('/orders/cancel-all-after', d.t)).armed, false);
    await tickAt(tc + 59_999);
    assert.deepEqual(await live(c.t), c.ids);
    await tickAt(tc + 60_000);
    assert.deepEqual(await live(c.t), []);
  });
});
