/**
 * Time-weighted average of the index as a step function, for futures/options settlement (the index
 * TWAP over the final 30 minutes, mechanics.md 2 and 3.7) and the blended mark inside that window.
 *
 * Model: each sample (ts, price) holds until the next sample; the last one holds until the end of the
 * window asked for. average(from, to) integrates over [max(from, firstSampleTs), to]: samples before
 * `from` count from `from`; if the first sample lies inside the window, only the covered part counts.
 * null when no sample is at or before `to`. A zero-length covered part returns the price in force.
 * Exact: Σ price·Δt / Σ Δt over integer milliseconds, one floor rounding at 18 digits.
 *
 * Samples: `add` needs non-decreasing ts; a sample at the same ts as the last replaces it (the step
 * at that instant takes the newest value). Memory: the caller prunes (`prune(windowStart)` keeps the
 * sample in force at the cut), so a window W sampled every s ms holds at most W/s + 2 samples.
 * As a hard bound, at most `maxSamples` (default 86 400, a day of 1 s samples) are kept; beyond it the
 * oldest is dropped, which changes no average whose window starts at or after the oldest kept sample.
 * Pure, no clock. Tested in twap.test.ts against hand computations.
 */
import { divRound } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

export class TwapAccumulator {
  private ts: number[] = [];
  private px: Fixed[] = [];
  /** Index of the first live sample (dropped samples are compacted lazily). */
  private head = 0;

  constructor(private readonly maxSamples = 86_400) {
    if (!Number.isSafeInteger(maxSamples) || maxSamples < 1) throw new RangeError('maxSamples must be >= 1');
  }

  /** Number of samples held. */
  get size(): number {
    return this.ts.length - this.head;
  }

  /** Timestamp of the newest sample, or null. */
  get lastTs(): number | null {
    return this.size === 0 ? null : this.ts[this.ts.length - 1]!;
  }

  add(ts: number, price: Fixed): void {
    if (!Number.isSafeInteger(ts)) throw new RangeError('ts must be an integer number of milliseconds');
    const last = this.lastTs;
    if (last !== null && ts < last) throw new RangeError(`ts ${ts} before the last sample ${last}`);
    if (last === ts) {
      this.px[this.px.length - 1] = price;
      return;
    }
    this.ts.push(ts);
    this.px.push(price);
    if (this.size > this.maxSamples) this.dropBefore(this.head + 1);
  }

  /** Drops samples before `beforeMs`, keeping the last one at or before the cut (still in force). */
  prune(beforeMs: number): void {
    const i = this.lastAtOrBefore(beforeMs);
    if (i > this.head) this.dropBefore(i);
  }

  /** Whether some sample was taken inside [fromMs, toMs] (not only carried in from before). */
  hasSampleIn(fromMs: number, toMs: number): boolean {
    const i = this.lastAtOrBefore(toMs);
    return i >= this.head && this.ts[i]! >= fromMs;
  }

  /** Time-weighted average over [fromMs, toMs]; null when no sample covers it. */
  average(fromMs: number, toMs: number): Fixed | null {
    if (toMs < fromMs) throw new RangeError('toMs before fromMs');
    if (this.size === 0 || this.ts[this.head]! > toMs) return null;
    let i = Math.max(this.lastAtOrBefore(fromMs), this.head);
    const begin = Math.max(fromMs, this.ts[i]!);
    if (begin === toMs) return this.px[this.lastAtOrBefore(toMs)]!;
    let sum = 0n;
    let start = begin;
    const n = this.ts.length;
    while (i < n && start < toMs) {
      const end = i + 1 < n ? Math.min(this.ts[i + 1]!, toMs) : toMs;
      sum += this.px[i]! * BigInt(end - start);
      start = end;
      i++;
    }
    return divRound(sum, BigInt(toMs - begin), 'floor');
  }

  /** Index of the last sample with ts <= t (head − 1 when none). Binary search. */
  private lastAtOrBefore(t: number): number {
    let lo = this.head;
    let hi = this.ts.length - 1;
    let found = this.head - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.ts[mid]! <= t) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }

  private dropBefore(i: number): void {
    this.head = i;
    if (this.head > 1024 && this.head * 2 > this.ts.length) {
      this.ts = this.ts.slice(this.head);
      this.px = this.px.slice(this.head);
      this.head = 0;
    }
  }
}
