/**
 * The option board: per underlying and expiry, the forward, a raw-SVI smile fitted to the option
 * books, and from it every instrument's reference mark, implied vol and Greeks (Black-76 on the
 * expiry's forward), plus DVOL. Recomputed on every clock tick inside the core, so the marks the
 * CLOB engine margins short options with are a deterministic function of the journal (floats are
 * confined to the pricing functions and rounded to the option tick here, at the boundary).
 * docs/architecture.md "Option board, DVOL and the reference market maker" gives the reasons.
 *
 * Two forwards per expiry:
 *   - the board's forward, which marks are priced on: the expiry's dated-future mark when it is
 *     fresh (source `future`), else the put-call parity of the option books (`parity`), else the
 *     index (`index`); without a fresh index there is no forward and no mark;
 *   - the quotes' forward, which the book quotes are turned into volatilities against: the median
 *     of the strikes' parity forwards (pricing/forward.ts `medianForward`), else the board's. A
 *     quote is a price made on some forward; measured against another (the future's mark a tick
 *     after an index jump, before the quotes moved) its volatility is wrong by delta/vega per unit of
 *     the difference, tens of vol points at short expiries. A strike whose own parity forward is
 *     further from the quotes' forward than its spreads allow is left out of the fit.
 * The slice lives in log-moneyness, so the marks follow the board's forward at the smile's
 * volatility for their moneyness (sticky moneyness): a forward move alone moves no vol.
 *
 * Quotes: OTM two-sided quotes (puts below the quotes' forward, calls above), spread at most half
 * the mid, weighted by vega over spread. An expiry with fewer than 5 usable quotes has no slice and
 * no marks — never a stale or invented one; a mark is only served while the board that computed it
 * is younger than `maxAgeMs`.
 *
 * Checks before a slice is published:
 *   - butterfly: Durrleman g ≥ 0 (the fit repairs toward a flat slice);
 *   - calendar: total variance not below the previous published expiry's on the log-moneyness range
 *     both expiries' quotes cover; a shortfall is repaired by lifting the slice by it (SVI `a`), and a
 *     slice that then fails the butterfly check is not published (no marks on that expiry);
 *   - step: the at-the-money vol may move at most `maxAtmStepVol` from the published slice in one
 *     recompute unless `confirmRecomputes` fits in a row agree on the new level; until then the
 *     published slice is kept (`held`), its total variance rescaled to the time left.
 *
 * DVOL: the VIX method's 30-day interpolation on the two expiries around 30 days, each expiry's
 * variance the fitted slice integrated over all strikes (pricing/dvol.ts `sviVariance`), smoothed by
 * the interquartile mean of one raw value a second over the last 120 seconds.
 */
import type { Fixed } from '../money.ts';
import { fromFloat, toFloat } from '../money.ts';
import { black76, impliedVol } from '../../pricing/black76.ts';
import { interpolate30, iqmSmoother, pickDvolExpiries, sviVariance, type IqmSmoother } from '../../pricing/dvol.ts';
import { medianForward, pairForwards, syntheticForward, type PairForward, type StrikeQuotes } from '../../pricing/forward.ts';
import {
  butterflyArbitrageFree, fitSvi, sviCheckGrid, sviImpliedVol, sviTotalVariance, type SviParams, type SviPoint,
} from '../../pricing/svi.ts';

export interface BoardInstrument {
  readonly id: string;
  readonly underlying: string;
  readonly expiry: number;
  readonly strike: Fixed;
  readonly type: 'call' | 'put';
  readonly tick: Fixed;
  readonly priceDecimals: number;
  bestBid(): Fixed | null;
  bestAsk(): Fixed | null;
}

export interface BoardInputs {
  /** Listed, tradable option instruments of the underlying. */
  instruments(underlying: string): Iterable<BoardInstrument>;
  index(underlying: string, now: number): { price: Fixed; sourceTs: number } | null;
  /** The fresh mark of the dated future expiring at `expiry`, with its market id. */
  futureMark(underlying: string, expiry: number, now: number): { price: Fixed; marketId: string } | null;
  /** The id of the dated future of that expiry, listed or not. */
  futureId(underlying: string, expiry: number): string;
}

export type ForwardSource = 'future' | 'parity' | 'index';

export interface OptionRow {
  readonly id: string;
  readonly type: 'call' | 'put';
  readonly strike: Fixed;
  readonly expiry: number;
  readonly bid: Fixed | null;
  readonly ask: Fixed | null;
  readonly mark: Fixed | null;
  /** Mark implied vol as a fraction (0.55 = 55 %). */
  readonly iv: number | null;
  readonly delta: number | null;
  readonly gamma: number | null;
  readonly vega: number | null;
  readonly theta: number | null;
}

export interface ExpirySlice {
  readonly expiry: number;
  readonly forward: Fixed | null;
  readonly forwardSource: ForwardSource | null;
  readonly futuresMarketId: string;
  /** The forward the book quotes were measured against (median strike parity, else `forward`). */
  readonly quotesForward: Fixed | null;
  /** The published slice (log-moneyness k = ln K/F, total variance at `years`). */
  readonly svi: SviParams | null;
  /** Years to expiry at `computedAt` (ACT/365 in milliseconds), the T of `svi`. */
  readonly years: number;
  readonly fitRmse: number | null;
  readonly quotesUsed: number;
  readonly butterflyFree: boolean | null;
  /** Against the previous expiry's published slice, after any repair; null for the first slice. */
  readonly calendarFree: boolean | null;
  /** True when the slice was lifted to remove a calendar shortfall. */
  readonly calendarRepaired: boolean;
  /** True when the fit moved the at-the-money vol more than the step bound and the previous slice was kept. */
  readonly held: boolean;
  readonly rows: OptionRow[];
}

/** How DVOL's expiry variances were obtained (docs/architecture.md "Option board, DVOL"). */
export const DVOL_METHOD = 'svi-variance';

export interface DvolValue {
  readonly dvol: number;
  readonly raw: number;
  readonly method: typeof DVOL_METHOD;
  readonly computedAt: number;
  readonly sourceTs: number;
}

export interface UnderlyingBoard {
  readonly underlying: string;
  readonly computedAt: number;
  readonly underlyingPrice: Fixed | null;
  readonly sourceTs: number | null;
  readonly expiries: ExpirySlice[];
  readonly dvol: DvolValue | null;
}

export interface BoardSettings {
  readonly maxAgeMs: number;
  readonly minQuotes: number;
  readonly maxSpreadOfMid: number;
  /** Days in the year used for T (ACT/365). */
  readonly yearMs: number;
  /** Largest move of the at-the-money vol (a fraction: 0.01 = one vol point) one recompute may make. */
  readonly maxAtmStepVol: number;
  /** Fits in a row that must agree (within the step) on a level further than the step to publish it. */
  readonly confirmRecomputes: number;
}

export const DEFAULT_BOARD_SETTINGS: BoardSettings = {
  maxAgeMs: 5_000,
  minQuotes: 5,
  maxSpreadOfMid: 0.5,
  yearMs: 365 * 86_400_000,
  maxAtmStepVol: 0.01,
  confirmRecomputes: 3,
};

/** A published slice as the next recompute sees it: its parameters, their T, the quotes' k range. */
interface PublishedSlice {
  readonly svi: SviParams;
  readonly years: number;
  readonly kMin: number;
  readonly kMax: number;
}

/** A fitted at-the-money level further than the step from the published one, seen `count` times in a row. */
interface PendingLevel {
  readonly atmVol: number;
  readonly count: number;
}

export class OptionBoard {
  private readonly boards = new Map<string, UnderlyingBoard>();
  private readonly marks = new Map<string, { row: OptionRow; at: number }>();
  /** The last non-null mark of each instrument, kept across recomputes that have none (heldMark). */
  private readonly held = new Map<string, Fixed>();
  private readonly smoothers = new Map<string, IqmSmoother>();
  private readonly warm = new Map<string, SviParams>();
  /** The slice each expiry published last (`underlying:expiry`). */
  private readonly published = new Map<string, PublishedSlice>();
  private readonly pending = new Map<string, PendingLevel>();

  constructor(
    private readonly inputs: BoardInputs,
    private readonly settings: BoardSettings = DEFAULT_BOARD_SETTINGS,
  ) {}

  /** Recomputes the board of `underlying` at `now`. */
  recompute(underlying: string, now: number): UnderlyingBoard {
    const index = this.inputs.index(underlying, now);
    const byExpiry = new Map<number, BoardInstrument[]>();
    for (const i of this.inputs.instruments(underlying)) {
      if (i.expiry <= now) continue;
      let list = byExpiry.get(i.expiry);
      if (list === undefined) byExpiry.set(i.expiry, (list = []));
      list.push(i);
    }
    const expiries: ExpirySlice[] = [];
    let previous: PublishedSlice | null = null;
    for (const expiry of [...byExpiry.keys()].sort((a, b) => a - b)) {
      const slice = this.slice(underlying, expiry, byExpiry.get(expiry)!, index, now, previous);
      expiries.push(slice);
      const key = `${underlying}:${expiry}`;
      if (slice.svi === null) {
        this.published.delete(key);
        this.pending.delete(key);
      } else {
        previous = this.published.get(key)!;
      }
    }
    for (const key of this.published.keys()) {
      if (key.startsWith(`${underlying}:`) && !byExpiry.has(Number(key.slice(underlying.length + 1)))) {
        this.published.delete(key);
        this.pending.delete(key);
        this.warm.delete(key);
      }
    }
    for (const slice of expiries) {
      for (const row of slice.rows) {
        this.marks.set(row.id, { row, at: now });
        if (row.mark !== null) this.held.set(row.id, row.mark);
      }
    }
    const dvol = index === null ? null : this.dvol(underlying, expiries, now, index.sourceTs);
    const board: UnderlyingBoard = {
      underlying,
      computedAt: now,
      underlyingPrice: index?.price ?? null,
      sourceTs: index?.sourceTs ?? null,
      expiries,
      dvol,
    };
    this.boards.set(underlying, board);
    return board;
  }

  board(underlying: string): UnderlyingBoard | undefined {
    return this.boards.get(underlying);
  }

  /** The instrument's mark when the board that computed it is fresh at `now`; else null. */
  mark(instrumentId: string, now: number): OptionRow | null {
    const entry = this.marks.get(instrumentId);
    if (entry === undefined || now - entry.at > this.settings.maxAgeMs || entry.row.mark === null) return null;
    return entry.row;
  }

  /**
   * The last mark the board fitted for the instrument, however old, or null if it never had one.
   * For margin only (the CLOB engine's risk price while no fresh mark is served): a value the
   * fitted surface gave, which no single order or trade can move. Never served as a mark.
   */
  heldMark(instrumentId: string): Fixed | null {
    return this.held.get(instrumentId) ?? null;
  }

  dvolOf(underlying: string, now: number): DvolValue | null {
    const d = this.boards.get(underlying)?.dvol ?? null;
    return d !== null && now - d.computedAt <= this.settings.maxAgeMs ? d : null;
  }

  private years(expiry: number, now: number): number {
    return (expiry - now) / this.settings.yearMs;
  }

  private slice(
    underlying: string,
    expiry: number,
    instruments: BoardInstrument[],
    index: { price: Fixed; sourceTs: number } | null,
    now: number,
    previous: PublishedSlice | null,
  ): ExpirySlice {
    const T = this.years(expiry, now);
    const futuresMarketId = this.inputs.futureId(underlying, expiry);
    const quotes = strikeQuotes(instruments);
    const pairs = pairForwards(quotes);
    const fwd = index === null ? null : this.forward(underlying, expiry, quotes, index.price, now);
    if (fwd === null) return emptySlice(expiry, futuresMarketId, T, instruments);
    const F = toFloat(fwd.price);
    const Fq = medianForward(pairs) ?? F;
    const points = this.quotePoints(instruments, Fq, T, pairs);
    const key = `${underlying}:${expiry}`;
    const fit = points.length >= this.settings.minQuotes ? fitSvi(points, { warmStart: this.warm.get(key) }) : null;
    if (fit !== null) this.warm.set(key, fit.params);
    const checked = fit === null ? null : calendarChecked(fit.params, points, previous);
    const stepped = checked === null || checked.svi === null ? null : this.stepBounded(key, checked.svi, T, points);
    const svi = stepped?.svi ?? null;
    const rows = instruments
      .slice()
      .sort((a, b) => (a.strike < b.strike ? -1 : a.strike > b.strike ? 1 : a.type < b.type ? -1 : 1))
      .map((i) => this.row(i, F, T, svi));
    return {
      expiry,
      forward: fwd.price,
      forwardSource: fwd.source,
      futuresMarketId,
      quotesForward: fromFloat(Fq, 8, 'halfUp'),
      svi,
      years: T,
      fitRmse: fit?.rmse ?? null,
      quotesUsed: points.length,
      butterflyFree: fit === null ? null : fit.arbitrageFree,
      calendarFree: checked?.calendarFree ?? null,
      calendarRepaired: checked?.repaired ?? false,
      held: stepped?.held ?? false,
      rows,
    };
  }

  /**
   * The slice to publish under the step bound: the fit when its at-the-money vol is within
   * `maxAtmStepVol` of the published slice's (or there is none), or when `confirmRecomputes` fits in
   * a row agree on its level; else the published slice, its total variance rescaled to `T`.
   */
  private stepBounded(key: string, fitted: SviParams, T: number, points: readonly SviPoint[]): { svi: SviParams; held: boolean } {
    const last = this.published.get(key);
    const atm = Math.sqrt(Math.max(sviTotalVariance(fitted, 0), 0) / T);
    const { maxAtmStepVol, confirmRecomputes } = this.settings;
    const publish = (svi: SviParams, held: boolean) => {
      const range = quotedRange(points);
      this.published.set(key, { svi, years: T, kMin: range.kMin, kMax: range.kMax });
      return { svi, held };
    };
    if (last === undefined || Math.abs(atm - atmVol(last.svi, last.years)) <= maxAtmStepVol) {
      this.pending.delete(key);
      return publish(fitted, false);
    }
    const seen = this.pending.get(key);
    const count = seen !== undefined && Math.abs(seen.atmVol - atm) <= maxAtmStepVol ? seen.count + 1 : 1;
    if (count >= confirmRecomputes) {
      this.pending.delete(key);
      return publish(fitted, false);
    }
    this.pending.set(key, { atmVol: atm, count });
    return publish(rescaled(last.svi, T / last.years), true);
  }

  private forward(underlying: string, expiry: number, quotes: readonly StrikeQuotes[], index: Fixed, now: number): { price: Fixed; source: ForwardSource } | null {
    const future = this.inputs.futureMark(underlying, expiry, now);
    if (future !== null) return { price: future.price, source: 'future' };
    const synthetic = syntheticForward(quotes);
    if (synthetic !== null && synthetic.forward > 0) {
      const price = fromFloat(synthetic.forward, 8, 'halfUp');
      if (price !== null && price > 0n) return { price, source: 'parity' };
    }
    return { price: index, source: 'index' };
  }

  /**
   * OTM two-sided quotes as SVI points (k = ln K/F, w = σ²T) against the quotes' forward F, weighted
   * by vega over spread; a strike whose parity forward strays from F by more than its spreads allow
   * was quoted on another forward and is left out.
   */
  private quotePoints(instruments: BoardInstrument[], F: number, T: number, pairs: readonly PairForward[]): SviPoint[] {
    const stray = new Set<number>();
    for (const p of pairs) if (Math.abs(p.forward - F) > p.tolerance) stray.add(p.strike);
    const points: SviPoint[] = [];
    for (const i of instruments) {
      const K = toFloat(i.strike);
      if ((i.type === 'call') !== K >= F || stray.has(K)) continue;
      const bid = i.bestBid();
      const ask = i.bestAsk();
      if (bid === null || ask === null || bid <= 0n) continue;
      const b = toFloat(bid);
      const a = toFloat(ask);
      const mid = (a + b) / 2;
      if (a - b > this.settings.maxSpreadOfMid * mid) continue;
      const iv = impliedVol({ price: mid, F, K, T, type: i.type });
      if (iv === null) continue;
      const vega = black76({ F, K, T, sigma: iv, type: i.type }).vega;
      points.push({ k: Math.log(K / F), w: iv * iv * T, weight: Math.max(vega, 1e-9) / Math.max(a - b, toFloat(i.tick)) });
    }
    return points;
  }

  private row(i: BoardInstrument, F: number, T: number, svi: SviParams | null): OptionRow {
    if (svi === null) return unmarkedRow(i);
    const K = toFloat(i.strike);
    const iv = sviImpliedVol(svi, Math.log(K / F), T);
    const g = black76({ F, K, T, sigma: iv, type: i.type });
    const mark = fromFloat(g.price, i.priceDecimals, 'halfUp');
    return {
      id: i.id, type: i.type, strike: i.strike, expiry: i.expiry, bid: i.bestBid(), ask: i.bestAsk(),
      mark: mark !== null && mark >= 0n ? mark : null, iv, delta: g.delta, gamma: g.gamma, vega: g.vega, theta: g.theta,
    };
  }

  /** DVOL from the published slices of the two expiries around 30 days (their variance over all strikes). */
  private dvol(underlying: string, expiries: ExpirySlice[], now: number, sourceTs: number): DvolValue | null {
    const usable = expiries.filter((e) => e.forward !== null && e.svi !== null);
    const pick = pickDvolExpiries(usable.map((e) => e.expiry), now);
    if (pick === null) return null;
    const variance = (ms: number) => {
      const slice = usable.find((e) => e.expiry === ms)!;
      const sigma2 = sviVariance(slice.svi!, slice.years);
      return sigma2 === null ? null : { sigma2, T: slice.years, expiryMs: ms };
    };
    const near = variance(pick.nearMs);
    const far = variance(pick.farMs);
    const result = near === null || far === null ? null : interpolate30(near, far, now);
    if (result === null) return null;
    let smoother = this.smoothers.get(underlying);
    if (smoother === undefined) this.smoothers.set(underlying, (smoother = iqmSmoother(120, 1000)));
    smoother.push(result.dvol, now);
    return { dvol: smoother.value(now) ?? result.dvol, raw: result.dvol, method: DVOL_METHOD, computedAt: now, sourceTs };
  }
}

/** The instruments' top of book per strike as plain numbers (zero for a missing side). */
function strikeQuotes(instruments: readonly BoardInstrument[]): StrikeQuotes[] {
  const byStrike = new Map<Fixed, StrikeQuotes>();
  for (const i of instruments) {
    let q = byStrike.get(i.strike);
    if (q === undefined) byStrike.set(i.strike, (q = { strike: toFloat(i.strike), callBid: 0, callAsk: 0, putBid: 0, putAsk: 0 }));
    const bid = i.bestBid();
    const ask = i.bestAsk();
    if (i.type === 'call') {
      q.callBid = bid === null ? 0 : toFloat(bid);
      q.callAsk = ask === null ? 0 : toFloat(ask);
    } else {
      q.putBid = bid === null ? 0 : toFloat(bid);
      q.putAsk = ask === null ? 0 : toFloat(ask);
    }
  }
  return [...byStrike.values()];
}

function atmVol(svi: SviParams, T: number): number {
  return Math.sqrt(Math.max(sviTotalVariance(svi, 0), 0) / T);
}

/** The same smile in volatility with total variance scaled by `factor` (raw SVI: a and b scale). */
function rescaled(svi: SviParams, factor: number): SviParams {
  return { ...svi, a: svi.a * factor, b: svi.b * factor };
}

function quotedRange(points: readonly SviPoint[]): { kMin: number; kMax: number } {
  let kMin = Infinity;
  let kMax = -Infinity;
  for (const p of points) {
    kMin = Math.min(kMin, p.k);
    kMax = Math.max(kMax, p.k);
  }
  return { kMin, kMax };
}

const CALENDAR_GRID = 41;

/**
 * The fitted slice checked against the previous expiry's published one on the log-moneyness range
 * both expiries' quotes cover (beyond it neither smile is evidence): where its total variance falls
 * short, the slice is lifted by the largest shortfall (raw SVI `a`), which keeps its shape; a lifted
 * slice that fails the butterfly check is refused (svi null).
 */
function calendarChecked(
  fitted: SviParams,
  points: readonly SviPoint[],
  previous: PublishedSlice | null,
): { svi: SviParams | null; calendarFree: boolean | null; repaired: boolean } {
  if (previous === null) return { svi: fitted, calendarFree: null, repaired: false };
  const own = quotedRange(points);
  const lo = Math.max(own.kMin, previous.kMin);
  const hi = Math.min(own.kMax, previous.kMax);
  if (!(lo <= hi)) return { svi: fitted, calendarFree: true, repaired: false };
  let shortfall = 0;
  for (let i = 0; i < CALENDAR_GRID; i++) {
    const k = lo + ((hi - lo) * i) / (CALENDAR_GRID - 1);
    shortfall = Math.max(shortfall, sviTotalVariance(previous.svi, k) - sviTotalVariance(fitted, k));
  }
  if (shortfall <= 1e-12 * sviTotalVariance(fitted, 0)) return { svi: fitted, calendarFree: true, repaired: false };
  const lifted = { ...fitted, a: fitted.a + shortfall * (1 + 1e-9) };
  if (!butterflyArbitrageFree(lifted, sviCheckGrid(points))) return { svi: null, calendarFree: false, repaired: false };
  return { svi: lifted, calendarFree: true, repaired: true };
}

function emptySlice(expiry: number, futuresMarketId: string, years: number, instruments: BoardInstrument[]): ExpirySlice {
  return {
    expiry,
    forward: null,
    forwardSource: null,
    futuresMarketId,
    quotesForward: null,
    svi: null,
    years,
    fitRmse: null,
    quotesUsed: 0,
    butterflyFree: null,
    calendarFree: null,
    calendarRepaired: false,
    held: false,
    rows: instruments.map(unmarkedRow),
  };
}

/** A row with the book's quotes and no surface (no forward or too few quotes to fit). */
function unmarkedRow(i: BoardInstrument): OptionRow {
  return {
    id: i.id, type: i.type, strike: i.strike, expiry: i.expiry, bid: i.bestBid(), ask: i.bestAsk(),
    mark: null, iv: null, delta: null, gamma: null, vega: null, theta: null,
  };
}
