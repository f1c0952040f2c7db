/**
 * Audits a running service's option board over time, from outside, the way a volatility desk would
 * (docs/architecture.md "Option board, DVOL and the reference market maker"). Every `--every` ms, for
 * both underlyings, it pulls /markets/board, /markets/dvol, /perps/markets and the futures books, and
 * counts:
 *   - two-sided rows with the mark inside bid/ask;
 *   - marks that do not reprice from their row (Black-76 on forwardPrice, the slice's years and the
 *     served iv) within one tick;
 *   - tradable conversions and reversals against the futures books (K + C_bid − P_ask > future ask, or
 *     K + C_ask − P_bid < future bid);
 *   - calendar flags false, slices held by the step bound, tick-to-tick moves of each expiry's
 *     at-the-money vol (largest);
 *   - DVOL's raw value against the VIX sum of the served slices over a dense, wide ladder.
 *
 * Run: node --import tsx bench/pricing/board-audit.ts [--url http://127.0.0.1:8080] [--seconds 600] [--every 1000]
 */
import { parseArgs } from 'node:util';
import { black76 } from '../../src/pricing/black76.ts';
import { expiryVariance, interpolate30, pickDvolExpiries } from '../../src/pricing/dvol.ts';
import { sviImpliedVol, sviTotalVariance, type SviParams } from '../../src/pricing/svi.ts';

interface Row { id: string; type: 'call' | 'put'; strike: string; expiry: string; bid: string | null; ask: string | null; mark: string | null; iv: string | null }
interface Forward {
  forwardPrice: string | null;
  futuresMarketId: string;
  calendarArbitrageFree: boolean | null;
  sliceHeld: boolean | null;
  svi: Record<keyof SviParams | 'years', string> | null;
}
interface Board { computedAt: string | null; expiries: string[]; expiryForwards: Record<string, Forward>; options: Row[] }
type Book = { bids: [string, string][]; asks: [string, string][] };

const { values } = parseArgs({
  options: { url: { type: 'string', default: 'http://127.0.0.1:8080' }, seconds: { type: 'string', default: '600' }, every: { type: 'string', default: '1000' } },
});
const URL_BASE = values.url!;
const YEAR = 365 * 86_400_000;
const TICK: Record<string, number> = { BTC: 0.1, ETH: 0.01 };

async function get<T>(path: string): Promise<T> {
  const r = await fetch(URL_BASE + path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
  return (await r.json()) as T;
}

const sviOf = (f: Forward) => (f.svi === null ? null : {
  svi: { a: Number(f.svi.a), b: Number(f.svi.b), rho: Number(f.svi.rho), m: Number(f.svi.m), sigma: Number(f.svi.sigma) },
  years: Number(f.svi.years),
});

const counts = {
  pulls: 0, twoSided: 0, inside: 0, marks: 0, offByMoreThanTick: 0, pairs: 0, conversions: 0,
  calendarChecks: 0, calendarFalse: 0, slices: 0, held: 0, atmMoves: 0, worstAtmMove: 0, dvolChecks: 0, worstDvolGap: 0,
};
const outsideExamples: string[] = [];
const lastAtm = new Map<string, number>();

function untruncated(board: Board, now: number): number | null {
  const sliced = board.expiries.filter((e) => board.expiryForwards[e]!.svi !== null).map((e) => Date.parse(e));
  const pick = pickDvolExpiries(sliced, now);
  if (pick === null) return null;
  const variance = (ms: number) => {
    const s = sviOf(board.expiryForwards[new Date(ms).toISOString()]!)!;
    const F = 100_000;
    const options = [];
    for (let K = 2_000; K <= 2_000_000; K += 100) {
      const sigma = Math.sqrt(sviTotalVariance(s.svi, Math.log(K / F)) / s.years);
      for (const type of ['call', 'put'] as const) options.push({ strike: K, type, mid: black76({ F, K, T: s.years, sigma, type }).price });
    }
    const v = expiryVariance({ expiryMs: now + s.years * YEAR, forward: F, options }, now)!;
    return { sigma2: v.sigma2, T: v.T, expiryMs: ms };
  };
  return interpolate30(variance(pick.nearMs), variance(pick.farMs), now)?.dvol ?? null;
}

async function audit(u: string): Promise<void> {
  const board = await get<Board>(`/markets/board?underlying=${u}`);
  const dvol = await get<{ raw: string | null; computedAt: string | null }>(`/markets/dvol?underlying=${u}`);
  const futures = new Map<string, Book>();
  for (const f of Object.values(board.expiryForwards)) futures.set(f.futuresMarketId, await get<Book>(`/perps/orderbook/${f.futuresMarketId}`));
  counts.pulls++;
  const byStrike = new Map<string, { call?: Row; put?: Row }>();
  for (const r of board.options) {
    const key = `${r.expiry}|${r.strike}`;
    byStrike.set(key, { ...byStrike.get(key), [r.type]: r });
    if (r.mark === null) continue;
    const f = board.expiryForwards[r.expiry]!;
    const s = sviOf(f)!;
    counts.marks++;
    const price = black76({ F: Number(f.forwardPrice), K: Number(r.strike), T: s.years, sigma: Number(r.iv) / 100, type: r.type }).price;
    if (Math.abs(price - Number(r.mark)) > TICK[u]! + 1e-9) counts.offByMoreThanTick++;
    if (r.bid === null || r.ask === null) continue;
    counts.twoSided++;
    if (Number(r.bid) <= Number(r.mark) && Number(r.mark) <= Number(r.ask)) counts.inside++;
    else if (outsideExamples.length < 8) outsideExamples.push(`${r.id} ${r.bid}/${r.ask} mark ${r.mark}`);
  }
  for (const [key, { call: c, put: p }] of byStrike) {
    if (!c || !p || c.bid === null || c.ask === null || p.bid === null || p.ask === null) continue;
    const book = futures.get(board.expiryForwards[key.split('|')[0]!]!.futuresMarketId)!;
    if (book.bids.length === 0 || book.asks.length === 0) continue;
    const K = Number(c.strike);
    counts.pairs++;
    if (K + Number(c.bid) - Number(p.ask) > Number(book.asks[0]![0]) || K + Number(c.ask) - Number(p.bid) < Number(book.bids[0]![0])) counts.conversions++;
  }
  for (const e of board.expiries) {
    const f = board.expiryForwards[e]!;
    if (f.calendarArbitrageFree !== null) counts.calendarChecks++;
    if (f.calendarArbitrageFree === false) counts.calendarFalse++;
    const s = sviOf(f);
    if (s === null) continue;
    counts.slices++;
    if (f.sliceHeld) counts.held++;
    const atm = 100 * sviImpliedVol(s.svi, 0, s.years);
    const before = lastAtm.get(`${u}${e}`);
    if (before !== undefined) {
      counts.atmMoves++;
      counts.worstAtmMove = Math.max(counts.worstAtmMove, Math.abs(atm - before));
    }
    lastAtm.set(`${u}${e}`, atm);
  }
  if (dvol.raw !== null && dvol.computedAt === board.computedAt) {
    const reference = untruncated(board, Date.parse(board.computedAt!));
    if (reference !== null) {
      counts.dvolChecks++;
      counts.worstDvolGap = Math.max(counts.worstDvolGap, Math.abs(Number(dvol.raw) - reference));
    }
  }
}

const end = Date.now() + Number(values.seconds) * 1000;
while (Date.now() < end) {
  const started = Date.now();
  for (const u of ['BTC', 'ETH']) await audit(u);
  await new Promise((r) => setTimeout(r, Math.max(0, Number(values.every) - (Date.now() - started))));
}
console.log(JSON.stringify({
  ...counts,
  insideShare: counts.twoSided === 0 ? null : counts.inside / counts.twoSided,
  outsideExamples,
}, null, 2));
