/**
 * The option board of the default service as a volatility desk reads it (docs/architecture.md
 * "Option board, DVOL and the reference market maker"): the REAL service in-process with the
 * simulated feed and the reference market maker, observed only over HTTP.
 *
 * Once every dated future's mark has reached its book (the basis EMA starts from zero at a fresh
 * start and follows the book over about a minute), ten board pulls of BTC and ETH a second apart:
 *   - one response is one tick: every marked row reprices from the row's own iv, the expiry's
 *     forwardPrice and the slice's years to its mark within one tick (Black-76 here), and its iv is
 *     the served SVI slice's at ln(K/F) to the fourth decimal;
 *   - marks sit inside bid/ask on at least 98 % of two-sided rows;
 *   - no conversion or reversal is tradable against the futures books: at every strike with a
 *     two-sided call and put, K + C_bid − P_ask ≤ future ask and K + C_ask − P_bid ≥ future bid;
 *   - the futures carry a basis (mark above the index, by the configured carry within the ladder's
 *     width), and no published pair of slices is flagged with calendar arbitrage;
 *   - DVOL's raw value is within 0.5 vol point of the 30-day variance of the served slices summed
 *     over a dense, wide strike ladder by the VIX formula (an independent quadrature).
 *
 * Index jumps (push feed, the index published by the test): +2 %, −2 %, +5 %, −5 % in turn, each
 * held for a few seconds while the maker re-quotes on the new forward in the same volatilities: on
 * every tick (board pulls every 200 ms) each expiry's at-the-money vol moves by less than a vol point
 * from the tick before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { black76 } from '../../src/pricing/black76.ts';
import { expiryVariance, interpolate30, pickDvolExpiries } from '../../src/pricing/dvol.ts';
import { sviImpliedVol, sviTotalVariance, type SviParams } from '../../src/pricing/svi.ts';
import { MARKET_MAKER_CONFIG } from '../../src/config/market-maker.ts';
import { admin, call, startService, type TestService } from '../support/harness.ts';

interface Row {
  id: string;
  type: 'call' | 'put';
  strike: string;
  expiry: string;
  bid: string | null;
  ask: string | null;
  mark: string | null;
  iv: string | null;
}
interface Forward {
  forwardPrice: string | null;
  futuresMarketId: string;
  calendarArbitrageFree: boolean | null;
  svi: Record<keyof SviParams | 'years', string> | null;
}
interface Board {
  underlyingPrice: string | null;
  computedAt: string | null;
  expiries: string[];
  expiryForwards: Record<string, Forward>;
  options: Row[];
}
interface Market {
  id: string;
  marketType: string;
  underlying: string;
  markPrice: string | null;
  indexPrice: string | null;
  expiry?: string;
}
type Book = { bids: [string, string][]; asks: [string, string][] };

const YEAR = 365 * 86_400_000;
const TICK: Record<string, number> = { BTC: 0.1, ETH: 0.01 };

const get = async <T>(base: string, path: string): Promise<T> => {
  const r = await call(base, path);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body as T;
};

const sviOf = (f: Forward): { svi: SviParams; years: number } | null =>
  f.svi === null ? null : {
    svi: { a: Number(f.svi.a), b: Number(f.svi.b), rho: Number(f.svi.rho), m: Number(f.svi.m), sigma: Number(f.svi.sigma) },
    years: Number(f.svi.years),
  };

/** Every dated future's mark within its own book's spread: the basis EMA has reached the book. */
async function futuresConverged(base: string): Promise<true | string> {
  const markets = await get<Market[]>(base, '/perps/markets');
  for (const m of markets.filter((x) => x.marketType === 'future')) {
    const book = await get<Book>(base, `/perps/orderbook/${m.id}`);
    if (m.markPrice === null || book.bids.length === 0 || book.asks.length === 0) return `${m.id}: no mark or book`;
    const mark = Number(m.markPrice);
    if (mark < Number(book.bids[0]![0]) || mark > Number(book.asks[0]![0])) return `${m.id}: mark ${mark} outside its book`;
  }
  for (const u of ['BTC', 'ETH']) {
    const board = await get<Board>(base, `/markets/board?underlying=${u}`);
    const far = board.options.filter((r) => Date.parse(r.expiry) - Date.now() > 86_400_000);
    if (far.length === 0 || far.some((r) => r.mark === null)) return `${u}: marks missing`;
  }
  return true;
}

async function until(ms: number, probe: () => Promise<true | string>): Promise<number> {
  const start = Date.now();
  let last = '';
  while (Date.now() - start < ms) {
    const r = await probe();
    if (r === true) return Date.now() - start;
    last = r;
    await new Promise((res) => setTimeout(res, 1000));
  }
  throw new Error(`not within ${ms} ms: ${last}`);
}

describe('the option board of the default service', () => {
  let ts: TestService;
  let base: string;
  const pulls: { u: string; board: Board; futures: Map<string, Book>; markets: Market[] }[] = [];

  before(async () => {
    ts = await startService({ FEED: 'simulated', MARKET_MAKER: 'on', RATE_LIMIT_ANONYMOUS: '1000000' });
    base = ts.url;
    await until(240_000, () => futuresConverged(base));
    for (let i = 0; i < 10; i++) {
      for (const u of ['BTC', 'ETH']) {
        const [board, markets] = await Promise.all([
          get<Board>(base, `/markets/board?underlying=${u}`),
          get<Market[]>(base, '/perps/markets'),
        ]);
        const futures = new Map<string, Book>();
        for (const f of Object.values(board.expiryForwards)) {
          futures.set(f.futuresMarketId, await get<Book>(base, `/perps/orderbook/${f.futuresMarketId}`));
        }
        pulls.push({ u, board, futures, markets });
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
  });
  after(async () => {
    await ts.close();
  });

  test('every mark reprices from its row, forward and slice within one tick', () => {
    let checked = 0;
    for (const { u, board } of pulls) {
      for (const r of board.options) {
        if (r.mark === null) continue;
        const f = board.expiryForwards[r.expiry]!;
        const s = sviOf(f)!;
        const F = Number(f.forwardPrice);
        const K = Number(r.strike);
        const sigma = Number(r.iv) / 100;
        const price = black76({ F, K, T: s.years, sigma, type: r.type }).price;
        assert.ok(Math.abs(price - Number(r.mark)) <= TICK[u]! + 1e-9, `${r.id}: ${price} vs mark ${r.mark}`);
        const fromSlice = 100 * sviImpliedVol(s.svi, Math.log(K / F), s.years);
        assert.ok(Math.abs(fromSlice - Number(r.iv)) <= 0.00006, `${r.id}: iv ${r.iv} vs slice ${fromSlice}`);
        checked++;
      }
    }
    assert.ok(checked > 1000, `${checked} marks checked`);
  });

  test('marks inside bid/ask on at least 98 % of two-sided rows', (t) => {
    let twoSided = 0;
    let inside = 0;
    const outside: string[] = [];
    for (const { board } of pulls) {
      for (const r of board.options) {
        if (r.bid === null || r.ask === null || r.mark === null) continue;
        twoSided++;
        if (Number(r.bid) <= Number(r.mark) && Number(r.mark) <= Number(r.ask)) inside++;
        else if (outside.length < 5) outside.push(`${r.id} ${r.bid}/${r.ask} mark ${r.mark}`);
      }
    }
    t.diagnostic(`${inside}/${twoSided} two-sided rows with the mark inside (${((100 * inside) / twoSided).toFixed(2)} %)`);
    assert.ok(twoSided > 1000 && inside >= 0.98 * twoSided, `${inside}/${twoSided}: ${outside.join('; ')}`);
  });

  test('no conversion or reversal is tradable against the futures books', (t) => {
    let pairs = 0;
    for (const { board, futures } of pulls) {
      const byStrike = new Map<string, { call?: Row; put?: Row }>();
      for (const r of board.options) {
        const key = `${r.expiry}|${r.strike}`;
        byStrike.set(key, { ...byStrike.get(key), [r.type]: r });
      }
      for (const [key, { call: c, put: p }] of byStrike) {
        if (!c || !p || c.bid === null || c.ask === null || p.bid === null || p.ask === null) continue;
        const expiry = key.split('|')[0]!;
        const book = futures.get(board.expiryForwards[expiry]!.futuresMarketId)!;
        if (book.bids.length === 0 || book.asks.length === 0) continue;
        const K = Number(c.strike);
        const syntheticBid = K + Number(c.bid) - Number(p.ask);
        const syntheticAsk = K + Number(c.ask) - Number(p.bid);
        const futureBid = Number(book.bids[0]![0]);
        const futureAsk = Number(book.asks[0]![0]);
        assert.ok(syntheticBid <= futureAsk + 1e-9, `${c.id}: conversion: synthetic bid ${syntheticBid} > future ask ${futureAsk}`);
        assert.ok(syntheticAsk >= futureBid - 1e-9, `${c.id}: reversal: synthetic ask ${syntheticAsk} < future bid ${futureBid}`);
        pairs++;
      }
    }
    t.diagnostic(`${pairs} strike pairs checked against their futures books`);
    assert.ok(pairs > 500, `${pairs} pairs`);
  });

  test('dated futures carry their basis; no calendar arbitrage is flagged', () => {
    for (const { u, board, markets } of pulls) {
      for (const f of Object.values(board.expiryForwards)) assert.notEqual(f.calendarArbitrageFree, false, `${u} calendar`);
      for (const m of markets.filter((x) => x.marketType === 'future' && x.underlying === u)) {
        const T = (Date.parse(m.expiry!) - Date.parse(board.computedAt!)) / YEAR;
        if (T < 7 / 365) continue;
        const basisBps = (Number(m.markPrice) / Number(m.indexPrice) - 1) * 10_000;
        const carryBps = (Math.exp(MARKET_MAKER_CONFIG.carry[u]! * T) - 1) * 10_000;
        // Within the anchor (5 bp) and the ladder's first level (2-3 bp) of the carried forward.
        assert.ok(Math.abs(basisBps - carryBps) < 12, `${m.id}: basis ${basisBps.toFixed(1)} bp, carry ${carryBps.toFixed(1)} bp`);
      }
    }
  });

  test('DVOL is within 0.5 vol point of the served slices\' untruncated 30-day variance', async (t) => {
    for (const u of ['BTC', 'ETH']) {
      // The board and DVOL of the same tick (a tick may fall between the two requests: ask again).
      let board: Board;
      let dvol: { raw: string; method: string; computedAt: string };
      do {
        board = await get<Board>(base, `/markets/board?underlying=${u}`);
        dvol = await get(base, `/markets/dvol?underlying=${u}`);
      } while (dvol.computedAt !== board.computedAt);
      assert.equal(dvol.method, 'svi-variance');
      const now = Date.parse(board.computedAt!);
      const sliced = board.expiries.filter((e) => board.expiryForwards[e]!.svi !== null).map((e) => Date.parse(e));
      const pick = pickDvolExpiries(sliced, now)!;
      const variance = (ms: number) => {
        const s = sviOf(board.expiryForwards[new Date(ms).toISOString()]!)!;
        const F = 100_000;
        const options = [];
        for (let K = 2_000; K <= 2_000_000; K += 100) {
          const sigma = Math.sqrt(sviTotalVariance(s.svi, Math.log(K / F)) / s.years);
          options.push({ strike: K, type: 'put' as const, mid: black76({ F, K, T: s.years, sigma, type: 'put' }).price });
          options.push({ strike: K, type: 'call' as const, mid: black76({ F, K, T: s.years, sigma, type: 'call' }).price });
        }
        // The ladder's own clock: T from computedAt, as the slice's years.
        const v = expiryVariance({ expiryMs: now + s.years * YEAR, forward: F, options }, now)!;
        return { sigma2: v.sigma2, T: v.T, expiryMs: ms };
      };
      const reference = interpolate30(variance(pick.nearMs), variance(pick.farMs), now)!.dvol;
      t.diagnostic(`${u}: DVOL raw ${dvol.raw}, untruncated ${reference.toFixed(4)}`);
      assert.ok(Math.abs(Number(dvol.raw) - reference) < 0.5, `${u}: raw ${dvol.raw} vs ${reference}`);
    }
  });
});

describe('index jumps with the maker re-quoting (push feed)', () => {
  let ts: TestService;
  let base: string;
  const index = { BTC: 100_000, ETH: 3_000 } as Record<string, number>;
  let publisher: NodeJS.Timeout | null = null;
  let publishing: Promise<void> = Promise.resolve();
  const publish = async () => {
    for (const [underlying, price] of Object.entries(index)) {
      await call(base, '/admin/index', { body: { underlying, price: price.toFixed(2) }, headers: admin });
    }
  };

  before(async () => {
    ts = await startService({ FEED: 'push', MARKET_MAKER: 'on', TICK_MS: '250', RATE_LIMIT_ANONYMOUS: '1000000' });
    base = ts.url;
    await publish();
    publisher = setInterval(() => {
      publishing = publishing.then(publish);
    }, 200);
  });
  after(async () => {
    if (publisher !== null) clearInterval(publisher);
    await publishing;
    await ts.close();
  });

  /** At-the-money vol (percent) of every expiry with a slice over 4 hours away, by expiry. */
  const atm = (board: Board): Map<string, number> => {
    const out = new Map<string, number>();
    for (const e of board.expiries) {
      const s = sviOf(board.expiryForwards[e]!);
      if (s !== null && s.years > 4 / 8760) out.set(e, 100 * sviImpliedVol(s.svi, 0, s.years));
    }
    return out;
  };

  test('each expiry\'s at-the-money vol moves under a vol point from tick to tick through ±2 % and ±5 % jumps', async (t) => {
    await until(30_000, async () => {
      const board = await get<Board>(base, '/markets/board?underlying=BTC');
      return atm(board).size >= 4 ? true : `${atm(board).size} expiries with a slice`;
    });
    let worst = 0;
    let ticks = 0;
    for (const jump of [0.02, -0.02, 0.05, -0.05]) {
      let last = atm(await get<Board>(base, '/markets/board?underlying=BTC'));
      let lastAt = '';
      index.BTC = index.BTC! * (1 + jump);
      const end = Date.now() + 6_000;
      while (Date.now() < end) {
        const board = await get<Board>(base, '/markets/board?underlying=BTC');
        if (board.computedAt !== lastAt) {
          lastAt = board.computedAt!;
          const now = atm(board);
          for (const [e, v] of now) {
            const before = last.get(e);
            if (before === undefined) continue;
            worst = Math.max(worst, Math.abs(v - before));
            assert.ok(Math.abs(v - before) < 1, `jump ${jump}, ${e}: ATM ${before.toFixed(3)} -> ${v.toFixed(3)}`);
          }
          last = now;
          ticks++;
        }
        await new Promise((res) => setTimeout(res, 200));
      }
    }
    t.diagnostic(`${ticks} ticks through four jumps: largest tick-to-tick ATM move ${worst.toFixed(3)} vol points`);
    assert.ok(ticks > 40, `${ticks} ticks observed`);
  });
});
