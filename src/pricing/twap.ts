/**
 * Time-weighted average of the index as a step function, for futures/options settlement (the index
 * TWAP over the final 30 minutes, mechanics.md 2 and 3.7) and the blended mark inside that window.
 *
 * Model: each sample (ts, price) holds until the next sample; the last one holds until the end of the
 * window asked for. A sample may be a gap (price null: no fresh index from then on), so a price never
 * holds across an outage: the time without an index counts for nothing. average(from, to) integrates
 * the priced steps over [max(from, firstSampleTs), to] and divides by the time they cover: samples
 * before `from` count from `from`; if the first sample lies inside the window, only the covered part
 * counts. When no priced step covers any time (a zero-length window, or a print at its last instant
 * after an outage) the price in force at `to`; null when there is none.
 * Exact: Σ price·Δt / Σ Δt over integer milliseconds, one floor rounding at 18 digits.
 *
 * Samples: `add` needs non-decreasing ts; a sample at the same ts as the last replaces it (the step
 * at that instant takes the newest value); a gap right after a gap adds nothing. Memory: the caller
 * prunes (`prune(windowStart)` keeps the sample in force at the cut), so a window W sampled every s ms
 * holds at most W/s + 2 samples. As a hard bound, at most `maxSamples` (default 86 400, a day of 1 s
 * samples) are kept; beyond it the oldest is dropped, which changes no average whose window starts at
 * or after the oldest kept sample. Pure, no clock. Tested in twap.test.ts against hand computations.
 */
import { divRound } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

export class TwapAccumulator {
  private ts: number[] = [];
  /** null: a gap (no index from this sample until the next). */
  private px: (Fixed | null)[] = [];
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

  /** Whether the newest sample is a price (false for a gap or when empty). */
  get lastPriced(): boolean {
    return this.size > 0 && this.px[this.px.length - 1] !== null;
  }

  /** A sample: the index is `price` from `ts` on, or (null) there is none. */
  add(ts: number, price: Fixed | null): void {
    if (!Number.isSafeInteger(ts)) throw new RangeError('ts must be an integer number of milliseconds');
    const last = this.lastTs;
    if (last !== null && ts < last) throw new RangeError(`ts ${ts} before the last sample ${last}`);
    if (last === ts) {
      this.px[this.px.length - 1] = price;
      return;
    }
    if (price === null && (last === null || this.px[this.px.length - 1] === null)) return; // still no index
    this.ts.push(ts);
    this.px.push(price);
    if (this.size > this.maxSamples) this.dropBefore(this.head + 1);
  }

  /** Drops samples before `beforeMs`, keeping the last one at or before the cut (still in force). */
  prune(beforeMs: number): void {
    const i = this.lastAtOrBefore(beforeMs);
    if (i > this.head) this.dropBefore(i);
  }

  /** Whether a priced sample was taken inside [fromMs, toMs] (not only carried in from before). */
  hasSampleIn(fromMs: number, toMs: number): boolean {
    for (let i = this.lastAtOrBefore(toMs); i >= this.head && this.ts[i]! >= fromMs; i--) {
      if (this.px[i] !== null) return true;
    }
    return false;
  }

  /** Time-weighted average of the priced steps over [fromMs, toMs]; null when none covers it. */
  average(fromMs: number, toMs: number): Fixed | null {
    if (toMs < fromMs) throw new RangeError('toMs before fromMs');
    if (this.size === 0 || this.ts[this.head]! > toMs) return null;
    let i = Math.max(this.lastAtOrBefore(fromMs), this.head);
    let sum = 0n;
    let covered = 0;
    let start = Math.max(fromMs, this.ts[i]!);
    const n = this.ts.length;
    while (i < n && start < toMs) {
      const end = i + 1 < n ? Math.min(this.ts[i + 1]!, toMs) : toMs;
      const price = this.px[i]!;
      if (price !== null) {
        sum += price * BigInt(end - start);
        covered += end - start;
      }
      start = end;
      i++;
    }
    // Nothing priced covers any time (a zero-length window, a print at its last instant): the price in force then.
    if (covered === 0) return this.px[this.lastAtOrBefore(toMs)]!;
    return divRound(sum, BigInt(covered), 'floor');
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
