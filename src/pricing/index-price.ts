/**
 * Index ("oracle") price from several spot sources, Deribit-style (mechanics.md 1.1 and "Recommended
 * defaults"): drop stale quotes, take the median of the fresh prices, clamp every price to
 * median·(1 ± clampBps/10 000), and publish the weighted mean of the clamped prices.
 *
 * Rules, in order:
 *   - A quote is usable when price > 0, weight (default 1) > 0, and `now − maxAgeMs <= ts <= now + 1 s`
 *     (a clock-skewed source up to one second ahead is tolerated; further ahead is dropped).
 *   - A source named twice counts once, with its newest usable quote (ties: the later entry).
 *   - Fewer than `max(1, minSources)` usable sources ⇒ null (the caller freezes the index and puts the
 *     markets in cancel-only).
 *   - Median of the prices (even count: mean of the middle two, exact).
 *   - Exactly two sources that disagree beyond the band (each outside the other's reach: the median is
 *     their mean, so a bad one would carry the index halfway) ⇒ null, as Deribit locks its index:
 *     with two sources nobody can tell which is wrong. With three or more the median is robust.
 *   - Everything is exact: with M2 = 2·median the band is [M2·(10⁴−bps), M2·(10⁴+bps)] / (2·10⁴), so
 *     clamped values and the weighted mean are carried as exact rationals and rounded once, half up
 *     (ties away from zero, money.ts), to `decimals` fractional digits.
 *
 * The index is a pure function of the latest quotes and `now`; callers recompute it lazily (e.g. at
 * order time) so staleness is always judged against the current clock. No floats anywhere.
 * Tested in index-price.test.ts (robustness to one bad source as a property, staleness, weights,
 * exact hand-computed values).
 */
import { ONE, divRound, unitOf } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

export interface SourceQuote {
  readonly source: string;
  readonly price: Fixed;
  readonly ts: number;
  readonly weight?: Fixed;
}

export interface IndexOptions {
  /** Quotes with ts < now − maxAgeMs are stale and dropped. */
  maxAgeMs: number;
  /** Minimum number of fresh sources; fewer gives null. */
  minSources: number;
  /** Clamp band around the median in basis points (50 = ±0.5 %). */
  clampBps: number;
  /** Fractional digits of the result (0..18), rounded half up. */
  decimals: number;
}

export interface IndexResult {
  price: Fixed;
  /** Newest quote timestamp used. */
  sourceTs: number;
  /** Oldest quote timestamp used. */
  oldestTs: number;
  /** Number of sources used. */
  used: number;
}

/** How far into the future a quote timestamp may be (clock skew between us and a source). */
export const MAX_FUTURE_SKEW_MS = 1_000;

const BPS = 10_000n;

function checkOptions(o: IndexOptions): void {
  if (!Number.isFinite(o.maxAgeMs) || o.maxAgeMs < 0) throw new RangeError('maxAgeMs must be >= 0');
  if (!Number.isInteger(o.clampBps) || o.clampBps < 0 || o.clampBps > 10_000) {
    throw new RangeError('clampBps must be an integer in 0..10000');
  }
  if (!Number.isInteger(o.decimals) || o.decimals < 0 || o.decimals > 18) {
    throw new RangeError('decimals must be an integer in 0..18');
  }
}

/** Usable quotes, one per source (its newest). */
function freshQuotes(quotes: readonly SourceQuote[], now: number, maxAgeMs: number): SourceQuote[] {
  const bySource = new Map<string, SourceQuote>();
  for (const q of quotes) {
    if (q.price <= 0n || (q.weight ?? ONE) <= 0n) continue;
    if (!Number.isFinite(q.ts) || q.ts < now - maxAgeMs || q.ts > now + MAX_FUTURE_SKEW_MS) continue;
    const prev = bySource.get(q.source);
    if (prev === undefined || q.ts >= prev.ts) bySource.set(q.source, q);
  }
  return [...bySource.values()];
}

/** Twice the median of the prices (exact; no rounding even for an even count). */
function twiceMedian(prices: readonly Fixed[]): Fixed {
  const sorted = [...prices].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const mid = sorted.length >> 1;
  const hi = sorted[mid]!;
  return sorted.length % 2 === 1 ? 2n * hi : sorted[mid - 1]! + hi;
}

/** Deribit-style clamped weighted-mean index; null with too few fresh sources. */
export function indexPrice(quotes: readonly SourceQuote[], now: number, o: IndexOptions): IndexResult | null {
  checkOptions(o);
  const fresh = freshQuotes(quotes, now, o.maxAgeMs);
  if (fresh.length === 0 || fresh.length < o.minSources) return null;

  // All values below are in units of 1/(2·10⁴) of a Fixed unit, so the band edges are exact.
  const m2 = twiceMedian(fresh.map((q) => q.price));
  const bps = BigInt(o.clampBps);
  const lo = m2 * (BPS - bps);
  const hi = m2 * (BPS + bps);
  if (fresh.length === 2) {
    const low = fresh[0]!.price < fresh[1]!.price ? fresh[0]!.price : fresh[1]!.price;
    if (low * 2n * BPS < lo) return null; // a split pair: the index is locked
  }
  let weighted = 0n;
  let totalWeight = 0n;
  let sourceTs = -Infinity;
  let oldestTs = Infinity;
  for (const q of fresh) {
    const scaled = q.price * 2n * BPS;
    const clamped = scaled < lo ? lo : scaled > hi ? hi : scaled;
    const w = q.weight ?? ONE;
    weighted += clamped * w;
    totalWeight += w;
    sourceTs = Math.max(sourceTs, q.ts);
    oldestTs = Math.min(oldestTs, q.ts);
  }
  const unit = unitOf(o.decimals);
  const price = divRound(weighted, totalWeight * 2n * BPS * unit, 'halfUp') * unit;
  return { price, sourceTs, oldestTs, used: fresh.length };
}
