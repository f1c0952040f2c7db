/**
 * The option board: per underlying and expiry, the forward, a raw-SVI smile fitted to the option
 * books, and from it every instrument's reference mark, implied vol and Greeks (Black-76 on the
 * expiry's forward), plus DVOL. Recomputed on every clock tick inside the core, so the marks the
 * CLOB engine margins short options with are a deterministic function of the journal (floats are
 * confined to the pricing functions and rounded to the option tick here, at the boundary).
 *
 * Inputs and staleness (research/mechanics.md 3 and 4):
 *   - forward: the expiry's dated-future mark when it is fresh (source `future`), else the put-call
 *     parity synthetic from the option books (`parity`, ≥ 2 two-sided strikes), else the index
 *     (`index`); without a fresh index there is no forward and no mark;
 *   - quotes: the live books (two-sided, spread at most half the mid, inside static bounds); OTM
 *     strikes only (puts below the forward, calls above), weighted by vega over spread;
 *   - an expiry with fewer than 5 usable quotes has no fitted slice and its rows have no mark —
 *     never a stale or invented one; a mark is only served while the board that computed it is
 *     younger than `maxAgeMs`.
 * Slices are checked for butterfly arbitrage (Durrleman g ≥ 0, the fit repairs toward a flat slice)
 * and each against the previous expiry for calendar arbitrage (flagged on the board).
 *
 * DVOL: the VIX method on the two expiries around 30 days (pricing/dvol.ts), with book mids where an
 * expiry has them and SVI prices on its listed strikes where it does not, smoothed by the
 * interquartile mean of the last 120 raw values.
 */
import type { Fixed } from '../money.ts';
import { fromFloat, toFloat } from '../money.ts';
import { black76, impliedVol } from '../../pricing/black76.ts';
import { computeDvol, iqmSmoother, pickDvolExpiries, type IqmSmoother } from '../../pricing/dvol.ts';
import { syntheticForward } from '../../pricing/forward.ts';
import { calendarArbitrageFree, fitSvi, sviCheckGrid, sviImpliedVol, type SviParams, type SviPoint } from '../../pricing/svi.ts';

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
  readonly svi: SviParams | null;
  readonly fitRmse: number | null;
  readonly quotesUsed: number;
  readonly butterflyFree: boolean | null;
  readonly calendarFree: boolean | null;
  readonly rows: OptionRow[];
}

export interface DvolValue {
  readonly dvol: number;
  readonly raw: number;
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
}

export const DEFAULT_BOARD_SETTINGS: BoardSettings = {
  maxAgeMs: 5_000,
  minQuotes: 5,
  maxSpreadOfMid: 0.5,
  yearMs: 365 * 86_400_000,
};

export class OptionBoard {
  private readonly boards = new Map<string, UnderlyingBoard>();
  private readonly marks = new Map<string, { row: OptionRow; at: number }>();
  /** The last non-null mark of each instrument, kept across recomputes that have none (heldMark). */
  private readonly held = new Map<string, Fixed>();
  private readonly smoothers = new Map<string, IqmSmoother>();
  private readonly warm = new Map<string, SviParams>();

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
    let previous: { svi: SviParams; T: number } | null = null;
    for (const expiry of [...byExpiry.keys()].sort((a, b) => a - b)) {
      const slice = this.slice(underlying, expiry, byExpiry.get(expiry)!, index, now, previous);
      expiries.push(slice);
      if (slice.svi !== null) previous = { svi: slice.svi, T: this.years(expiry, now) };
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
    previous: { svi: SviParams; T: number } | null,
  ): ExpirySlice {
    const T = this.years(expiry, now);
    const futuresMarketId = this.inputs.futureId(underlying, expiry);
    const fwd = index === null ? null : this.forward(underlying, expiry, instruments, index.price, now);
    if (fwd === null) return emptySlice(expiry, futuresMarketId, instruments);
    const F = toFloat(fwd.price);
    const points = this.quotePoints(instruments, F, T);
    const key = `${underlying}:${expiry}`;
    const fit = points.length >= this.settings.minQuotes ? fitSvi(points, { warmStart: this.warm.get(key) }) : null;
    if (fit !== null) this.warm.set(key, fit.params);
    const calendarFree = fit === null || previous === null
      ? null
      : calendarArbitrageFree(previous.svi, fit.params, sviCheckGrid(points));
    const rows = instruments
      .slice()
      .sort((a, b) => (a.strike < b.strike ? -1 : a.strike > b.strike ? 1 : a.type < b.type ? -1 : 1))
      .map((i) => this.row(i, F, T, fit?.params ?? null));
    return {
      expiry,
      forward: fwd.price,
      forwardSource: fwd.source,
      futuresMarketId,
      svi: fit?.params ?? null,
      fitRmse: fit?.rmse ?? null,
      quotesUsed: points.length,
      butterflyFree: fit === null ? null : fit.arbitrageFree,
      calendarFree,
      rows,
    };
  }

  private forward(underlying: string, expiry: number, instruments: BoardInstrument[], index: Fixed, now: number): { price: Fixed; source: ForwardSource } | null {
    const future = this.inputs.futureMark(underlying, expiry, now);
    if (future !== null) return { price: future.price, source: 'future' };
    const byStrike = new Map<Fixed, { call?: BoardInstrument; put?: BoardInstrument }>();
    for (const i of instruments) {
      const pair = byStrike.get(i.strike) ?? {};
      pair[i.type] = i;
      byStrike.set(i.strike, pair);
    }
    const quotes = [];
    for (const [strike, pair] of byStrike) {
      const c = pair.call;
      const p = pair.put;
      if (c === undefined || p === undefined) continue;
      const [cb, ca, pb, pa] = [c.bestBid(), c.bestAsk(), p.bestBid(), p.bestAsk()];
      if (cb === null || ca === null || pb === null || pa === null) continue;
      quotes.push({ strike: toFloat(strike), callBid: toFloat(cb), callAsk: toFloat(ca), putBid: toFloat(pb), putAsk: toFloat(pa) });
    }
    const synthetic = syntheticForward(quotes);
    if (synthetic !== null && synthetic.forward > 0) {
      const price = fromFloat(synthetic.forward, 8, 'halfUp');
      if (price !== null && price > 0n) return { price, source: 'parity' };
    }
    return { price: index, source: 'index' };
  }

  /** OTM two-sided quotes as SVI points (k = ln K/F, w = σ²T), weighted by vega over spread. */
  private quotePoints(instruments: BoardInstrument[], F: number, T: number): SviPoint[] {
    const points: SviPoint[] = [];
    for (const i of instruments) {
      const K = toFloat(i.strike);
      if ((i.type === 'call') !== K >= F) continue;
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

  private dvol(underlying: string, expiries: ExpirySlice[], now: number, sourceTs: number): DvolValue | null {
    const usable = expiries.filter((e) => e.forward !== null && e.svi !== null);
    const pick = pickDvolExpiries(usable.map((e) => e.expiry), now);
    if (pick === null) return null;
    const input = (ms: number) => {
      const slice = usable.find((e) => e.expiry === ms)!;
      const options = slice.rows
        .map((r) => ({ strike: toFloat(r.strike), type: r.type, mid: rowMid(r) }))
        .filter((o): o is { strike: number; type: 'call' | 'put'; mid: number } => o.mid !== null);
      return { expiryMs: ms, forward: toFloat(slice.forward!), options };
    };
    const result = computeDvol({ nowMs: now, near: input(pick.nearMs), far: input(pick.farMs) });
    if (result === null) return null;
    let smoother = this.smoothers.get(underlying);
    if (smoother === undefined) this.smoothers.set(underlying, (smoother = iqmSmoother(120, 1000)));
    smoother.push(result.dvol, now);
    return { dvol: smoother.value(now) ?? result.dvol, raw: result.dvol, computedAt: now, sourceTs };
  }
}

/** Book mid when two-sided, else the SVI mark (mechanics 4: substitute surface prices). */
function rowMid(r: OptionRow): number | null {
  if (r.bid !== null && r.ask !== null) return (toFloat(r.bid) + toFloat(r.ask)) / 2;
  return r.mark === null ? null : toFloat(r.mark);
}

function emptySlice(expiry: number, futuresMarketId: string, instruments: BoardInstrument[]): ExpirySlice {
  return {
    expiry,
    forward: null,
    forwardSource: null,
    futuresMarketId,
    svi: null,
    fitRmse: null,
    quotesUsed: 0,
    butterflyFree: null,
    calendarFree: null,
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
