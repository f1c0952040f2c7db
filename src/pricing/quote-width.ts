/**
 * Option quote half-spread in price units, proportional to vega (mechanics.md 3.5).
 *
 * Makers quote options in volatility: a half-spread of h vol points costs h × vega in price, so
 * spreads widen with vega (long-dated, at-the-money) and collapse to the tick in the wings:
 * halfSpread = max(tick, hVolPts · vegaPerVolPt + minHalfSpread). Floats in, float out; the market
 * maker rounds the resulting bid/ask outward to the tick at its boundary. Tested in quote-width.test.ts.
 */

export interface HalfSpreadInput {
  /** Black-76 vega per vol point (as returned by black76). */
  vegaPerVolPt: number;
  /** Half-spread in vol points, e.g. 0.5–2 by tenor. */
  hVolPts: number;
  /** Fixed add-on in price units (covers delta/inventory risk not captured by vega). */
  minHalfSpread: number;
  tick: number;
}

export function optionHalfSpread(input: HalfSpreadInput): number {
  const { vegaPerVolPt, hVolPts, minHalfSpread, tick } = input;
  // Vega is never negative for a vanilla option; a negative input would narrow quotes, so clamp it.
  return Math.max(tick, hVolPts * Math.max(vegaPerVolPt, 0) + minHalfSpread);
}
