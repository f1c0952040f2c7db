/**
 * The option board against a known surface: books quoted around Black-76 prices from a generating
 * SVI slice must give back that slice, marks that satisfy put-call parity on the expiry's forward
 * (to the tick), call marks decreasing and convex in strike, the forward from the future when
 * fresh, else from parity, else the index, no mark at all for an expiry with too few quotes or
 * without a fresh index, and a DVOL close to the generating vol. Pure: synthetic inputs, no engine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fromFloat, fx, toFloat, type Fixed } from '../money.ts';
import { black76 } from '../../pricing/black76.ts';
import { sviImpliedVol, sviTotalVariance, type SviParams } from '../../pricing/svi.ts';
import { OptionBoard, type BoardInputs, type BoardInstrument } from './board.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 22, 12);
const YEAR = 365 * DAY;

function instrument(expiry: number, strike: number, type: 'call' | 'put', quote: (K: number, type: 'call' | 'put') => [number, number] | null): BoardInstrument {
  const q = quote(strike, type);
  const price = (x: number) => fromFloat(x, 1, 'halfUp');
  return {
    id: `BTC-${expiry}-${strike}-${type === 'call' ? 'C' : 'P'}`,
    underlying: 'BTC',
    expiry,
    strike: fx(String(strike)),
    type,
    tick: fx('0.1'),
    priceDecimals: 1,
    bestBid: () => (q === null ? null : price(q[0])),
    bestAsk: () => (q === null ? null : price(q[1])),
  };
}

function world(opts: { svi: SviParams | ((T: number) => SviParams); F: number; expiries: number[]; future?: boolean; index?: number | null; strikes?: number[] }) {
  const strikes = opts.strikes ?? [80_000, 85_000, 90_000, 95_000, 100_000, 105_000, 110_000, 115_000, 120_000];
  const instruments: BoardInstrument[] = [];
  for (const expiry of opts.expiries) {
    const T = (expiry - NOW) / YEAR;
    const svi = typeof opts.svi === 'function' ? opts.svi(T) : opts.svi;
    const quote = (K: number, type: 'call' | 'put'): [number, number] => {
      const iv = sviImpliedVol(svi, Math.log(K / opts.F), T);
      const p = black76({ F: opts.F, K, T, sigma: iv, type }).price;
      const half = Math.max(0.5, p * 0.002);
      return [Math.max(0.1, p - half), p + half];
    };
    for (const K of strikes) for (const t of ['call', 'put'] as const) instruments.push(instrument(expiry, K, t, quote));
  }
  let index = opts.index === undefined ? opts.F : opts.index;
  const inputs: BoardInputs = {
    instruments: () => instruments,
    index: () => (index === null ? null : { price: fx(String(index)), sourceTs: NOW - 500 }),
    futureMark: (_u, expiry) => (opts.future ? { price: fromFloat(opts.F, 1, 'halfUp')!, marketId: `BTC-F-${expiry}` } : null),
    futureId: (_u, expiry) => `BTC-F-${expiry}`,
  };
  return { board: new OptionBoard(inputs), instruments, setIndex: (v: number | null) => { index = v; } };
}

const SVI: SviParams = { a: 0.004, b: 0.03, rho: -0.3, m: 0.02, sigma: 0.15 };

describe('option board', () => {
  test('recovers the generating smile and prices on it', () => {
    const { board } = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true });
    const b = board.recompute('BTC', NOW);
    const slice = b.expiries[0]!;
    assert.equal(slice.forwardSource, 'future');
    assert.ok(slice.svi !== null, 'a slice was fitted');
    for (const k of [-0.15, 0, 0.15]) {
      const T = 30 / 365;
      const want = sviImpliedVol(SVI, k, T);
      const got = sviImpliedVol(slice.svi!, k, T);
      assert.ok(Math.abs(got - want) < 0.01, `iv at k=${k}: ${got} vs ${want}`);
    }
  });

  test('put-call parity holds on the marks to a tick or two', () => {
    const { board } = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true });
    const slice = board.recompute('BTC', NOW).expiries[0]!;
    const F = toFloat(slice.forward!);
    const byStrike = new Map<Fixed, { call?: number; put?: number }>();
    for (const r of slice.rows) {
      const e = byStrike.get(r.strike) ?? {};
      e[r.type] = toFloat(r.mark!);
      byStrike.set(r.strike, e);
    }
    for (const [K, { call, put }] of byStrike) assert.ok(Math.abs(call! - put! - (F - toFloat(K))) <= 0.2 + 1e-9, `parity at ${K}`);
  });

  test('call marks decrease and are convex in strike', () => {
    const { board } = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true });
    const calls = board.recompute('BTC', NOW).expiries[0]!.rows.filter((r) => r.type === 'call').map((r) => toFloat(r.mark!));
    for (let i = 1; i < calls.length; i++) assert.ok(calls[i]! <= calls[i - 1]!, 'decreasing');
    for (let i = 1; i < calls.length - 1; i++) assert.ok(calls[i - 1]! - 2 * calls[i]! + calls[i + 1]! >= -0.2, 'convex (to a tick)');
  });

  test('forward from parity without a future, from the index without two-sided pairs', () => {
    const parity = world({ svi: SVI, F: 101_000, expiries: [NOW + 30 * DAY], index: 100_000 }).board.recompute('BTC', NOW);
    assert.equal(parity.expiries[0]!.forwardSource, 'parity');
    assert.ok(Math.abs(toFloat(parity.expiries[0]!.forward!) - 101_000) < 50);
  });

  test('no mark for an expiry with too few quotes, none without a fresh index', () => {
    const few = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true, strikes: [95_000, 100_000] });
    const slice = few.board.recompute('BTC', NOW).expiries[0]!;
    assert.equal(slice.svi, null);
    assert.ok(slice.rows.every((r) => r.mark === null));
    const stale = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], index: null });
    assert.ok(stale.board.recompute('BTC', NOW).expiries[0]!.rows.every((r) => r.mark === null));
  });

  test('a mark is never served once the board that computed it is old', () => {
    const { board, instruments } = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true });
    board.recompute('BTC', NOW);
    assert.ok(board.mark(instruments[0]!.id, NOW + 1000) !== null);
    assert.equal(board.mark(instruments[0]!.id, NOW + 60_000), null);
  });

  test('the last fitted mark is held for margin across recomputes that have none', () => {
    const { board, instruments, setIndex } = world({ svi: SVI, F: 100_000, expiries: [NOW + 30 * DAY], future: true });
    const id = instruments[0]!.id;
    assert.equal(board.heldMark(id), null, 'never fitted');
    board.recompute('BTC', NOW);
    const fitted = board.mark(id, NOW)!.mark;
    setIndex(null); // the index goes stale: no forward, no mark
    board.recompute('BTC', NOW + 1000);
    assert.equal(board.mark(id, NOW + 1000), null);
    assert.equal(board.heldMark(id), fitted);
  });

  test('DVOL on a flat 60 % surface around 30 days is 60 within strike discretisation', () => {
    // total variance a = σ²T with no smile (b = 0) is a flat σ at every strike and expiry
    const flat = (T: number): SviParams => ({ a: 0.6 * 0.6 * T, b: 0, rho: 0, m: 0, sigma: 0.1 });
    const strikes = Array.from({ length: 61 }, (_, i) => 40_000 + i * 2_000);
    const expiries = [NOW + 20 * DAY, NOW + 45 * DAY];
    const { board } = world({ svi: flat, F: 100_000, expiries, future: true, strikes });
    const b = board.recompute('BTC', NOW);
    assert.ok(b.dvol !== null, 'dvol computed');
    assert.ok(Math.abs(b.dvol!.dvol - 60) < 0.1, `dvol ${b.dvol!.dvol} vs 60`);
    assert.equal(b.dvol!.method, 'svi-variance');
  });

  test('DVOL on a flat surface of any level, on the default ladder of 8 strikes each side, within 0.1', () => {
    for (const vol of [0.3, 0.55, 0.9]) {
      const flat = (T: number): SviParams => ({ a: vol * vol * T, b: 0, rho: 0, m: 0, sigma: 0.1 });
      const strikes = Array.from({ length: 17 }, (_, i) => 84_000 + i * 2_000);
      const { board } = world({ svi: flat, F: 100_000, expiries: [NOW + 20 * DAY, NOW + 45 * DAY], future: true, strikes });
      const d = board.recompute('BTC', NOW).dvol!;
      assert.ok(Math.abs(d.raw - 100 * vol) < 0.1, `raw ${d.raw} vs ${100 * vol}`);
    }
  });
});

/**
 * A board whose quotes a test moves: every instrument is quoted around Black-76 on `quotes.F` with
 * `quotes.svi` (half-spread 0.2 % of the price, at least 0.5), and the future's mark is `future`.
 */
function liveWorld(expiries: number[], F: number, svi: (T: number) => SviParams) {
  const state = { future: F, quotes: { F, svi } as { F: number; svi: (T: number) => SviParams }, requoted: new Set<number>() };
  const strikes = [84_000, 88_000, ...Array.from({ length: 33 }, (_, i) => 92_000 + i * 500), 112_000, 116_000];
  const instruments: BoardInstrument[] = [];
  for (const expiry of expiries) {
    for (const K of strikes) {
      for (const type of ['call', 'put'] as const) {
        const quote = (): [number, number] => {
          const T = (expiry - NOW) / YEAR;
          const on = state.quotes;
          const iv = sviImpliedVol(on.svi(T), Math.log(K / on.F), T);
          const p = black76({ F: on.F, K, T, sigma: iv, type }).price;
          const half = Math.max(0.5, p * 0.002);
          return [Math.max(0.1, p - half), p + half];
        };
        const price = (x: number) => fromFloat(x, 1, 'halfUp');
        instruments.push({
          id: `BTC-${expiry}-${K}-${type}`, underlying: 'BTC', expiry, strike: fx(String(K)), type, tick: fx('0.1'), priceDecimals: 1,
          bestBid: () => price(quote()[0]), bestAsk: () => price(quote()[1]),
        });
      }
    }
  }
  const inputs: BoardInputs = {
    instruments: () => instruments,
    index: () => ({ price: fromFloat(state.future, 1, 'halfUp')!, sourceTs: NOW }),
    futureMark: (_u, expiry) => ({ price: fromFloat(state.future, 1, 'halfUp')!, marketId: `BTC-F-${expiry}` }),
    futureId: (_u, expiry) => `BTC-F-${expiry}`,
  };
  return { board: new OptionBoard(inputs), state };
}

const atmIv = (slice: { svi: SviParams | null; years: number }) => 100 * sviImpliedVol(slice.svi!, 0, slice.years);
const smile = (level: number) => (T: number): SviParams => ({ a: level * level * T * 0.8, b: 0.2 * level * level * T / 0.15, rho: -0.3, m: 0, sigma: 0.15 });

describe('option board: the surface moves with the forward', () => {
  const EXPIRIES = [NOW + 4.5 * 3_600_000, NOW + 7 * DAY, NOW + 30 * DAY];

  test('index jumps of ±2 % and ±5 % with the quotes unchanged: at-the-money vol moves under a vol point', () => {
    for (const jump of [0.02, -0.02, 0.05, -0.05]) {
      const { board, state } = liveWorld(EXPIRIES, 100_000, smile(0.55));
      const before = board.recompute('BTC', NOW).expiries;
      state.future = 100_000 * (1 + jump); // the future's mark follows the index; the maker has not re-quoted
      const after = board.recompute('BTC', NOW + 1000).expiries;
      for (let e = 0; e < EXPIRIES.length; e++) {
        const a = atmIv(before[e]!);
        const b = atmIv(after[e]!);
        assert.ok(Math.abs(b - a) < 1, `jump ${jump}, expiry ${e}: ATM ${a.toFixed(2)} -> ${b.toFixed(2)}`);
        assert.equal(after[e]!.forwardSource, 'future');
        assert.ok(Math.abs(toFloat(after[e]!.quotesForward!) - 100_000) < 5, `quotes' forward ${after[e]!.quotesForward}`);
        assert.equal(after[e]!.held, false);
      }
      // The maker re-quotes on the new forward, same volatilities: still no move.
      state.quotes = { F: 100_000 * (1 + jump), svi: smile(0.55) };
      const requoted = board.recompute('BTC', NOW + 2000).expiries;
      for (let e = 0; e < EXPIRIES.length; e++) {
        assert.ok(Math.abs(atmIv(requoted[e]!) - atmIv(before[e]!)) < 1, `re-quoted after ${jump}, expiry ${e}`);
      }
    }
  });

  test('marks follow the new forward at the smile of their moneyness (deep in-the-money moves with F)', () => {
    const { board, state } = liveWorld([NOW + 30 * DAY], 100_000, smile(0.55));
    const mark = (b: ReturnType<typeof board.recompute>, id: string) => toFloat(b.expiries[0]!.rows.find((r) => r.id === id)!.mark!);
    const id = `BTC-${NOW + 30 * DAY}-84000-call`;
    const before = mark(board.recompute('BTC', NOW), id);
    state.future = 102_000;
    const after = mark(board.recompute('BTC', NOW + 1000), id);
    assert.ok(after - before > 1_700 && after - before < 2_100, `deep ITM call moved ${after - before}`);
  });

  test('a new level is published only when fits in a row confirm it; until then the slice is held', () => {
    const { board, state } = liveWorld(EXPIRIES, 100_000, smile(0.55));
    const first = atmIv(board.recompute('BTC', NOW).expiries[2]!);
    state.quotes = { F: 100_000, svi: smile(0.65) }; // the quotes move ten vol points
    const seen = [1, 2, 3, 4].map((s) => board.recompute('BTC', NOW + s * 1000).expiries[2]!);
    assert.deepEqual(seen.map((x) => x.held), [true, true, false, false]);
    assert.ok(Math.abs(atmIv(seen[0]!) - first) < 0.01 && Math.abs(atmIv(seen[1]!) - first) < 0.01, 'held at the old level');
    assert.ok(Math.abs(atmIv(seen[2]!) - 65 * Math.sqrt(0.8 + 0.2)) < 1.5, `published ${atmIv(seen[2]!)}`);
  });

  test('a calendar shortfall on the quoted range is repaired by lifting the later slice', () => {
    // The 7-day expiry quoted at 60 %, the 8-day one at 50 %: the later slice's total variance is below.
    const level = (T: number) => (T < 7.5 / 365 ? 0.6 : 0.5);
    const { board } = liveWorld([NOW + 7 * DAY, NOW + 8 * DAY], 100_000, (T) => smile(level(T))(T));
    const [near, far] = board.recompute('BTC', NOW).expiries;
    assert.equal(far!.calendarFree, true);
    assert.equal(far!.calendarRepaired, true);
    for (let k = -0.05; k <= 0.05; k += 0.01) {
      assert.ok(sviTotalVariance(far!.svi!, k) >= sviTotalVariance(near!.svi!, k) - 1e-12, `k ${k}`);
    }
    assert.equal(near!.calendarRepaired, false);
  });
});
