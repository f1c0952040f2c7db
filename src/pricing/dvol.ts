/**
 * DVOL: 30-day constant-maturity implied volatility index by the VIX method, and its smoother.
 *
 * Method of the Cboe VIX white paper (2003/2019) as Deribit applies it (mechanics.md section 4), with
 * r = 0 since our options settle in USDC and are priced off each expiry's forward:
 *  1. expiries: the last one under 30 days and the first one at or beyond (`pickDvolExpiries`);
 *  2. K0 = the listed strike at or just below the forward F;
 *  3. Q(K) = put mid for K < K0, call mid for K > K0, the average of the two at K0; walking outward from
 *     K0, strikes with no positive mid are skipped and, as in VIX, the walk stops after two consecutive
 *     such strikes (the "two zero bids" rule: inputs here are mids, so a zero or missing mid stands for
 *     a zero bid);
 *  4. σ²_j = (2/T_j) Σ ΔK/K²·Q(K) − (1/T_j)(F/K0 − 1)², ΔK the half-distance between the neighbouring
 *     strikes used (one-sided at the ends), T_j in years from milliseconds (365-day year);
 *  5. σ²_30 = [T1σ²_1(N2 − N30)/(N2 − N1) + T2σ²_2(N30 − N1)/(N2 − N1)]·N365/N30 with N in minutes
 *     (N30 = 43 200, N365 = 525 600); DVOL = 100·√σ²_30 (percent).
 * Smoothing: the interquartile mean of one raw value a second over the last 120 seconds (`iqmSmoother`).
 *
 * Two ways to get an expiry's σ²_j: from a strike ladder of mids (steps 2–4, `expiryVariance`), or
 * from a fitted smile integrated over all strikes (`sviVariance`). The board uses the second: a
 * listed ladder spans only about ±1.5 standard deviations at 30 days, and the VIX sum's truncation of
 * the wings then reads several vol points low (a flat 55 % surface gave 53.15 on the default
 * ladder). The ladder method stays as the independent check of the integral in tests.
 *
 * Inputs are plain numbers (mids already converted from exact decimals); time is passed in as ms.
 * Returns null instead of a number when inputs are insufficient (fewer than 2 strikes used for an
 * expiry, no strike at or below F, expiries out of order or past) or the variance is not positive.
 * Tested in dvol.test.ts against a hand-tabulated calculation and a flat-vol black76 surface.
 */
import type { OptionType } from './black76.ts';
import { normCdf } from './normal.ts';
import { sviTotalVariance, type SviParams } from './svi.ts';

export interface DvolOption {
  strike: number;
  type: OptionType;
  mid: number;
}

export interface DvolExpiry {
  expiryMs: number;
  forward: number;
  options: readonly DvolOption[];
}

export interface DvolResult {
  /** Annualised 30-day vol in percent, e.g. 55.3. */
  dvol: number;
  sigma2Near: number;
  sigma2Far: number;
  nearExpiryMs: number;
  farExpiryMs: number;
}

const MS_PER_MINUTE = 60_000;
const N30 = 43_200;
const N365 = 525_600;
const THIRTY_DAYS_MS = N30 * MS_PER_MINUTE;
const MIN_STRIKES = 2;

/** Near and next expiry around 30 days: near − now < 30 d <= far − now. Null if either is missing. */
export function pickDvolExpiries(
  expiriesMs: readonly number[],
  nowMs: number,
): { nearMs: number; farMs: number } | null {
  let nearMs = -Infinity;
  let farMs = Infinity;
  for (const e of expiriesMs) {
    if (!Number.isFinite(e) || e <= nowMs) continue;
    if (e - nowMs < THIRTY_DAYS_MS) nearMs = Math.max(nearMs, e);
    else farMs = Math.min(farMs, e);
  }
  return Number.isFinite(nearMs) && Number.isFinite(farMs) ? { nearMs, farMs } : null;
}

/** Positive finite mids per strike and type; zero or missing mids count as "no bid". */
function midsByStrike(options: readonly DvolOption[]): Map<number, { call?: number; put?: number }> {
  const byStrike = new Map<number, { call?: number; put?: number }>();
  for (const o of options) {
    if (!(Number.isFinite(o.strike) && o.strike > 0)) continue;
    const entry = byStrike.get(o.strike) ?? {};
    if (Number.isFinite(o.mid) && o.mid > 0) entry[o.type] = o.mid;
    byStrike.set(o.strike, entry);
  }
  return byStrike;
}

/**
 * Strikes and Q values entering the sum: outward from K0, OTM side only, stopping after two
 * consecutive strikes without a positive mid.
 */
function selectStrikes(
  strikes: readonly number[],
  i0: number,
  mids: Map<number, { call?: number; put?: number }>,
): { K: number; Q: number }[] {
  const picked: { K: number; Q: number }[] = [];
  const atK0 = mids.get(strikes[i0]!)!;
  const both = [atK0.call, atK0.put].filter((v): v is number => v !== undefined);
  if (both.length > 0) picked.push({ K: strikes[i0]!, Q: both.reduce((s, v) => s + v, 0) / both.length });
  for (const dir of [-1, 1] as const) {
    let misses = 0;
    for (let i = i0 + dir; i >= 0 && i < strikes.length && misses < 2; i += dir) {
      const q = mids.get(strikes[i]!)![dir < 0 ? 'put' : 'call'];
      if (q === undefined) {
        misses++;
        continue;
      }
      misses = 0;
      picked.push({ K: strikes[i]!, Q: q });
    }
  }
  return picked.sort((x, y) => x.K - y.K);
}

/** VIX variance σ²_j of one expiry and its time to expiry in years, or null if unusable. */
export function expiryVariance(slice: DvolExpiry, nowMs: number): { sigma2: number; T: number } | null {
  const T = (slice.expiryMs - nowMs) / MS_PER_MINUTE / N365;
  const F = slice.forward;
  if (!(T > 0) || !(Number.isFinite(F) && F > 0)) return null;
  const mids = midsByStrike(slice.options);
  const strikes = [...mids.keys()].sort((x, y) => x - y);
  let i0 = -1;
  for (let i = 0; i < strikes.length && strikes[i]! <= F; i++) i0 = i;
  if (i0 < 0) return null;
  const K0 = strikes[i0]!;
  const used = selectStrikes(strikes, i0, mids);
  if (used.length < MIN_STRIKES) return null;
  let sum = 0;
  for (let i = 0; i < used.length; i++) {
    const lo = used[Math.max(i - 1, 0)]!.K;
    const hi = used[Math.min(i + 1, used.length - 1)]!.K;
    // Central difference inside, one-sided (full gap to the only neighbour) at the ends.
    const dK = i === 0 || i === used.length - 1 ? hi - lo : (hi - lo) / 2;
    const { K, Q } = used[i]!;
    sum += (dK / (K * K)) * Q;
  }
  const sigma2 = (2 / T) * sum - (1 / T) * (F / K0 - 1) ** 2;
  return { sigma2, T };
}

/** Raw DVOL from the near and far expiries' strike ladders (r = 0), or null when the inputs cannot support it. */
export function computeDvol(input: { nowMs: number; near: DvolExpiry; far: DvolExpiry }): DvolResult | null {
  const { nowMs, near, far } = input;
  if (!(nowMs < near.expiryMs && near.expiryMs < far.expiryMs)) return null;
  const v1 = expiryVariance(near, nowMs);
  const v2 = expiryVariance(far, nowMs);
  if (!v1 || !v2) return null;
  return interpolate30({ ...v1, expiryMs: near.expiryMs }, { ...v2, expiryMs: far.expiryMs }, nowMs);
}

/** One expiry's variance σ²_j (annualised) over T_j years. */
export interface ExpiryVariance {
  readonly sigma2: number;
  readonly T: number;
  readonly expiryMs: number;
}

/** Step 5: the 30-day constant-maturity interpolation of two expiries' variances; null unless positive. */
export function interpolate30(near: ExpiryVariance, far: ExpiryVariance, nowMs: number): DvolResult | null {
  if (!(nowMs < near.expiryMs && near.expiryMs < far.expiryMs)) return null;
  const n1 = (near.expiryMs - nowMs) / MS_PER_MINUTE;
  const n2 = (far.expiryMs - nowMs) / MS_PER_MINUTE;
  const nearWeight = (n2 - N30) / (n2 - n1);
  const farWeight = (N30 - n1) / (n2 - n1);
  const sigma2_30 = (near.T * near.sigma2 * nearWeight + far.T * far.sigma2 * farWeight) * (N365 / N30);
  if (!(sigma2_30 > 0 && Number.isFinite(sigma2_30))) return null;
  return {
    dvol: 100 * Math.sqrt(sigma2_30),
    sigma2Near: near.sigma2,
    sigma2Far: far.sigma2,
    nearExpiryMs: near.expiryMs,
    farExpiryMs: far.expiryMs,
  };
}

/** Half-width of the log-moneyness range `sviVariance` integrates over, in standard deviations at k = 0. */
const SURFACE_WIDTH_SD = 16;
/** Simpson intervals over that range (even). */
const SURFACE_INTERVALS = 400;

/**
 * The variance an expiry's fitted smile implies, without a strike ladder's truncation: the same
 * integral the VIX sum approximates, σ²T = 2∫ Q(K)/K² dK over every strike, with Q the out-of-the-
 * money Black-76 price of the slice's own volatility at K. With K = F·e^k it is independent of F:
 * σ²T = 2∫ q(k)·e^(−k) dk, q the OTM price per unit of forward (put for k < 0, call above) at total
 * variance w(k). Integrated by Simpson's rule over k ∈ ±16 standard deviations (√w(0)), where the
 * wings are negligible: a flat slice returns its own variance to about 1e-9 (dvol.test.ts).
 * Null when the slice has no positive variance at the money or the result is not positive.
 */
export function sviVariance(params: SviParams, T: number): number | null {
  const w0 = sviTotalVariance(params, 0);
  if (!(T > 0 && w0 > 0 && Number.isFinite(w0))) return null;
  const half = Math.min(SURFACE_WIDTH_SD * Math.sqrt(w0), 25);
  const h = (2 * half) / SURFACE_INTERVALS;
  let sum = 0;
  for (let i = 0; i <= SURFACE_INTERVALS; i++) {
    const k = -half + i * h;
    const weight = i === 0 || i === SURFACE_INTERVALS ? 1 : i % 2 === 1 ? 4 : 2;
    sum += weight * otmPerForward(k, sviTotalVariance(params, k)) * Math.exp(-k);
  }
  const sigma2 = (2 * ((sum * h) / 3)) / T;
  return sigma2 > 0 && Number.isFinite(sigma2) ? sigma2 : null;
}

/** Undiscounted OTM Black price per unit of forward at log-moneyness k and total variance w. */
function otmPerForward(k: number, w: number): number {
  if (!(w > 0)) return 0;
  const sd = Math.sqrt(w);
  const d1 = (-k + w / 2) / sd;
  const d2 = d1 - sd;
  const K = Math.exp(k);
  return k < 0 ? K * normCdf(-d2) - normCdf(-d1) : normCdf(d1) - K * normCdf(d2);
}

/**
 * Interquartile mean of the raw values of the last `count` periods of `periodMs` (Deribit: one raw
 * value a second, the last 120): sort, drop floor(n/4) values at each end, average the rest (a plain
 * mean while fewer than 4 values are held). The window is in time, not in values: after a gap in
 * the inputs (an index outage, downtime) the values from before it have left the window, and the
 * clock tick's length does not change what the window spans. Its state lives in fields (the core's
 * snapshots write fields, never closures).
 */
export class IqmSmoother {
  private readonly windowMs: number;
  private readonly times: number[] = [];
  private readonly values: number[] = [];

  constructor(
    private readonly count = 120,
    private readonly periodMs = 1000,
  ) {
    if (!(Number.isInteger(count) && count > 0)) throw new RangeError(`iqmSmoother: bad count ${count}`);
    if (!(Number.isInteger(periodMs) && periodMs > 0)) throw new RangeError(`iqmSmoother: bad period ${periodMs}`);
    this.windowMs = count * periodMs;
  }

  /**
   * Adds the raw value computed at `ts` (ms, non-decreasing): kept only when a period has passed
   * since the last value kept; non-finite values are ignored so one bad tick cannot poison the window.
   */
  push(value: number, ts: number): void {
    if (!Number.isFinite(value)) return;
    const last = this.times.at(-1);
    if (last !== undefined && ts < last + this.periodMs) return;
    this.times.push(ts);
    this.values.push(value);
    this.dropBefore(ts - this.windowMs + 1);
  }

  /** Interquartile mean of the values of the last `count` periods before `now`, or null when none. */
  value(now: number): number | null {
    this.dropBefore(now - this.windowMs + 1);
    if (this.values.length === 0) return null;
    const sorted = [...this.values].sort((x, y) => x - y);
    const drop = Math.floor(sorted.length / 4);
    const mid = sorted.slice(drop, sorted.length - drop);
    return mid.reduce((sum, v) => sum + v, 0) / mid.length;
  }

  private dropBefore(from: number): void {
    const times = this.times;
    let stale = 0;
    while (stale < times.length && times[stale]! < from) stale++;
    if (stale > 0) {
      times.splice(0, stale);
      this.values.splice(0, stale);
    }
  }
}

/** An `IqmSmoother` over the last `count` periods of `periodMs`. */
export function iqmSmoother(count = 120, periodMs = 1000): IqmSmoother {
  return new IqmSmoother(count, periodMs);
}
