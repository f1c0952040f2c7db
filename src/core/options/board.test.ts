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
import { sviImpliedVol, type SviParams } from '../../pricing/svi.ts';
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
    assert.ok(Math.abs(b.dvol!.dvol - 60) < 1.5, `dvol ${b.dvol!.dvol} vs 60`);
  });
});
