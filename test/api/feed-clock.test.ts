/**
 * The simulated feed's sources live in the service, so they stamp their prices with the service
 * clock (runtime/steady-clock.ts), not the system clock: on a service whose clock reads a system
 * clock the test sets to another day, the index is fresh from the first tick, and it stays fresh
 * across a step of the system clock the service clock refuses and past the index's maximum age.
 * Before, the feed stamped with Date.now(): its prices were out of time for the service from the
 * start, and after a refused step until a restart (markets taking only risk-reducing orders).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { SteadyClock } from '../../src/runtime/steady-clock.ts';
import { call, startService, type TestService } from '../support/harness.ts';
import { stopService } from '../streams/support.ts';

const HOUR = 3_600_000;
/** The system clock the service reads: another day than the real one, moved by the test only. */
const system = { wall: Date.UTC(2027, 2, 1, 7, 0, 0), mono: 5_000 };
const clock = new SteadyClock(5000, () => undefined, () => system.wall, () => system.mono);
let ts: TestService;

before(async () => {
  ts = await startService({ INDEX_MAX_AGE_MS: '10000' }, undefined, { clock });
});
after(async () => {
  await stopService(ts);
});

/** Real time passes: both readings move. */
function pass(ms: number): void {
  system.wall += ms;
  system.mono += ms;
}

/** BTC-PERP's mark once the feed's next tick has been applied (the feed ticks every second). */
async function markAfterNextTick(): Promise<string | null> {
  const seen = ts.service.exchange.index.index('BTC', clock.now())?.sourceTs ?? null;
  for (let i = 0; i < 40; i++) {
    const now = ts.service.exchange.index.index('BTC', clock.now())?.sourceTs ?? null;
    if (now !== null && now !== seen) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const markets = (await call(ts.url, '/perps/markets')).body as { id: string; markPrice: string | null }[];
  return markets.find((m) => m.id === 'BTC-PERP')?.markPrice ?? null;
}

test('the simulated feed stamps its prices with the service clock, through a refused step of the system clock', async () => {
  assert.notEqual(await markAfterNextTick(), null, 'before: no mark, the feed\'s prices were 100 days out of time');
  system.wall -= 2 * HOUR; // the system clock steps back two hours: the service clock does not follow
  pass(1000);
  assert.notEqual(await markAfterNextTick(), null, 'the index is fresh after the step');
  pass(30_000); // time moves on past the index's maximum age
  assert.notEqual(await markAfterNextTick(), null, 'and stays fresh as service time passes');
  assert.equal((await call(ts.url, '/health')).body.clockSkewMs, -2 * HOUR);
});
