/**
 * Black-76 prices, Greeks and implied volatility of European options on a forward.
 *
 * Formulas from Black (1976), "The pricing of commodity contracts", in the notation of
 * docs mechanics.md 3.1: d1 = [ln(F/K) + σ²T/2]/(σ√T), d2 = d1 − σ√T, D = e^(−rT),
 * C = D[F·N(d1) − K·N(d2)], P = D[K·N(−d2) − F·N(−d1)]. Delta is to the forward, vega is per vol
 * point (0.01), theta is per calendar day (per-year theta / 365) with r held constant.
 *
 * Assumes F > 0 and K > 0 (USDC prices of a strictly positive underlying), σ >= 0, T in years;
 * T <= 0 (expired) and σ√T == 0 are handled as the intrinsic-value limit with delta 0/±D and no NaN.
 * Invalid inputs (non-finite, non-positive F or K, negative σ) throw a RangeError: they are caller
 * bugs, not market states. Floats in, floats out; rounding to a tick happens at the caller.
 *
 * Tested in black76.test.ts: the mechanics.md vector, put–call parity and strike monotonicity /
 * convexity over random inputs (fast-check), finite-difference Greeks, and implied-vol round trips.
 */
import { normCdf, normPdf } from './normal.ts';

export type OptionType = 'call' | 'put';

export interface Black76Input {
  F: number;
  K: number;
  /** Years to expiry. */
  T: number;
  /** Annualised volatility, 0.5 = 50 %. */
  sigma: number;
  type: OptionType;
  /** Continuously compounded discount rate; 0 when omitted. */
  r?: number;
}

export interface Black76Result {
  price: number;
  /** dV/dF. */
  delta: number;
  /** d²V/dF². */
  gamma: number;
  /** dV/dσ per vol point (σ + 0.01). */
  vega: number;
  /** Value change per calendar day passing, r constant. */
  theta: number;
  d1: number;
  d2: number;
}

export interface ImpliedVolInput {
  price: number;
  F: number;
  K: number;
  T: number;
  type: OptionType;
  r?: number;
}

const DAYS_PER_YEAR = 365;

function checkInput(F: number, K: number, T: number, r: number): void {
  if (!(Number.isFinite(F) && F > 0)) throw new RangeError(`black76: F must be positive, got ${F}`);
  if (!(Number.isFinite(K) && K > 0)) throw new RangeError(`black76: K must be positive, got ${K}`);
  if (Number.isNaN(T) || T === Infinity) throw new RangeError(`black76: T must be finite, got ${T}`);
  if (!Number.isFinite(r)) throw new RangeError(`black76: r must be finite, got ${r}`);
}

/** Price and Greeks at zero time value: intrinsic, delta 0/±D (half at the money), no curvature. */
function intrinsicResult(F: number, K: number, T: number, r: number, type: OptionType): Black76Result {
  const disc = T > 0 ? Math.exp(-r * T) : 1;
  const phi = type === 'call' ? 1 : -1;
  const price = disc * Math.max(phi * (F - K), 0);
  const inMoney = phi * (F - K);
  const delta = inMoney > 0 ? phi * disc : inMoney < 0 ? 0 : 0.5 * phi * disc;
  // d1 = d2 = ±∞ is the true limit of ln(F/K)/(σ√T); at the money both tend to 0.
  const d = F > K ? Infinity : F < K ? -Infinity : 0;
  const theta = T > 0 ? (r * price) / DAYS_PER_YEAR : 0;
  return { price, delta, gamma: 0, vega: 0, theta, d1: d, d2: d };
}

/** Black-76 price and Greeks of one European option on the forward F. */
export function black76(input: Black76Input): Black76Result {
  const { F, K, T, sigma, type } = input;
  const r = input.r ?? 0;
  checkInput(F, K, T, r);
  if (!(Number.isFinite(sigma) && sigma >= 0)) {
    throw new RangeError(`black76: sigma must be finite and >= 0, got ${sigma}`);
  }
  const sqrtT = T > 0 ? Math.sqrt(T) : 0;
  const sd = sigma * sqrtT;
  if (!(sd > 0)) return intrinsicResult(F, K, T, r, type);

  const disc = Math.exp(-r * T);
  const d1 = (Math.log(F / K) + 0.5 * sd * sd) / sd;
  const d2 = d1 - sd;
  const pdf = normPdf(d1);
  // Each side uses the tail it needs (N(d) or N(−d)) so deep OTM prices keep relative accuracy.
  const price =
    type === 'call'
      ? disc * (F * normCdf(d1) - K * normCdf(d2))
      : disc * (K * normCdf(-d2) - F * normCdf(-d1));
  const delta = type === 'call' ? disc * normCdf(d1) : -disc * normCdf(-d1);
  const gamma = (disc * pdf) / (F * sd);
  const vegaPerUnit = disc * F * pdf * sqrtT;
  const thetaPerYear = (-disc * F * pdf * sigma) / (2 * sqrtT) + r * price;
  return {
    price: Math.max(price, 0),
    delta,
    gamma,
    vega: vegaPerUnit / 100,
    theta: thetaPerYear / DAYS_PER_YEAR,
    d1,
    d2,
  };
}

/** Undiscounted Black-76 price and vega per unit σ; the inner loop of the implied-vol solver. */
function priceAndVega(F: number, K: number, T: number, sigma: number, type: OptionType): [number, number] {
  const sqrtT = Math.sqrt(T);
  const sd = sigma * sqrtT;
  const d1 = (Math.log(F / K) + 0.5 * sd * sd) / sd;
  const d2 = d1 - sd;
  const price =
    type === 'call' ? F * normCdf(d1) - K * normCdf(d2) : K * normCdf(-d2) - F * normCdf(-d1);
  return [price, F * normPdf(d1) * sqrtT];
}

/**
 * Starting point: Corrado–Miller (1996) quadratic approximation, which reduces to
 * Brenner–Subrahmanyam (1988) σ ≈ C·√(2π/T)/F at the money. `call` is the undiscounted call price.
 */
function initialGuess(call: number, F: number, K: number, T: number): number {
  const half = call - (F - K) / 2;
  const disc = half * half - ((F - K) * (F - K)) / Math.PI;
  const guess = (Math.sqrt(2 * Math.PI / T) / (F + K)) * (half + Math.sqrt(Math.max(disc, 0)));
  return Number.isFinite(guess) && guess > 0 ? guess : 0.5;
}

const PRICE_TOL = 1e-10;
const VOL_TOL = 1e-15;
const MAX_ITERATIONS = 200;

/**
 * Safeguarded Newton (Numerical Recipes' rtsafe idea): Newton steps on vega, but any step that
 * leaves the current bracket [lo, hi] or stalls is replaced by bisection, so it always converges.
 * `target` is an undiscounted out-of-the-money price, for which price is increasing in σ.
 */
function solveVol(target: number, F: number, K: number, T: number, type: OptionType): number | null {
  let lo = 0.01;
  let hi = 5.0;
  // The documented bracket is [1 %, 500 %]; widen it geometrically for quotes just beyond it.
  while (priceAndVega(F, K, T, lo, type)[0] > target && lo > 1e-4) lo /= 2;
  while (priceAndVega(F, K, T, hi, type)[0] < target && hi < 20) hi *= 2;
  const [pLo] = priceAndVega(F, K, T, lo, type);
  const [pHi] = priceAndVega(F, K, T, hi, type);
  if (pLo > target || pHi < target) return null;

  const call = type === 'call' ? target : target + (F - K);
  let sigma = Math.min(Math.max(initialGuess(call, F, K, T), lo), hi);
  for (let i = 0; i < MAX_ITERATIONS; i++) {
    const [p, vega] = priceAndVega(F, K, T, sigma, type);
    const diff = p - target;
    if (Math.abs(diff) <= PRICE_TOL) return sigma;
    if (diff > 0) hi = sigma;
    else lo = sigma;
    let next = vega > 0 ? sigma - diff / vega : Number.NaN;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (Math.abs(next - sigma) <= VOL_TOL * Math.max(1, sigma) || hi - lo <= VOL_TOL) return next;
    sigma = next;
  }
  return sigma;
}

/**
 * Black-76 implied volatility, or null when the price is outside the no-arbitrage bounds
 * (call: (D·max(F−K,0), D·F); put: (D·max(K−F,0), D·K)) or no volatility reproduces it.
 * In-the-money prices are first turned into the out-of-the-money price of the other type by parity,
 * which is where the solver is best conditioned. Converges to 1e-10 in price (or machine precision
 * in σ when the price itself cannot be resolved that finely).
 */
export function impliedVol(input: ImpliedVolInput): number | null {
  const { price, F, K, T, type } = input;
  const r = input.r ?? 0;
  checkInput(F, K, T, r);
  if (!Number.isFinite(price) || !(T > 0)) return null;
  const disc = Math.exp(-r * T);
  const undiscounted = price / disc;
  const intrinsic = Math.max(type === 'call' ? F - K : K - F, 0);
  const upper = type === 'call' ? F : K;
  if (!(undiscounted > intrinsic && undiscounted < upper)) return null;
  // Out-of-the-money side: a call with K >= F, a put with K < F.
  const otmType: OptionType = K >= F ? 'call' : 'put';
  const otmPrice = otmType === type ? undiscounted : undiscounted - intrinsic;
  if (!(otmPrice > 0)) return null;
  return solveVol(otmPrice, F, K, T, otmType);
}
