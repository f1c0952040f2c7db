/**
 * Impact prices and the premium index for funding (mechanics.md 1.3).
 *
 * impactPrice: the average fill price of a market order spending `notional` of quote currency
 * against the given side of the book (levels best first: asks ascending for an impact ask, bids
 * descending for an impact bid). Walking the levels, whole levels are taken until the next one is
 * larger than what is left; the last level is taken partially. With B = base bought from whole
 * levels, R = quote left for the last level at price p:
 *   avg = notional / (B + R/p) = notional·p / (B·p + R)
 * computed with integers (no intermediate rounding) and rounded once, half up, to 18 digits.
 * null when the book cannot absorb the whole notional.
 *
 * premiumIndex: P = [max(0, impactBid − index) − max(0, index − impactAsk)] / index, zero when the
 * index sits inside the impact spread and zero when either impact side is missing (as dYdX's
 * `GetPricePremium`). Rounded half up (ties away from zero) at 18 digits.
 * Worked example (mechanics.md 1.3): index 60 000, impact bid 60 060 ⇒ P = 0.001.
 * Pure and exact. Tested in impact-price.test.ts.
 */
import { SCALE, ZERO, div, divRound, max } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

export type BookLevel = readonly [price: Fixed, size: Fixed];

/** Average fill price of a market order worth `notional` of quote; null if depth is insufficient. */
export function impactPrice(levels: readonly BookLevel[], notional: Fixed): Fixed | null {
  if (notional <= 0n) throw new RangeError('notional must be positive');
  // Quote amounts are carried at 36 fractional digits (price × size, both Fixed), so nothing rounds.
  let remaining = notional * SCALE;
  let base = 0n;
  for (const [price, size] of levels) {
    if (price <= 0n) throw new RangeError('level price must be positive');
    if (size <= 0n) continue;
    const levelQuote = price * size;
    if (levelQuote >= remaining) {
      return divRound(notional * price * SCALE, base * price + remaining, 'halfUp');
    }
    remaining -= levelQuote;
    base += size;
  }
  return null;
}

/** Premium of the impact prices over the index; 0 when either side is null. `index` must be > 0. */
export function premiumIndex(impactBid: Fixed | null, impactAsk: Fixed | null, index: Fixed): Fixed {
  if (index <= 0n) throw new RangeError('index must be positive');
  if (impactBid === null || impactAsk === null) return ZERO;
  const numerator = max(ZERO, impactBid - index) - max(ZERO, index - impactAsk);
  return div(numerator, index, 'halfUp');
}
