/**
 * Index prices per underlying, inside the core so that everything they drive (marks, triggers,
 * liquidations, funding, settlement) is a deterministic function of the journal.
 *
 * Inputs arrive as commands: source observations from the feed (`prices.observe`) and operator
 * pushes (`index.publish`, the push feed and a test override). The index is computed lazily from
 * the latest quote of every source and the current time: a quote older than `maxAgeMs` is
 * unavailable, so when a feed goes quiet the index (and every mark on it) disappears by itself,
 * with no timer. A fresh pushed price overrides the sources.
 *
 * For expiry settlement the board keeps a time-weighted history of the index (TWAP over the last
 * `twapRetentionMs`), with the time the index was stale left out, and further back while a
 * settlement still needs it (`keepFrom`): an expiry settled late, after downtime, still averages
 * its own window.
 */
import type { Fixed } from '../money.ts';
import { indexPrice, MAX_FUTURE_SKEW_MS, type SourceQuote } from '../../pricing/index-price.ts';
import { TwapAccumulator } from '../../pricing/twap.ts';

export interface IndexSettings {
  readonly maxAgeMs: number;
  readonly minSources: number;
  readonly clampBps: number;
  readonly decimals: number;
  readonly twapRetentionMs: number;
}

export interface IndexValue {
  readonly price: Fixed;
  readonly sourceTs: number;
  readonly sources: number;
}

interface UnderlyingState {
  readonly sources: Map<string, SourceQuote>;
  push: SourceQuote | null;
  readonly twap: TwapAccumulator;
  /** The start of the earliest settlement window not yet settled (kept from pruning), or null. */
  keepFrom: number | null;
  /**
   * The last index computed, for the time it was computed at; dropped when an input arrives. Every
   * order reads the index (the mark is only valid while it is fresh), often several times per
   * command and for many commands in the same millisecond; computing it means a median and a
   * clamped mean over every source.
   */
  memo: { readonly now: number; readonly value: IndexValue | null } | null;
}

export const PUSH_SOURCE = 'push';

export class IndexBoard {
  private readonly underlyings = new Map<string, UnderlyingState>();

  constructor(private readonly settings: IndexSettings) {}

  observe(underlying: string, observations: readonly SourceQuote[], now: number): void {
    const state = this.state(underlying);
    this.closeStalePrice(state, now);
    for (const q of observations) {
      // A quote stamped in the future (a source's skewed clock) is never kept: kept, it would
      // outrank that source's correct later quotes as "newer" and silence the source until then.
      if (!Number.isFinite(q.ts) || q.ts > now + MAX_FUTURE_SKEW_MS) continue;
      const prev = state.sources.get(q.source);
      if (prev === undefined || q.ts >= prev.ts) state.sources.set(q.source, q);
    }
    state.memo = null;
    this.record(underlying, state, now);
  }

  publish(underlying: string, price: Fixed, ts: number, now: number): void {
    const state = this.state(underlying);
    this.closeStalePrice(state, now);
    state.push = { source: PUSH_SOURCE, price, ts };
    state.memo = null;
    this.record(underlying, state, now);
  }

  /** The index at `now` from fresh inputs only, or null. */
  index(underlying: string, now: number): IndexValue | null {
    const state = this.underlyings.get(underlying);
    if (state === undefined) return null;
    if (state.memo !== null && state.memo.now === now) return state.memo.value;
    const value = this.compute(state, now);
    state.memo = { now, value };
    return value;
  }

  private compute(state: UnderlyingState, now: number): IndexValue | null {
    const push = state.push;
    if (push !== null && push.ts >= now - this.settings.maxAgeMs) {
      return { price: push.price, sourceTs: push.ts, sources: 1 };
    }
    const r = indexPrice([...state.sources.values()], now, this.settings);
    return r === null ? null : { price: r.price, sourceTs: r.sourceTs, sources: r.used };
  }

  /**
   * Time-weighted average index over [fromMs, toMs]; null unless a fresh index was sampled inside
   * the window (a settlement never rests on a price carried over from before it).
   */
  twap(underlying: string, fromMs: number, toMs: number): Fixed | null {
    const twap = this.underlyings.get(underlying)?.twap;
    if (twap === undefined || !twap.hasSampleIn(fromMs, toMs)) return null;
    return twap.average(fromMs, toMs);
  }

  /** The newest price any input gave for `underlying`, fresh or not (to resume a simulated feed). */
  lastPrice(underlying: string): Fixed | null {
    const state = this.underlyings.get(underlying);
    if (state === undefined) return null;
    let newest: SourceQuote | null = state.push;
    for (const q of state.sources.values()) if (newest === null || q.ts > newest.ts) newest = q;
    return newest?.price ?? null;
  }

  /**
   * Keeps the history from `fromMs` on (the earliest settlement window of `underlying` that is not
   * settled yet), or, with null, only the last `twapRetentionMs`.
   */
  keepFrom(underlying: string, fromMs: number | null): void {
    this.state(underlying).keepFrom = fromMs;
  }

  /**
   * When the newest input any source (or a push) gave for `underlying` was stamped, fresh or not,
   * or null before the first: how long the feed has been quiet (the service's metrics).
   */
  newestInputTs(underlying: string): number | null {
    const state = this.underlyings.get(underlying);
    if (state === undefined) return null;
    const newest = newestTs(state);
    return newest === -Infinity ? null : newest;
  }

  underlyingNames(): string[] {
    return [...this.underlyings.keys()];
  }

  /**
   * Records the current index in the TWAP history (called on every input and clock tick): the price,
   * or a gap once it went stale, so an outage counts for nothing in a settlement average instead
   * of carrying the last price across it. The gap starts when the last input went stale, even when
   * nothing ran then (the service was down): the first command after a restart records it there.
   */
  sample(underlying: string, now: number): void {
    const state = this.state(underlying);
    this.closeStalePrice(state, now);
    this.record(underlying, state, now);
  }

  /** Adds the index at `now` to the history (inputs and ticks close a stale price first) and prunes it. */
  private record(underlying: string, state: UnderlyingState, now: number): void {
    state.twap.add(now, this.index(underlying, now)?.price ?? null);
    const cut = now - this.settings.twapRetentionMs;
    state.twap.prune(state.keepFrom !== null && state.keepFrom < cut ? state.keepFrom : cut);
  }

  /**
   * Ends the last price of the history where the inputs behind it went stale, if that was before
   * `now` and nothing sampled it then. Runs before new inputs replace them.
   */
  private closeStalePrice(state: UnderlyingState, now: number): void {
    const twap = state.twap;
    if (!twap.lastPriced) return;
    const staleAt = Math.floor(newestTs(state) + this.settings.maxAgeMs) + 1;
    if (staleAt > twap.lastTs! && staleAt < now) twap.add(staleAt, null);
  }

  private state(underlying: string): UnderlyingState {
    let s = this.underlyings.get(underlying);
    if (s === undefined) {
      s = { sources: new Map(), push: null, twap: new TwapAccumulator(), keepFrom: null, memo: null };
      this.underlyings.set(underlying, s);
    }
    return s;
  }
}

/** The newest input's time (a source quote or a push), or -Infinity when there is none. */
function newestTs(state: UnderlyingState): number {
  let newest = state.push?.ts ?? -Infinity;
  for (const q of state.sources.values()) if (q.ts > newest) newest = q.ts;
  return newest;
}
