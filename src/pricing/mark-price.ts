/**
 * Mark prices for perpetuals and dated futures (mechanics.md 1.2 "Build" and 2 "Build").
 *
 * Perpetual (Hyperliquid's median of three, without external perp venues):
 *   mark = median of the available inputs among
 *     A = index + EMA(mid − index)          (index alone while the basis EMA has no fresh sample)
 *     B = median(bestBid, bestAsk, last)    (only with both sides; last missing ⇒ the mid)
 *     C = EMA of B                          (the "local median" EMA, when it has a fresh sample)
 *   An EMA is fresh while its last sample is younger than its time constant (the caller,
 *   core/linear/market.ts, passes null otherwise: an input too old is unavailable).
 *   then clamped to index·(1 ± clampBps/10⁴), then rounded half up to the tick. Rounding after the
 *   clamp can leave the mark up to half a tick outside the band; it is always on the tick grid.
 * Dated future:
 *   F_live = index·(1 + EMA((mid − index)/index)), clamped to index·(1 ± clampBps/10⁴);
 *   inside the final window (now >= expiry − window):
 *   mark = (elapsed/window)·TWAP_so_far + (remaining/window)·F_live, computed exactly and rounded once
 *   to the tick. At or after expiry the mark is the TWAP (rounded to the tick). No TWAP sample yet ⇒ F_live.
 *
 * Rounding: `median` of an even count floors the mean of the middle two; `clampToBand` rounds the
 * band edges inward (lower edge up, upper edge down) so a clamped value never leaves the band;
 * F_live's product is rounded half up at 18 digits; the published mark is rounded half up to the tick.
 * Pure and exact (Fixed only). Tested in mark-price.test.ts.
 */
import { divRound, mul, roundToStep } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

const BPS = 10_000n;

const cmp = (a: Fixed, b: Fixed): number => (a < b ? -1 : a > b ? 1 : 0);

/** Median; an even count gives the floor of the mean of the middle two. Throws on an empty list. */
export function median(values: readonly Fixed[]): Fixed {
  if (values.length === 0) throw new RangeError('median of an empty list');
  const sorted = [...values].sort(cmp);
  const mid = sorted.length >> 1;
  const hi = sorted[mid]!;
  return sorted.length % 2 === 1 ? hi : divRound(sorted[mid - 1]! + hi, 2n, 'floor');
}

/** Clamps x to centre·(1 ± bps/10⁴), band edges rounded inward at 18 digits. */
export function clampToBand(x: Fixed, centre: Fixed, bps: number): Fixed {
  if (!Number.isInteger(bps) || bps < 0) throw new RangeError('bps must be a non-negative integer');
  const a = centre * (BPS - BigInt(bps));
  const b = centre * (BPS + BigInt(bps));
  const lo = divRound(a < b ? a : b, BPS, 'ceil');
  const hi = divRound(a < b ? b : a, BPS, 'floor');
  return x < lo ? lo : x > hi ? hi : x;
}

export interface PerpMarkInputs {
  index: Fixed;
  /** EMA of (mid − index); null before the first sample. */
  basisEma: Fixed | null;
  bestBid: Fixed | null;
  bestAsk: Fixed | null;
  last: Fixed | null;
  /** EMA of median(bid, ask, last); null before the first sample. */
  localMedianEma: Fixed | null;
}

export interface MarkOptions {
  /** Band around the index in basis points (500 = ±5 %). */
  clampBps: number;
  /** Tick size of the market (positive). */
  tick: Fixed;
}

/** median(bid, ask, last), last defaulting to the mid; null unless both sides exist. */
export function localMedian(bestBid: Fixed | null, bestAsk: Fixed | null, last: Fixed | null): Fixed | null {
  if (bestBid === null || bestAsk === null) return null;
  const mid = divRound(bestBid + bestAsk, 2n, 'floor');
  return median([bestBid, bestAsk, last ?? mid]);
}

function checkTick(tick: Fixed): void {
  if (tick <= 0n) throw new RangeError('tick must be positive');
}

/** Perpetual mark price (see the file comment). */
export function perpMark(i: PerpMarkInputs, o: MarkOptions): Fixed {
  checkTick(o.tick);
  const inputs: Fixed[] = [i.basisEma === null ? i.index : i.index + i.basisEma];
  const local = localMedian(i.bestBid, i.bestAsk, i.last);
  if (local !== null) inputs.push(local);
  if (i.localMedianEma !== null) inputs.push(i.localMedianEma);
  const clamped = clampToBand(median(inputs), i.index, o.clampBps);
  return roundToStep(clamped, o.tick, 'halfUp');
}

export interface FutureMarkInputs {
  index: Fixed;
  /** EMA of (mid − index)/index; null before the first sample. */
  basisRateEma: Fixed | null;
  nowMs: number;
  expiryMs: number;
  /** Index TWAP so far inside the final window; null before its first sample. */
  settlementTwap: Fixed | null;
  /** Length of the settlement window (positive), e.g. 30 min. */
  windowMs: number;
}

/** index·(1 + basisRateEma) clamped to the band around the index (18 digits, half up). */
export function futureLive(index: Fixed, basisRateEma: Fixed | null, clampBps: number): Fixed {
  const raw = basisRateEma === null ? index : index + mul(index, basisRateEma, 'halfUp');
  return clampToBand(raw, index, clampBps);
}

/** Dated-future mark price (see the file comment). */
export function futureMark(i: FutureMarkInputs, o: MarkOptions): Fixed {
  checkTick(o.tick);
  if (!Number.isSafeInteger(i.windowMs) || i.windowMs <= 0) throw new RangeError('windowMs must be > 0');
  const live = futureLive(i.index, i.basisRateEma, o.clampBps);
  const windowStart = i.expiryMs - i.windowMs;
  if (i.nowMs < windowStart || i.settlementTwap === null) return roundToStep(live, o.tick, 'halfUp');
  const elapsed = BigInt(Math.min(i.nowMs - windowStart, i.windowMs));
  const window = BigInt(i.windowMs);
  const blended = elapsed * i.settlementTwap + (window - elapsed) * live;
  return divRound(blended, window * o.tick, 'halfUp') * o.tick;
}
