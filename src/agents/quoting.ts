/**
 * The reference market maker's pricing decisions, as pure functions (no I/O): ladders around a
 * reference price for perps, futures and spot, and option quotes around its own theoretical value.
 *
 * Options (contract: "bid and ask sit around the theoretical value, widened in proportion to vega";
 * research/mechanics.md 3.5): theo = Black-76 on the expiry's forward with the maker's OWN volatility
 * view (an ATM level per underlying, a linear skew in log-moneyness, a gentle term structure), so the
 * exchange's fitted surface comes from real book quotes rather than from the exchange's own marks.
 * half-spread = the largest of hVol × vega + minimum, |delta| × F × forwardCoverBps (the maker
 * re-prices an expiry only when its forward moved `optionMoveBps`, and the board's marks follow the
 * forward meanwhile: an in-the-money option's quote must absorb that move on its delta, or the mark
 * leaves the quote) and `minTicks` ticks; quotes are skewed against inventory and one side is dropped
 * at the inventory limit. Prices are rounded outward to the tick (bid down, ask up).
 *
 * Dated futures: quoted around the maker's forward, the index carried at a configured annual rate
 * (`carryForward`): F = S·e^(carry·T). The venue's future mark follows its book, so the futures marks
 * and the options priced off them carry that basis.
 */
import { formatDecimal, fromFloat } from '../core/money.ts';
import { black76 } from '../pricing/black76.ts';
import { optionHalfSpread } from '../pricing/quote-width.ts';

export interface LadderParams {
  /** Half-spread of the first level, in basis points of the reference price. */
  readonly firstBps: number;
  /** Extra distance per further level, in basis points. */
  readonly stepBps: number;
  readonly levels: number;
  /** Size per level in base units (a float here; rounded to the step by the caller). */
  readonly size: number;
  /** Position (base units) at which the maker stops adding on that side. */
  readonly maxPosition: number;
}

export interface Level {
  readonly side: 'buy' | 'sell';
  readonly price: number;
  readonly quantity: number;
}

/**
 * Bids below and asks above `reference`, shaded against the current position by up to the first
 * level's half-spread (long: both sides down), with one side dropped at the inventory limit.
 */
export function ladder(reference: number, position: number, p: LadderParams, tick: number): Level[] {
  const out: Level[] = [];
  const skewBps = inventoryRatio(position, p.maxPosition) * p.firstBps;
  for (let i = 0; i < p.levels; i++) {
    const offset = p.firstBps + i * p.stepBps;
    const bid = floorTo(reference * (1 - (offset + skewBps) / 10_000), tick);
    const ask = ceilTo(reference * (1 + (offset - skewBps) / 10_000), tick);
    if (position < p.maxPosition && bid > 0) out.push({ side: 'buy', price: bid, quantity: p.size });
    if (position > -p.maxPosition) {
      out.push({ side: 'sell', price: Math.max(ask, bid + tick), quantity: p.size });
    }
  }
  return out;
}

export interface VolView {
  /** At-the-money vol at 30 days (0.55 = 55 %). */
  readonly atm: number;
  /** d(vol)/d(log-moneyness): negative puts more vol on low strikes. */
  readonly skew: number;
  /** Curvature in log-moneyness squared. */
  readonly smile: number;
  /** Vol change per year of tenor beyond 30 days (term structure slope). */
  readonly term: number;
}

export function makerVol(view: VolView, forward: number, strike: number, T: number): number {
  const k = Math.log(strike / forward);
  const tenorAdj = view.term * (T - 30 / 365);
  const vol = view.atm + tenorAdj + view.skew * k + view.smile * k * k;
  return Math.min(3, Math.max(0.1, vol));
}

export interface OptionQuoteParams {
  /** Half-spread per unit of vega, in vol points. */
  readonly hVolPts: number;
  readonly minHalfSpread: number;
  /** Forward move, in basis points, the half-spread absorbs on the option's delta. */
  readonly forwardCoverBps: number;
  /** Smallest half-spread in ticks (deep in-the-money options have almost no vega). */
  readonly minTicks: number;
  readonly size: number;
  readonly maxPosition: number;
}

export interface OptionQuoteInput {
  readonly forward: number;
  readonly strike: number;
  /** Years to expiry. */
  readonly T: number;
  readonly type: 'call' | 'put';
  readonly view: VolView;
  /** Signed position in contracts (long > 0). */
  readonly position: number;
  readonly tick: number;
}

/** The maker's theoretical value, its delta and vega (per vol point), and the half-spread it quotes. */
export function optionTheo(
  input: OptionQuoteInput,
  p: OptionQuoteParams,
): { theo: number; delta: number; vega: number; half: number } {
  const sigma = makerVol(input.view, input.forward, input.strike, input.T);
  const g = black76({ F: input.forward, K: input.strike, T: input.T, sigma, type: input.type });
  const { hVolPts, minHalfSpread } = p;
  const byVega = optionHalfSpread({ vegaPerVolPt: g.vega, hVolPts, minHalfSpread, tick: input.tick });
  const byDelta = (Math.abs(g.delta) * input.forward * p.forwardCoverBps) / 10_000;
  const half = Math.max(byVega, byDelta, p.minTicks * input.tick);
  return { theo: g.price, delta: g.delta, vega: g.vega, half };
}

/**
 * Two-sided quote around the maker's theoretical value, shaded against the position by up to one
 * half-spread; a side is dropped at the inventory limit, and the bid when it would be below a tick.
 */
export function optionQuote(input: OptionQuoteInput, p: OptionQuoteParams): Level[] {
  const { theo, half } = optionTheo(input, p);
  const { tick, position } = input;
  const skew = inventoryRatio(position, p.maxPosition) * half;
  const bid = floorTo(theo - half - skew, tick);
  const ask = ceilTo(theo + half - skew, tick);
  const out: Level[] = [];
  if (bid >= tick && position < p.maxPosition) out.push({ side: 'buy', price: bid, quantity: p.size });
  if (position > -p.maxPosition) {
    out.push({ side: 'sell', price: Math.max(ask, bid + tick, tick), quantity: p.size });
  }
  return out;
}

/** Position as a fraction of its limit, clamped to [-1, 1]. */
function inventoryRatio(position: number, maxPosition: number): number {
  return Math.max(-1, Math.min(1, position / maxPosition));
}

export function floorTo(x: number, tick: number): number {
  return Math.floor(x / tick + 1e-9) * tick;
}

export function ceilTo(x: number, tick: number): number {
  return Math.ceil(x / tick - 1e-9) * tick;
}

/** A float from the maker's model as the exact wire decimal at `decimals` places (never an exponent). */
export function priceString(x: number, decimals: number): string {
  const fixed = fromFloat(x, decimals, 'halfUp');
  if (fixed === null) throw new RangeError(`price ${x} is not representable`);
  return formatDecimal(fixed);
}
