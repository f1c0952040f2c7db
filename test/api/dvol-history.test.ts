/**
 * GET /markets/dvol/history over HTTP on the real service with the simulated feed and the
 * reference market maker on (its quotes give the board fitted slices, so the clock ticks compute
 * a DVOL): the DVOL the service serves at GET /markets/dvol is recorded as one-minute candles
 * (the newest bar closes at the served value), per underlying, aggregated by resolution and
 * selected by [from, to]; bad input is a 4xx with the error envelope.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, startService, waitFor, type TestService } from '../support/harness.ts';

interface Bar {
  t: number;
  open: string;
  high: string;
  low: string;
  close: string;
}

const TWO_DECIMALS = /^\d{1,3}(\.\d{1,2})?$/;

describe('DVOL history', () => {
  let ts: TestService;
  let url: string;
  const bars = async (query: string): Promise<Bar[]> => {
    const r = await call(url, `/markets/dvol/history${query}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.bars;
  };

  before(async () => {
    ts = await startService({ FEED: 'simulated', MARKET_MAKER: 'on' });
    url = ts.url;
    await waitFor(async () => (await bars('?resolution=1&underlying=ETH')).length > 0 && (await bars('?resolution=1')).length > 0, 30_000, 200);
  });
  after(async () => {
    await ts?.close();
  });

  test('the DVOL served by /markets/dvol is what the newest minute closes at', async () => {
    let seen: { served: string | null; close: string | undefined } = { served: null, close: undefined };
    // A clock tick may land between the two reads: read again until one pair shares a tick.
    await waitFor(async () => {
      const served = (await call(url, '/markets/dvol')).body.dvol as string | null;
      const close = (await bars('?resolution=1')).at(-1)?.close;
      const again = (await call(url, '/markets/dvol')).body.dvol as string | null;
      seen = { served, close };
      return served !== null && served === again && close === served;
    }, 15_000, 50);
    assert.match(seen.close ?? '', TWO_DECIMALS);
    const r = await call(url, '/markets/dvol/history?resolution=1');
    assert.equal(r.body.underlying, 'BTC');
    assert.equal(r.body.resolution, '1');
    assert.equal(r.body.tenorDays, 30);
    for (const b of r.body.bars as Bar[]) {
      assert.equal(b.t % 60, 0);
      for (const v of [b.open, b.high, b.low, b.close]) assert.match(v, TWO_DECIMALS);
      for (const v of [b.open, b.close, b.low]) assert.ok(Number(v) <= Number(b.high) && Number(b.low) <= Number(v), JSON.stringify(b));
    }
  });

  test('per underlying, by resolution, within [from, to]', async () => {
    const btc = await bars('?resolution=1');
    const eth = await bars('?resolution=1&underlying=ETH');
    assert.notDeepEqual(btc.map((b) => b.close), eth.map((b) => b.close), 'ETH has its own index');
    const [day] = await bars('?resolution=D');
    assert.ok(day !== undefined);
    assert.equal(day.t % 86_400, 0, 'a daily bar starts at UTC midnight');
    assert.ok(btc.every((b) => Number(b.high) <= Number(day.high) && Number(b.low) >= Number(day.low)));
    const last = btc.at(-1)!;
    assert.deepEqual((await bars(`?resolution=1&from=${last.t}&to=${last.t}`)).map((b) => b.t), [last.t]);
    assert.deepEqual(await bars(`?resolution=1&from=${last.t + 3600}&to=${last.t + 7200}`), []);
  });

  test('bad input is a 4xx with { error, message }', async () => {
    const cases: [string, number, string][] = [
      ['?resolution=7', 400, 'VALIDATION_ERROR'],
      ['?from=200&to=100', 400, 'VALIDATION_ERROR'],
      ['?from=1.5', 400, 'VALIDATION_ERROR'],
      ['?from=0&to=8000000', 400, 'RANGE_TOO_LARGE'],
      ['?interval=5', 400, 'VALIDATION_ERROR'],
      ['?underlying=DOGE', 404, 'NOT_FOUND'],
    ];
    for (const [query, status, error] of cases) {
      const r = await call(url, `/markets/dvol/history${query}`);
      assert.equal(r.status, status, `${query}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, error, query);
      assert.equal(typeof r.body.message, 'string');
    }
  });
});
