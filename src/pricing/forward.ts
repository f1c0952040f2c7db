/**
 * Forward price per option expiry: the put–call-parity synthetic from book quotes, and carry.
 *
 * Parity for European options on the same forward (Black 1976; mechanics.md 3.2):
 * C − P = D·(F − K), so F = K + (C_mid − P_mid)/D. Following Deribit's synthetic future, the strike
 * used is the one whose call and put are both two-sided and whose implied forward is the most precise,
 * i.e. with the tightest spread of C − P: (callAsk − callBid) + (putAsk − putBid). Strikes tied on that
 * spread are averaged, as the DVOL methodology does. At least two usable strikes are required so a
 * single stray pair of quotes cannot set the forward. The fallback when no synthetic is available is
 * carry: F = S·e^(f·T) with an annualised carry (funding/basis) rate f.
 *
 * Quotes are plain numbers (prices converted from exact decimals at the caller's boundary). A side is
 * usable when bid > 0, ask > 0, both finite and bid <= ask; crossed or empty quotes are dropped.
 * Tested in forward.test.ts.
 */

export interface StrikeQuotes {
  strike: number;
  callBid: number;
  callAsk: number;
  putBid: number;
  putAsk: number;
}

export interface SyntheticForward {
  forward: number;
  /** The strike used (with ties, the tied strike nearest the averaged forward). */
  strike: number;
  /** Spread of C − P at that strike, in price units (undiscounted by D). */
  spread: number;
}

const MIN_USABLE_STRIKES = 2;

function twoSided(bid: number, ask: number): boolean {
  return Number.isFinite(bid) && Number.isFinite(ask) && bid > 0 && ask > 0 && bid <= ask;
}

/** Parity forward from the tightest two-sided strike; null with fewer than 2 usable strikes. */
export function syntheticForward(quotes: readonly StrikeQuotes[], D = 1): SyntheticForward | null {
  if (!(D > 0 && Number.isFinite(D))) return null;
  const usable = quotes.filter((q) => {
    const strikeOk = q.strike > 0 && q.strike < Infinity;
    return strikeOk && twoSided(q.callBid, q.callAsk) && twoSided(q.putBid, q.putAsk);
  });
  if (usable.length < MIN_USABLE_STRIKES) return null;

  const spreadOf = (q: StrikeQuotes): number => q.callAsk - q.callBid + (q.putAsk - q.putBid);
  const tightest = Math.min(...usable.map(spreadOf));
  // Ties within rounding noise of the quotes count as ties.
  const tieTol = 1e-12 * Math.max(1, tightest);
  const tied = usable.filter((q) => spreadOf(q) - tightest <= tieTol);
  const forwards = tied.map((q) => q.strike + ((q.callBid + q.callAsk) / 2 - (q.putBid + q.putAsk) / 2) / D);
  const forward = forwards.reduce((s, f) => s + f, 0) / forwards.length;
  let strike = tied[0]!.strike;
  for (const q of tied) if (Math.abs(q.strike - forward) < Math.abs(strike - forward)) strike = q.strike;
  return { forward, strike, spread: tightest };
}

/** Carry forward F = spot·e^(annualCarry·T), T in years. */
export function carryForward(spot: number, T: number, annualCarry: number): number {
  return spot * Math.exp(annualCarry * Math.max(T, 0));
}

/** One strike's parity forward and how far its quotes' spreads let it stray from the true one. */
export interface PairForward {
  readonly strike: number;
  readonly forward: number;
  /** Half the spread of C − P at the strike: a quote set made on one forward stays within it. */
  readonly tolerance: number;
}

/** The parity forward K + (C_mid − P_mid)/D of every strike whose call and put are both two-sided. */
export function pairForwards(quotes: readonly StrikeQuotes[], D = 1): PairForward[] {
  const out: PairForward[] = [];
  if (!(D > 0 && Number.isFinite(D))) return out;
  for (const q of quotes) {
    if (!(q.strike > 0 && q.strike < Infinity && twoSided(q.callBid, q.callAsk) && twoSided(q.putBid, q.putAsk))) continue;
    const forward = q.strike + ((q.callBid + q.callAsk) / 2 - (q.putBid + q.putAsk) / 2) / D;
    out.push({ strike: q.strike, forward, tolerance: (q.callAsk - q.callBid + (q.putAsk - q.putBid)) / 2 / D });
  }
  return out;
}

/**
 * The forward the option books were quoted against: the median of the strikes' parity forwards (at
 * least two). A maker re-quoting after a forward move updates strikes one by one, so for a moment
 * some strikes sit on the old forward and some on the new: the median follows the majority, where
 * the tightest strike alone (`syntheticForward`) could be either.
 */
export function medianForward(pairs: readonly PairForward[]): number | null {
  if (pairs.length < MIN_USABLE_STRIKES) return null;
  const sorted = pairs.map((p) => p.forward).sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
