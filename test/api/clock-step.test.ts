/**
 * A step of the system clock while the service runs is not taken (runtime/steady-clock.ts), on the
 * real service whose SteadyClock reads a system clock the test moves: a dated future due at 08:00
 * is still trading after the system clock jumps from 07:00 to 09:00, /health shows the skew, and
 * once the clocks agree again the future expires at its own time as usual. And a restart with the
 * system clock set back while the service was down resumes from the journal's last time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { futureId } from '../../src/core/listings.ts';
import { SteadyClock } from '../../src/runtime/steady-clock.ts';
import { admin, call, fund, signIn, startService, type TestService } from '../support/harness.ts';
import { stopService } from '../streams/support.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const at = (h: number, m = 0) => Date.UTC(2026, 10, 23, h, m, 0);

/** The system clock: wall time and a monotonic reading, both moved by the test. */
const system = { wall: at(7), mono: 5_000 };
const steps: number[] = [];
const clock = new SteadyClock(5000, (skew) => steps.push(skew), () => system.wall, () => system.mono);
let ts: TestService;
let url: string;

async function tick(): Promise<void> {
  const outcome = await ts.service.ctx.sequencer.submit({ type: 'clock.tick' });
  assert.ok(outcome.ok, 'tick refused');
}

/** Real time passes: both readings move. */
async function pass(ms: number): Promise<void> {
  system.wall += ms;
  system.mono += ms;
  await tick();
}

const listed = async (id: string) => {
  const markets = (await call(url, '/perps/markets')).body as { id: string; status: string }[];
  return markets.find((m) => m.id === id)?.status ?? 'not listed';
};

before(async () => {
  ts = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: String(24 * HOUR), TICK_MS: '60000', DEPOSIT_CONFIRMATIONS: '1' }, undefined, { clock });
  url = ts.url;
});
after(async () => {
  await stopService(ts);
});

test('a forward step of the system clock does not expire a dated future early', async () => {
  await tick();
  const future = futureId('BTC', at(8));
  assert.equal(await listed(future), 'open');
  const r = await call(url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
  assert.equal(r.status, 200);
  const t = await signIn(url);
  await fund(url, t, '10000');
  assert.equal((await call(url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '10000' } })).status, 200);
  const bid = await call(url, '/perps/orders', { token: t.token, body: { marketId: future, side: 'buy', type: 'limit', quantity: '0.01', price: '99000' } });
  assert.equal(bid.status, 201, JSON.stringify(bid.body));

  system.wall += 2 * HOUR; // 07:00 → 09:00 on the system clock, a second of real time
  await pass(1000);
  // Before (the wall clock as it is): the future expired at 09:00 and the bid with it.
  assert.equal(await listed(future), 'open');
  const open = (await call(url, `/perps/orders/open?marketId=${future}`, { token: t.token })).body as { id: string }[];
  assert.deepEqual(open.map((o) => o.id), [bid.body.id]);
  const health = await call(url, '/health');
  assert.equal(health.status, 200);
  assert.equal(health.body.clockSkewMs, 2 * HOUR);
  assert.deepEqual(steps, [2 * HOUR], 'reported once');

  system.wall -= 2 * HOUR; // the step is undone
  await pass(1000);
  assert.equal((await call(url, '/health')).body.clockSkewMs, 0);
  assert.deepEqual(steps, [2 * HOUR, 0]);
  for (let m = 0; m < 60; m++) await pass(MINUTE); // real time reaches 08:00
  assert.equal(await listed(future), 'not listed', 'it expires at its own time');
  const after = (await call(url, `/perps/orders?marketId=${future}`, { token: t.token })).body as { id: string; status: string }[];
  assert.equal(after.find((o) => o.id === bid.body.id)?.status, 'expired');
});

test('a restart with the system clock an hour behind the journal resumes from the journal\'s time: prices are fresh, orders trade', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'clock-behind-'));
  const machine = { wall: at(10), mono: 1_000 };
  const restartedClock = () => new SteadyClock(5000, () => {}, () => machine.wall, () => machine.mono);
  let service = await startService({ FEED: 'push', TICK_MS: '60000', DEPOSIT_CONFIRMATIONS: '1' }, dir, { clock: restartedClock() });
  const t = await signIn(service.url);
  await fund(service.url, t, '10000');
  assert.equal((await call(service.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '10000' } })).status, 200);
  assert.equal((await call(service.url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin })).status, 200);
  await stopService(service);

  machine.wall = at(9); // set back an hour while the service was down
  service = await startService({ FEED: 'push', TICK_MS: '60000', DEPOSIT_CONFIRMATIONS: '1' }, dir, { clock: restartedClock() });
  try {
    assert.equal((await call(service.url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin })).status, 200);
    const stats = await call(service.url, '/perps/market-stats?marketId=BTC-PERP');
    // Before: the core stamped everything at the journal's 10:00 and judged this 09:00 price stale:
    // markPrice null, and every order that adds risk refused with MARKET_CLOSED for the hour.
    assert.notEqual(stats.body.markPrice, null, JSON.stringify(stats.body));
    const bid = await call(service.url, '/perps/orders', { token: t.token, body: { marketId: 'BTC-PERP', side: 'buy', type: 'limit', quantity: '0.01', price: '99000' } });
    assert.equal(bid.status, 201, JSON.stringify(bid.body));
    assert.ok(service.service.ctx.now() >= at(10), 'service time did not go back to the wall clock');
    assert.equal((await call(service.url, '/health')).body.clockSkewMs, -HOUR, 'the step is reported');
  } finally {
    await stopService(service);
  }
});
