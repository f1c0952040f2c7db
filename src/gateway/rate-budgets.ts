/**
 * The gateway's ports to its rate-limit counters (rate-limit.ts is their consumer): request budgets
 * per key and fixed window, and sign-ins per client network and hour. The embedded mode keeps them
 * in this process's memory (the classes below, lost on restart); the distributed mode keeps them in
 * PostgreSQL (adapters/postgres/rate-budgets.ts) so that a limit holds across gateways
 * (docs/architecture.md "Distributed mode: identity and rate budgets"). The composition root chooses.
 */
import type { Maybe } from './auth/identity-store.ts';

/** What one request's count says: whether it fits, and what the X-RateLimit headers say. */
export interface BudgetUse {
  readonly allowed: boolean;
  readonly remaining: number;
  /** Whole seconds until the window resets. */
  readonly resetSeconds: number;
}

/** Request budgets: fixed windows, every request counted (refused ones too) against its key. */
export interface RateBudgets {
  /**
   * Counts `cost` requests against `key`'s budget of `limit` this window. A shared implementation
   * may wait for its store before it answers (never more than one round trip).
   */
  take(key: string, limit: number, cost?: number): Maybe<BudgetUse>;
  /** The same count, answered at once from what this process knows (for answers that refuse nothing). */
  takeNow(key: string, limit: number, cost?: number): BudgetUse;
}

/** Sign-ins per client network in hourly windows. */
export interface SignInCounts {
  /** Sign-ins counted for `network` this hour, and whole seconds until the hour ends. */
  used(network: string): Maybe<{ used: number; resetSeconds: number }>;
  /** Counts one sign-in if fewer than `limit` were counted this hour: one atomic step, wherever counted. */
  add(network: string, limit: number): Maybe<{ counted: boolean; resetSeconds: number }>;
}

/** A monotonic millisecond clock: windows are relative, and the wall clock may step. */
export const monotonicMs = (): number => Math.floor(performance.now());

/**
 * A fixed-window counter in this process's memory. `now`: a monotonic clock by default. Windows are
 * relative (the reset header counts seconds), and the wall clock stepping back into another window
 * would end every client's window at once.
 */
export class LocalRateBudgets implements RateBudgets {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(private readonly windowMs: number, private readonly now: () => number = monotonicMs) {}

  take(key: string, limit: number, cost = 1): BudgetUse {
    return this.takeNow(key, limit, cost);
  }

  takeNow(key: string, limit: number, cost = 1): BudgetUse {
    const now = this.now();
    const start = now - (now % this.windowMs);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.counts = new Map(); // every key's window ends at once: memory is bounded by one window's clients
    }
    const used = (this.counts.get(key) ?? 0) + cost;
    this.counts.set(key, used);
    const resetSeconds = Math.ceil((start + this.windowMs - now) / 1000);
    return { allowed: used <= limit, remaining: Math.max(0, limit - used), resetSeconds };
  }
}

export const HOUR_MS = 3_600_000;

/** Sign-ins per network in this process's memory, in hourly windows of `now` (monotonic by default). */
export class LocalSignInCounts implements SignInCounts {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(private readonly now: () => number = monotonicMs) {}

  used(network: string): { used: number; resetSeconds: number } {
    const resetSeconds = this.roll();
    return { used: this.counts.get(network) ?? 0, resetSeconds };
  }

  add(network: string, limit: number): { counted: boolean; resetSeconds: number } {
    const resetSeconds = this.roll();
    const used = this.counts.get(network) ?? 0;
    if (used >= limit) return { counted: false, resetSeconds };
    this.counts.set(network, used + 1);
    return { counted: true, resetSeconds };
  }

  private roll(): number {
    const now = this.now();
    const start = now - (now % HOUR_MS);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.counts = new Map();
    }
    return Math.ceil((start + HOUR_MS - now) / 1000);
  }
}
