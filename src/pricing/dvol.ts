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
 * Inputs are plain numbers (mids already converted from exact decimals); time is passed in as ms.
 * Returns null instead of a number when inputs are insufficient (fewer than 2 strikes used for an
 * expiry, no strike at or below F, expiries out of order or past) or the variance is not positive.
 * Tested in dvol.test.ts against a hand-tabulated calculation and a flat-vol black76 surface.
 */
import type { OptionType } from './black76.ts';

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

/** Raw DVOL from the near and far expiries (r = 0), or null when the inputs cannot support it. */
export function computeDvol(input: { nowMs: number; near: DvolExpiry; far: DvolExpiry }): DvolResult | null {
  const { nowMs, near, far } = input;
  if (!(nowMs < near.expiryMs && near.expiryMs < far.expiryMs)) return null;
  const v1 = expiryVariance(near, nowMs);
  const v2 = expiryVariance(far, nowMs);
  if (!v1 || !v2) return null;
  const n1 = (near.expiryMs - nowMs) / MS_PER_MINUTE;
  const n2 = (far.expiryMs - nowMs) / MS_PER_MINUTE;
  const nearWeight = (n2 - N30) / (n2 - n1);
  const farWeight = (N30 - n1) / (n2 - n1);
  const sigma2_30 = (v1.T * v1.sigma2 * nearWeight + v2.T * v2.sigma2 * farWeight) * (N365 / N30);
  if (!(sigma2_30 > 0 && Number.isFinite(sigma2_30))) return null;
  return {
    dvol: 100 * Math.sqrt(sigma2_30),
    sigma2Near: v1.sigma2,
    sigma2Far: v2.sigma2,
    nearExpiryMs: near.expiryMs,
    farExpiryMs: far.expiryMs,
  };
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
