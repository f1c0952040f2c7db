/**
 * Server time and the TradingView UDF datafeed over HTTP against the real service, on a manual
 * clock (harness `startService(env, dir, { clock })`: the gateway and the sequencer read time from
 * it, the test advances it and submits `clock.tick` itself), so trades land in chosen minutes and
 * an expiry passes in milliseconds.
 *
 * Covers: `GET /time` and `/udf/time` read the service clock (exactly the manual clock, not the
 * system's); `/udf/config`; `/udf/symbols` for a perpetual, a dated future, a spot pair and an
 * option (type, pricescale, precision, expiry), with the `EXCHANGE:` prefix, and 404/400;
 * `/udf/search` by text, type and limit; `/udf/history` bars built from the trades at every
 * resolution asked, `to` excluded (where /perps/ohlc includes it), countback, `no_data` with
 * nextTime, `1D` = `D`, an option's bars (which /perps/ohlc does not serve), currencyCode, and the
 * refusals; the OpenAPI document; and, once a dated future and an option have expired, their
 * trades still on the tape while the future resolves as expired and neither can be streamed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ok, refused } from '../support/clob-http.ts';
import { admin, call, fund, signIn, startService, type TestService, type Trader } from '../support/harness.ts';
import { stopService } from '../streams/support.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const at = (h: number, m = 0) => Date.UTC(2026, 10, 23, h, m, 0);
const T0 = at(6);
const T0S = T0 / 1000;

const clock = { t: T0 - MINUTE, now() { return this.t; } };
let ts: TestService;
let url: string;
let alice: Trader;
let bob: Trader;
let option: string;
let future: string;

async function tick(): Promise<void> {
  const outcome = await ts.service.ctx.sequencer.submit({ type: 'clock.tick' });
  assert.ok(outcome.ok, 'tick refused');
}

/** Moves the clock to `to` one minute at a time, a tick each (submitted together). */
async function advanceTo(to: number): Promise<void> {
  const ticks = [];
  while (clock.t < to) {
    clock.t = Math.min(to, clock.t + MINUTE);
    ticks.push(ts.service.ctx.sequencer.submit({ type: 'clock.tick' }));
  }
  for (const outcome of await Promise.all(ticks)) assert.ok(outcome.ok, 'tick refused');
}

async function trader(): Promise<Trader> {
  const t = await signIn(url);
  await fund(url, t, '200000', 15_000);
  for (const to of ['perps', 'options']) {
    ok(await call(url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to, amount: '100000' } }));
  }
  return t;
}

/** One trade at the clock's time: alice rests, bob takes (perps and futures on /perps/orders). */
async function trade(marketId: string, takerSide: 'buy' | 'sell', quantity: string, price: string): Promise<void> {
  const path = marketId.split('-').length === 2 ? '/perps/orders' : '/orders';
  const body = (side: string) => ({ marketId, side, quantity, price, type: 'limit' });
  ok(await call(url, path, { token: alice.token, body: body(takerSide === 'buy' ? 'sell' : 'buy') }), 201);
  const taken = ok(await call(url, path, { token: bob.token, body: body(takerSide) }), 201);
  assert.equal(taken.status, 'filled', JSON.stringify(taken));
}

const udf = (path: string) => call(url, `/udf/${path}`);

before(async () => {
  ts = await startService({
    FEED: 'push',
    INDEX_MAX_AGE_MS: String(DAY),
    TICK_MS: '60000',
    DEPOSIT_CONFIRMATIONS: '1',
    RATE_LIMIT_ANONYMOUS: '100000',
  }, undefined, { clock });
  url = ts.url;
  for (const [underlying, price] of [['BTC', '100000'], ['ETH', '3000']]) {
    ok(await call(url, '/admin/index', { body: { underlying, price }, headers: admin }));
  }
  await tick(); // lists the futures and option ladders
  const list = ok(await call(url, '/options/instruments?underlying=BTC')) as { id: string; expiry: string; type: string; strike: string }[];
  const first = list.map((i) => i.expiry).sort()[0];
  assert.equal(first, new Date(at(8)).toISOString(), 'the nearest options expire today at 08:00');
  option = list.find((i) => i.expiry === first && i.type === 'call' && i.strike === '100000')!.id;
  future = 'BTC-23NOV26';
  [alice, bob] = await Promise.all([trader(), trader()]);

  clock.t = T0 + 10_000;
  await trade('BTC-PERP', 'buy', '0.01', '100000');
  clock.t = T0 + 20_000;
  await trade('BTC-PERP', 'buy', '0.02', '100200');
  clock.t = T0 + 70_000;
  await trade('BTC-PERP', 'sell', '0.03', '100100');
  clock.t = T0 + 80_000;
  await trade(option, 'buy', '1', '1500');
  clock.t = T0 + 90_000;
  await trade(future, 'sell', '0.5', '100000');
});
after(async () => {
  await stopService(ts);
});

describe('server time', () => {
  test('GET /time and /udf/time read the service clock', async () => {
    clock.t = T0 + 91_234;
    assert.deepEqual(ok(await call(url, '/time')), { epochMs: T0 + 91_234, iso: '2026-11-23T06:01:31.234Z' });
    const r = await udf('time');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(r.body, T0S + 91, 'whole Unix seconds as a bare number');
    refused(await call(url, '/time?tz=utc'), 400, 'VALIDATION_ERROR');
  });
});

describe('configuration, symbols and search', () => {
  test('config: search and resolve, server time, the resolutions', async () => {
    const c = ok(await udf('config'));
    assert.deepEqual(
      [c.supports_search, c.supports_group_request, c.supports_time, c.supports_marks, c.supports_timescale_marks],
      [true, false, true, false, false],
    );
    assert.deepEqual(c.supported_resolutions, ['1', '5', '15', '30', '60', '240', '1D']);
    assert.deepEqual(c.symbols_types.map((t: { value: string }) => t.value), ['', 'perp', 'future', 'spot', 'option']);
  });

  test('symbols: one LibrarySymbolInfo per kind of market', async () => {
    const perp = ok(await udf('symbols?symbol=BTC-PERP'));
    assert.deepEqual(perp, {
      name: 'BTC-PERP', ticker: 'BTC-PERP', full_name: 'EXCHANGE:BTC-PERP', description: 'BTC perpetual (USDC)',
      type: 'futures', session: '24x7', timezone: 'Etc/UTC', exchange: 'EXCHANGE', listed_exchange: 'EXCHANGE',
      format: 'price', minmov: 1, pricescale: 10, has_intraday: true, has_daily: true, has_weekly_and_monthly: false,
      intraday_multipliers: ['1', '5', '15', '30', '60', '240'], daily_multipliers: ['1'],
      supported_resolutions: ['1', '5', '15', '30', '60', '240', '1D'], volume_precision: 4, data_status: 'streaming',
      currency_code: 'USDC', expired: false,
    });
    assert.deepEqual(ok(await udf('symbols?symbol=EXCHANGE:BTC-PERP')), perp);
    const fut = ok(await udf(`symbols?symbol=${future}`));
    assert.deepEqual([fut.type, fut.expiration_date, fut.expired, fut.description],
      ['futures', at(8) / 1000, false, 'BTC dated future (USDC), expires 2026-11-23']);
    const spot = ok(await udf('symbols?symbol=BTC-USDC'));
    assert.deepEqual([spot.type, spot.pricescale, spot.volume_precision, spot.expiration_date], ['crypto', 100, 5, undefined]);
    const opt = ok(await udf(`symbols?symbol=${option}`));
    assert.deepEqual([opt.type, opt.ticker, opt.expiration_date], ['option', option, at(8) / 1000]);
    refused(await udf('symbols?symbol=DOGE-PERP'), 404, 'NOT_FOUND');
    refused(await udf('symbols'), 400, 'VALIDATION_ERROR');
  });

  test('search: by text, type and limit', async () => {
    const perps = ok(await udf('search?query=-perp&type=perp&exchange=&limit=30'));
    assert.deepEqual(perps.map((r: { ticker: string }) => r.ticker).sort(), ['BTC-PERP', 'ETH-PERP']);
    assert.deepEqual(perps.find((r: { ticker: string }) => r.ticker === 'BTC-PERP'), {
      symbol: 'BTC-PERP', full_name: 'EXCHANGE:BTC-PERP', description: 'BTC perpetual (USDC)',
      exchange: 'EXCHANGE', ticker: 'BTC-PERP', type: 'futures',
    });
    const options = ok(await udf('search?query=btc&type=option&limit=5'));
    assert.equal(options.length, 5);
    assert.ok(options.every((r: { type: string; ticker: string }) => r.type === 'option' && r.ticker.startsWith('BTC-')));
    assert.deepEqual(ok(await udf('search?query=usdc')).map((r: { ticker: string }) => r.ticker), ['BTC-USDC', 'ETH-USDC']);
    assert.deepEqual(ok(await udf('search?query=zzz')), []);
    refused(await udf('search?type=bond'), 400, 'VALIDATION_ERROR');
    refused(await udf('search?limit=0'), 400, 'VALIDATION_ERROR');
  });
});

describe('history', () => {
  const range = (from: number, to: number, extra = '') => `history?symbol=BTC-PERP&resolution=1&from=${from}&to=${to}${extra}`;

  test('one-minute bars from the trades; `to` excluded', async () => {
    assert.deepEqual(ok(await udf(range(T0S, T0S + 120))), {
      s: 'ok',
      t: [T0S, T0S + 60],
      o: ['100000', '100100'],
      h: ['100200', '100100'],
      l: ['100000', '100100'],
      c: ['100200', '100100'],
      v: ['0.03', '0.03'],
    });
    assert.deepEqual(ok(await udf(range(T0S, T0S + 60))).t, [T0S], 'the bar starting at `to` is left out');
    assert.deepEqual(ok(await call(url, `/perps/ohlc?symbol=BTC-PERP&resolution=1&from=${T0S}&to=${T0S + 60}`)).t,
      [T0S, T0S + 60], '/perps/ohlc keeps its inclusive `to`');
    assert.deepEqual(ok(await udf(range(T0S, T0S + 120).replace('BTC-PERP', 'EXCHANGE:BTC-PERP'))).t, [T0S, T0S + 60]);
  });

  test('countback, no_data with nextTime, coarser resolutions, 1D = D', async () => {
    assert.deepEqual(ok(await udf(range(0, T0S + 120, '&countback=1'))).t, [T0S + 60], 'the newest bar before `to`');
    assert.deepEqual(ok(await udf(range(T0S + 60, T0S + 60))), { s: 'no_data', nextTime: T0S });
    assert.deepEqual(ok(await udf(range(T0S + 120, T0S + 600))), { s: 'no_data', nextTime: T0S + 60 });
    assert.deepEqual(ok(await udf(range(T0S - 600, T0S))), { s: 'no_data' });
    const five = ok(await udf(`history?symbol=BTC-PERP&resolution=5&from=${T0S}&to=${T0S + 300}`));
    assert.deepEqual(five, { s: 'ok', t: [T0S], o: ['100000'], h: ['100200'], l: ['100000'], c: ['100100'], v: ['0.06'] });
    const day = at(0) / 1000;
    const daily = ok(await udf(`history?symbol=BTC-PERP&resolution=1D&from=${day}&to=${day + 86_400}`));
    assert.deepEqual(daily, { s: 'ok', t: [day], o: ['100000'], h: ['100200'], l: ['100000'], c: ['100100'], v: ['0.06'] });
    assert.deepEqual(ok(await udf(`history?symbol=BTC-PERP&resolution=D&from=${day}&to=${day + 86_400}`)), daily);
  });

  test('an option\'s bars (not served by /perps/ohlc); currencyCode', async () => {
    const bars = ok(await udf(`history?symbol=${option}&resolution=1&from=${T0S}&to=${T0S + 120}&currencyCode=USDC`));
    assert.deepEqual(bars, { s: 'ok', t: [T0S + 60], o: ['1500'], h: ['1500'], l: ['1500'], c: ['1500'], v: ['1'] });
    refused(await call(url, `/perps/ohlc?symbol=${option}`), 404, 'NOT_FOUND');
    refused(await udf(`history?symbol=BTC-PERP&resolution=1&from=${T0S}&to=${T0S + 120}&currencyCode=USD`), 400, 'VALIDATION_ERROR');
  });

  test('refusals: 404 unknown symbol, 400 for bad parameters', async () => {
    refused(await udf(`history?symbol=DOGE-PERP&resolution=1&from=${T0S}&to=${T0S + 60}`), 404, 'NOT_FOUND');
    for (const query of [
      `symbol=BTC-PERP&resolution=2&from=${T0S}&to=${T0S + 60}`,
      `symbol=BTC-PERP&from=${T0S}&to=${T0S + 60}`,
      `symbol=BTC-PERP&resolution=1&from=1.5&to=${T0S}`,
      `symbol=BTC-PERP&resolution=1&from=${T0S + 120}&to=${T0S}`,
      `symbol=BTC-PERP&resolution=1&from=${T0S}&to=${T0S + 60}&firstDataRequest=true`,
    ]) refused(await udf(`history?${query}`), 400, 'VALIDATION_ERROR');
    refused(await udf(`history?symbol=BTC-PERP&resolution=1&from=${T0S - 91 * 86_400}&to=${T0S}`), 400, 'RANGE_TOO_LARGE');
  });
});

describe('OpenAPI', () => {
  test('documents /time, the UDF routes and the trades stream', async () => {
    const doc = (await call(url, '/openapi.json')).body;
    for (const path of ['/time', '/udf/config', '/udf/symbols', '/udf/search', '/udf/time', '/udf/history', '/markets/{marketId}/trades/stream']) {
      assert.ok(doc.paths[path]?.get, path);
    }
    assert.deepEqual(doc.paths['/time'].get.tags, ['system']);
    assert.ok(doc.paths['/udf/time'].get.responses['200'].content['text/plain']);
    const history = doc.paths['/udf/history'].get;
    assert.deepEqual(history.parameters.map((p: { name: string }) => p.name).sort(),
      ['countback', 'currencyCode', 'from', 'price', 'resolution', 'symbol', 'to']);
    assert.ok(history.responses['404'] && history.responses['400']);
    const stream = doc.paths['/markets/{marketId}/trades/stream'].get;
    assert.deepEqual(stream.tags, ['streams']);
    assert.ok(stream.responses['200'].content['text/event-stream'] && stream.responses['429']);
  });
});

describe('after expiry', () => {
  test('an expired future and a settled option keep their tape; neither can be streamed', async () => {
    await advanceTo(at(9));
    const futureTape = ok(await call(url, `/markets/${future}/trades`));
    assert.deepEqual(futureTape.map((t: { price: string; quantity: string; takerSide: string }) => [t.price, t.quantity, t.takerSide]),
      [['100000', '0.5', 'sell']]);
    assert.equal(ok(await udf(`symbols?symbol=${future}`)).expired, true);
    const optionTape = ok(await call(url, `/markets/${option}/trades`));
    assert.deepEqual(optionTape.map((t: { price: string; createdAt: string }) => [t.price, t.createdAt]),
      [['1500', new Date(T0 + 80_000).toISOString()]]);
    refused(await udf(`symbols?symbol=${option}`), 404, 'NOT_FOUND'); // settled: the core lists it no more
    for (const id of [future, option]) refused(await call(url, `/markets/${id}/trades/stream`), 404, 'NOT_FOUND');
  });
});
