/**
 * The option board and DVOL over HTTP against a known surface (contract "Option board",
 * "Volatility index (DVOL)"; research/mechanics.md 3-4). The real service runs in-process on a
 * manual clock (the harness `{ clock }` option): time only moves when the test moves it, and the
 * board is recomputed when the test submits `clock.tick` through the service's sequencer (the
 * periodic ticker is set to 60 s so it never interferes). The push feed publishes BTC 100 000 and
 * ETH 3 000 (fresh for an hour). Two funded accounts quote every listed option through
 * POST /quotes/bulk around Black-76 prices from a flat 40 % surface on each expiry's forward
 * (half a vol point of vega each side, rounded outward to the tick); the BTC account quotes BTC,
 * the ETH account ETH.
 *
 * Expiries on the fixed date 2026-11-22 12:00 UTC: 23NOV, 24NOV, 27NOV, 04DEC, 25DEC, 26MAR27.
 * How each forward source is forced:
 *   - `future`: the default — every listed expiry has a dated future marked while the index is fresh;
 *   - `parity` (24NOV): the future of that expiry is made mark-less by overriding the linear engine's
 *     `markAt` for that one market (the same view /perps/markets then shows: markPrice null), and
 *     calls and puts are quoted on every strike, so the board takes put-call parity from the books;
 *   - `index` (27NOV): the same override, but only out-of-the-money options are quoted (puts below
 *     the forward, calls at or above), so no strike is two-sided on both call and put and there is
 *     no parity forward: the board falls back to the index;
 *   - an expiry with fewer than 5 quotes (23NOV, four instruments quoted) has a forward from its
 *     future but no fitted slice, so none of its rows has a mark.
 * Checks: parity C - P = F - K on the marks to two ticks, call marks decreasing and convex in
 * strike, the fitted iv at 40 %, deltas, calendar flags, ?underlying=ETH, 404 and 400 cases, marks
 * and DVOL withdrawn once the board is older than its freshness limit and back after a tick, and
 * DVOL (VIX method on 04DEC and 25DEC) at 40 within 1.5 vol points (the ±8-strike ladder truncates
 * the variance integral by about 0.3 points at this vol).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { black76 } from '../../src/pricing/black76.ts';
import {
  admin, call, fund, signIn, startService, type TestService, type Trader,
} from '../support/harness.ts';

const DAY = 86_400_000;
const YEAR = 365 * DAY;
const NOW = Date.UTC(2026, 10, 22, 12);
const VOL = 0.4;
const iso = (ms: number) => new Date(ms).toISOString();
const E = {
  few: iso(Date.UTC(2026, 10, 23, 8)),
  parity: iso(Date.UTC(2026, 10, 24, 8)),
  index: iso(Date.UTC(2026, 10, 27, 8)),
  near: iso(Date.UTC(2026, 11, 4, 8)),
  far: iso(Date.UTC(2026, 11, 25, 8)),
  quarter: iso(Date.UTC(2027, 2, 26, 8)),
};
const MARKLESS_FUTURES = new Set(['BTC-24NOV26', 'BTC-27NOV26', 'ETH-24NOV26', 'ETH-27NOV26']);

interface Row {
  id: string;
  type: 'call' | 'put';
  strike: string;
  expiry: string;
  bid: string | null;
  ask: string | null;
  mark: string | null;
  iv: string | null;
  delta: string | null;
}
interface Instrument {
  id: string;
  expiry: string;
  strike: string;
  type: 'call' | 'put';
  tickSize: string;
  priceDecimals: number;
}

let t = NOW;
let ts: TestService;
let url: string;
let restoreMarks: () => void;
interface BoardBody {
  expiryForwards: Record<string, { forwardPrice: string }>;
  options: Row[];
}
const boards: Record<string, { body: BoardBody }> = {};

const tick = async () => {
  const outcome = await ts.service.ctx.sequencer.submit({ type: 'clock.tick' });
  if (!outcome.ok) assert.fail(`clock.tick rejected: ${outcome.code}`);
};
const board = async (query = '') => {
  const r = await call(url, `/markets/board${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};

async function trader(): Promise<Trader> {
  const tr = await signIn(url);
  await fund(url, tr, '1000000', 15_000);
  const body = { from: 'wallet', to: 'options', amount: '1000000' };
  const r = await call(url, '/wallet/transfer', { token: tr.token, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return tr;
}

/** The flat-vol Black-76 quote of one instrument, or null when the test leaves it unquoted. */
function quoteOf(i: Instrument, F: number, quantity: string) {
  const K = Number(i.strike);
  const T = (Date.parse(i.expiry) - t) / YEAR;
  if (i.expiry === E.few) {
    // Four instruments: the ATM call and put, the call one strike up, the put one strike down.
    const s = step(i);
    if (!(K === F || K === F + (i.type === 'call' ? s : -s))) return null;
  }
  if (i.expiry === E.index && (i.type === 'call') !== K >= F) return null;
  const tickSize = Number(i.tickSize);
  const g = black76({ F, K, T, sigma: VOL, type: i.type });
  const half = Math.max(tickSize, 0.5 * g.vega);
  const ask = Math.max(tickSize, Math.ceil((g.price + half) / tickSize - 1e-9) * tickSize);
  const bid = Math.floor((g.price - half) / tickSize + 1e-9) * tickSize;
  const fmt = (x: number) => x.toFixed(i.priceDecimals);
  const quotes = [{ side: 'sell', price: fmt(ask), quantity }];
  if (bid >= tickSize) quotes.unshift({ side: 'buy', price: fmt(bid), quantity });
  return quotes;
}

/** The strike spacing of the near expiries' ladders. */
function step(i: Instrument): number {
  return i.id.startsWith('BTC') ? 1000 : 50;
}

async function quoteAll(tr: Trader, underlying: string, quantity: string): Promise<number> {
  const list = (await call(url, `/options/instruments?underlying=${underlying}`)).body as Instrument[];
  const forwards = boards[underlying]!.body.expiryForwards;
  const jobs = list.flatMap((i) => {
    const quotes = quoteOf(i, Number(forwards[i.expiry]!.forwardPrice), quantity);
    return quotes === null ? [] : [{ marketId: i.id, quoteId: 'board', cancelAll: true, quotes }];
  });
  for (let k = 0; k < jobs.length; k += 24) {
    await Promise.all(jobs.slice(k, k + 24).map(async (body) => {
      const r = await call(url, '/quotes/bulk', { token: tr.token, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.rejected, [], JSON.stringify(r.body.rejected));
    }));
  }
  return jobs.length;
}

before(async () => {
  ts = await startService(
    {
      FEED: 'push',
      INDEX_MAX_AGE_MS: '3600000',
      TICK_MS: '60000',
      RATE_LIMIT_ANONYMOUS: '1000000',
      RATE_LIMIT_ACCOUNT: '1000000',
      RATE_LIMIT_ORDERS: '1000000',
    },
    undefined,
    { clock: { now: () => t } },
  );
  url = ts.url;
  for (const [underlying, price] of [['BTC', '100000'], ['ETH', '3000']]) {
    const r = await call(url, '/admin/index', { body: { underlying, price }, headers: admin });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  await tick(); // lists the futures and the option ladders around the index
  for (const u of ['BTC', 'ETH']) boards[u] = { body: await board(`?underlying=${u}`) };
  for (const u of ['BTC', 'ETH']) {
    for (const f of Object.values(boards[u]!.body.expiryForwards)) assert.ok(f.forwardPrice !== null);
  }

  // Make the 24NOV and 27NOV futures mark-less (see the header).
  const linear = ts.service.exchange.linear;
  const original = linear.markAt.bind(linear);
  linear.markAt = (market, now) => (MARKLESS_FUTURES.has(market.spec.id) ? null : original(market, now));
  restoreMarks = () => {
    linear.markAt = original;
  };

  const [btc, eth] = await Promise.all([trader(), trader()]);
  const quoted = await Promise.all([quoteAll(btc!, 'BTC', '0.1'), quoteAll(eth!, 'ETH', '1')]);
  assert.ok(quoted.every((n) => n > 150), `quoted ${quoted}`);
  await tick(); // the board fits the quoted books
});

after(async () => {
  restoreMarks?.();
  await ts?.close();
});

const rowsOf = (b: { options: Row[] }, expiry: string) => b.options.filter((r) => r.expiry === expiry);
const num = (s: string | null) => {
  assert.ok(s !== null);
  return Number(s);
};

describe('forward per expiry', () => {
  test('future when the dated future has a mark, parity from the books, else the index', async () => {
    for (const u of ['BTC', 'ETH']) {
      const b = await board(`?underlying=${u}`);
      const f = b.expiryForwards;
      const index = Number(b.underlyingPrice);
      assert.deepEqual(b.expiries, Object.values(E), u);
      for (const e of [E.few, E.near, E.far, E.quarter]) {
        assert.equal(f[e].forwardSource, 'future', `${u} ${e}`);
        assert.equal(f[e].futuresMarketId, `${u}-${e === E.few ? '23NOV26' : e === E.near ? '04DEC26'
          : e === E.far ? '25DEC26' : '26MAR27'}`);
      }
      assert.equal(f[E.parity].forwardSource, 'parity', u);
      assert.ok(Math.abs(Number(f[E.parity].forwardPrice) - index) <= index * 1e-5, `${u} parity forward`);
      assert.equal(f[E.index].forwardSource, 'index', u);
      assert.equal(f[E.index].forwardPrice, b.underlyingPrice);
      // The override is what every reader sees: the market list shows those futures without a mark.
      const markets = (await call(url, '/perps/markets')).body as { id: string; markPrice: string | null }[];
      assert.equal(markets.find((m) => m.id === `${u}-24NOV26`)!.markPrice, null);
      assert.notEqual(markets.find((m) => m.id === `${u}-04DEC26`)!.markPrice, null);
    }
  });
});

describe('marks on the fitted surface', () => {
  test('put-call parity on the marks: C - P = F - K to two ticks, on every fitted expiry', async () => {
    for (const [u, tickSize] of [['BTC', 0.1], ['ETH', 0.01]] as const) {
      const b = await board(`?underlying=${u}`);
      let pairs = 0;
      for (const e of [E.parity, E.index, E.near, E.far, E.quarter]) {
        const F = num(b.expiryForwards[e].forwardPrice);
        const rows = rowsOf(b, e);
        for (const c of rows.filter((r) => r.type === 'call')) {
          const p = rows.find((r) => r.type === 'put' && r.strike === c.strike)!;
          const gap = num(c.mark) - num(p.mark) - (F - Number(c.strike));
          assert.ok(Math.abs(gap) <= 2 * tickSize + 1e-9, `${u} ${e} K ${c.strike}: C-P-(F-K) = ${gap}`);
          pairs++;
        }
      }
      assert.equal(pairs, 5 * 17);
    }
  });

  test('call marks decrease and are convex in strike; iv at the flat 40 %; deltas in range', async () => {
    for (const [u, tickSize] of [['BTC', 0.1], ['ETH', 0.01]] as const) {
      const b = await board(`?underlying=${u}`);
      for (const e of [E.parity, E.index, E.near, E.far, E.quarter]) {
        const calls = rowsOf(b, e).filter((r) => r.type === 'call');
        const marks = calls.map((r) => num(r.mark));
        const strikes = calls.map((r) => Number(r.strike));
        for (let k = 1; k < marks.length; k++) {
          assert.ok(strikes[k]! > strikes[k - 1]!, 'rows sorted by strike');
          assert.ok(marks[k]! <= marks[k - 1]!, `${u} ${e} decreasing at ${strikes[k]}`);
        }
        for (let k = 1; k < marks.length - 1; k++) {
          const second = marks[k - 1]! - 2 * marks[k]! + marks[k + 1]!;
          assert.ok(second >= -tickSize - 1e-9, `${u} ${e} convex at ${strikes[k]}: ${second}`);
        }
        const F = num(b.expiryForwards[e].forwardPrice);
        let inRange = 0;
        for (const r of rowsOf(b, e)) {
          // Where the strike's out-of-the-money option is a usable quote (two-sided, spread at most
          // half the mid) the fit returns the flat vol; beyond, in wings worth a few ticks, the slice
          // only extrapolates (a positive vol is all that is asked there).
          const otmType = Number(r.strike) >= F ? 'call' : 'put';
          const otm = rowsOf(b, e).find((x) => x.strike === r.strike && x.type === otmType)!;
          const [bid, ask] = [otm.bid === null ? 0 : num(otm.bid), otm.ask === null ? 0 : num(otm.ask)];
          if (bid > 0 && ask - bid <= (ask + bid) / 4) {
            inRange++;
            assert.ok(Math.abs(num(r.iv) - 100 * VOL) < 0.25, `${u} ${r.id} iv ${r.iv}`);
          } else {
            assert.ok(num(r.iv) > 0, `${u} ${r.id} iv ${r.iv}`);
          }
          const delta = num(r.delta);
          const inBounds = r.type === 'call' ? delta >= 0 && delta <= 1 : delta >= -1 && delta <= 0;
          assert.ok(inBounds, `${r.id} delta ${r.delta}`);
        }
        assert.ok(inRange >= 10, `${u} ${e}: ${inRange} rows inside the quoted range`);
      }
    }
  });

  test('bid and ask are the books\' top of book', async () => {
    const b = await board();
    const sample = rowsOf(b, E.far).filter((_, k) => k % 5 === 0);
    for (const r of sample) {
      const book = (await call(url, `/orderbook/${r.id}?depth=1`)).body;
      assert.equal(r.bid, book.bids[0]?.[0] ?? null, r.id);
      assert.equal(r.ask, book.asks[0]?.[0] ?? null, r.id);
    }
  });

  test('an expiry with fewer than 5 quotes has a forward but no mark on any row', async () => {
    for (const u of ['BTC', 'ETH']) {
      const b = await board(`?underlying=${u}`);
      const rows = rowsOf(b, E.few);
      const twoSided = rows.filter((r) => r.bid !== null && r.ask !== null);
      assert.ok(twoSided.length > 0 && twoSided.length < 5, `${u}: ${twoSided.length} quoted`);
      assert.ok(rows.every((r) => r.mark === null && r.iv === null && r.delta === null), u);
      assert.notEqual(b.expiryForwards[E.few].forwardPrice, null);
      assert.equal(b.expiryForwards[E.few].calendarArbitrageFree, null);
    }
  });

  test('calendar check: later fitted slices carry no calendar arbitrage on a flat surface', async () => {
    const f = (await board()).expiryForwards as Record<string, { calendarArbitrageFree: boolean | null }>;
    const flags = Object.values(f).map((x) => x.calendarArbitrageFree);
    assert.ok(!flags.includes(false), JSON.stringify(flags));
    assert.ok(flags.filter((x) => x === true).length >= 4, JSON.stringify(flags));
  });
});

describe('underlying selection and validation', () => {
  test('the primary underlying by default; ?underlying=ETH serves the ETH chain', async () => {
    const btc = await board();
    assert.equal(btc.underlyingSymbol, 'BTC');
    assert.equal(btc.underlyingPrice, '100000');
    const eth = await board('?underlying=ETH');
    assert.equal(eth.underlyingSymbol, 'ETH');
    assert.equal(eth.underlyingPrice, '3000');
    assert.ok(eth.options.length > 0 && eth.options.every((r: Row) => r.id.startsWith('ETH-')));
    assert.ok(rowsOf(eth, E.far).every((r) => r.mark !== null));
  });

  test('unknown underlying is 404, a bad pattern or an unknown parameter is 400', async () => {
    for (const path of ['/markets/board', '/markets/dvol']) {
      const unknown = await call(url, `${path}?underlying=DOGE`);
      assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
      assert.equal(unknown.body.error, 'NOT_FOUND');
      for (const bad of ['btc', 'B', 'BTC-USDC', 'ABCDEFGHIJK']) {
        const r = await call(url, `${path}?underlying=${bad}`);
        assert.equal(r.status, 400, `${path} ${bad}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'VALIDATION_ERROR');
      }
      const extra = await call(url, `${path}?expiry=x`);
      assert.equal(extra.status, 400);
    }
  });
});

describe('DVOL', () => {
  test('the VIX method on the expiries around 30 days gives the flat vol x 100', async (tc) => {
    for (const u of ['BTC', 'ETH']) {
      const r = await call(url, `/markets/dvol?underlying=${u}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const d = r.body;
      assert.equal(d.underlying, u);
      assert.equal(d.tenorDays, 30);
      assert.ok(Math.abs(num(d.dvol) - 100 * VOL) <= 1.5, `${u} dvol ${d.dvol}`);
      tc.diagnostic(`${u} DVOL ${d.dvol} (raw ${d.raw}) on a flat ${100 * VOL} % surface`);
      assert.equal(d.computedAt, iso(t));
      assert.equal(d.sourceTimestamp, iso(NOW), 'the index time the computation used');
    }
    const primary = (await call(url, '/markets/dvol')).body;
    assert.equal(primary.underlying, 'BTC');
  });
});

describe('staleness', () => {
  test('marks and DVOL are withdrawn once the board is older than its limit, back after a tick', async () => {
    t += 6_000; // older than the 5 s freshness limit, no tick
    const stale = await board();
    assert.ok(stale.options.every((r: Row) => r.mark === null && r.iv === null), 'no stale mark is served');
    const forwards = Object.values(stale.expiryForwards) as { forwardPrice: string | null }[];
    assert.ok(forwards.every((f) => f.forwardPrice === null));
    assert.equal((await call(url, '/markets/dvol')).body.dvol, null);
    assert.ok(stale.options.some((r: Row) => r.bid !== null), 'the books are still served');
    await tick();
    const fresh = await board();
    assert.ok(rowsOf(fresh, E.near).every((r) => r.mark !== null));
    assert.notEqual((await call(url, '/markets/dvol')).body.dvol, null);
  });
});
