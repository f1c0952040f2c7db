/**
 * Rate-limit budgets shared by the gateways in PostgreSQL (the gateway's ports in
 * gateway/rate-budgets.ts; table `rate_budgets`, migrations/postgres/2000_identity.sql): a limit
 * holds across gateways (docs/architecture.md "Distributed mode: identity and rate budgets").
 *
 * Request budgets cost no round trip per request. Windows are fixed, on the wall clock (every
 * gateway must cut the same windows), one row per key and window. Each gateway counts locally and
 * sends what it counted to PostgreSQL in one batched upsert (`used = used + n RETURNING used`) every
 * `flushMs` (100 ms), learning each key's total over all gateways from the same statement. It
 * decides a request from that total plus what it counted since: `known + unseen + cost <= limit`.
 * A gateway may count at most `allowance(limit) = max(1, floor(limit * share))` of a key (5 % of
 * its limit by default) that the shared total has not yet answered for; a request beyond that waits
 * for the next upsert (one round trip, then decides again). Hence the bound: across N gateways a
 * key's window admits at most `limit + N * allowance(limit)` requests (each gateway at most one
 * allowance past the moment its upsert shows the total over the limit, and none after). It refuses
 * nothing early: a request is refused only when the total it knows is spent.
 *
 * If PostgreSQL cannot be reached the gateway decides from what it knows (each gateway then holds
 * the limit on its own) and sends the counts once it can.
 *
 * Sign-ins (`PostgresSignInCounts`) are rare and exact: one conditional upsert per sign-in.
 */
import type pg from 'pg';
import type { Maybe } from '../../gateway/auth/identity-store.ts';
import { HOUR_MS, type BudgetUse, type RateBudgets, type SignInCounts } from '../../gateway/rate-budgets.ts';

export interface SharedBudgetOptions {
  readonly windowMs: number;
  /** The part of a limit a gateway may count before the shared total answers for it (default 0.05). */
  readonly share?: number;
  /** How often counts are sent (default 100 ms). */
  readonly flushMs?: number;
  /** The wall clock (ms): gateways' clocks must agree (NTP) for their windows to be the same. */
  readonly now?: () => number;
}

interface KeyCount {
  /** The key's total over all gateways, as the last upsert answered (it includes what this gateway sent). */
  known: number;
  /** Counted here, not yet sent. */
  unsent: number;
  /** Sent in the upsert under way. */
  sending: number;
}

export class PostgresRateBudgets implements RateBudgets {
  private window = Number.NaN;
  private counts = new Map<string, KeyCount>();
  private readonly share: number;
  private readonly flushMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private flushing = false;
  /** Resolved when an upsert that begins after they were queued has answered. */
  private waiters: (() => void)[] = [];
  /** The last upsert failed: decide from what is known, wait for nobody, until one succeeds. */
  private failing = false;
  private closed = false;

  constructor(private readonly pool: pg.Pool, private readonly options: SharedBudgetOptions) {
    this.share = options.share ?? 0.05;
    this.flushMs = options.flushMs ?? 100;
    this.now = options.now ?? Date.now;
  }

  /** What a gateway may count of a key beyond the shared total it knows. */
  allowance(limit: number): number {
    return Math.max(1, Math.floor(limit * this.share));
  }

  take(key: string, limit: number, cost = 1): Maybe<BudgetUse> {
    const count = this.count(key);
    const unseen = count.unsent + count.sending;
    if (!this.failing && !this.closed && unseen > 0 && unseen + cost > this.allowance(limit)) {
      return this.nextFlush().then(() => this.take(key, limit, cost));
    }
    return this.add(count, limit, cost);
  }

  takeNow(key: string, limit: number, cost = 1): BudgetUse {
    return this.add(this.count(key), limit, cost);
  }

  /** Sends what is counted and stops. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }

  private add(count: KeyCount, limit: number, cost: number): BudgetUse {
    count.unsent += cost;
    const used = count.known + count.unsent + count.sending;
    this.schedule(this.flushMs);
    const resetSeconds = Math.ceil((this.window + this.options.windowMs - this.now()) / 1000);
    return { allowed: used <= limit, remaining: Math.max(0, limit - used), resetSeconds };
  }

  /** The key's count in the current window (a new window starts every key afresh). */
  private count(key: string): KeyCount {
    const now = this.now();
    const start = now - (now % this.options.windowMs);
    if (start !== this.window) {
      this.window = start;
      this.counts = new Map();
      this.pool.query('DELETE FROM rate_budgets WHERE expires_at < $1', [now]).catch(() => undefined);
    }
    let count = this.counts.get(key);
    if (count === undefined) this.counts.set(key, (count = { known: 0, unsent: 0, sending: 0 }));
    return count;
  }

  private nextFlush(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.schedule(0);
    });
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.flushing) return; // a running flush looks for more when it ends
    if (this.timer !== null) {
      if (delayMs > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delayMs);
    this.timer.unref();
  }

  /** Sends every key's unsent count in one upsert (keys in order: concurrent upserts lock rows alike, never deadlock). */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    const waiters = this.waiters;
    this.waiters = [];
    const window = this.window;
    const counts = this.counts;
    const batch = [...counts].filter(([, c]) => c.unsent > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [, c] of batch) {
      c.sending = c.unsent;
      c.unsent = 0;
    }
    try {
      if (batch.length > 0) {
        const { rows } = await this.pool.query<{ key: string; used: string }>(
          `INSERT INTO rate_budgets (key, window_start, expires_at, used)
           SELECT k, $1::bigint, $2::bigint, n FROM unnest($3::text[], $4::bigint[]) AS t(k, n) ORDER BY k
           ON CONFLICT (key, window_start) DO UPDATE SET used = rate_budgets.used + excluded.used
           RETURNING key, used`,
          [window, window + this.options.windowMs, batch.map(([k]) => k), batch.map(([, c]) => c.sending)],
        );
        for (const row of rows) {
          const c = counts.get(row.key);
          if (c !== undefined) c.known = Number(row.used);
        }
        for (const [, c] of batch) c.sending = 0;
      }
      this.failing = false;
    } catch {
      for (const [, c] of batch) {
        c.unsent += c.sending;
        c.sending = 0;
      }
      this.failing = true;
    } finally {
      this.flushing = false;
      for (const resolve of waiters) resolve();
      if (this.waiters.length > 0) this.schedule(0);
      else if ([...this.counts.values()].some((c) => c.unsent > 0)) this.schedule(this.flushMs);
    }
  }
}

/**
 * Sign-ins per network and hour, counted in PostgreSQL (key `signin:<network>`, hourly windows of
 * the wall clock): exact across gateways, since each count is one conditional upsert.
 */
export class PostgresSignInCounts implements SignInCounts {
  private hour = Number.NaN;

  constructor(private readonly pool: pg.Pool, private readonly now: () => number = Date.now) {}

  async used(network: string): Promise<{ used: number; resetSeconds: number }> {
    const { start, resetSeconds } = this.window();
    const { rows } = await this.pool.query<{ used: string }>(
      'SELECT used FROM rate_budgets WHERE key = $1 AND window_start = $2', [`signin:${network}`, start],
    );
    return { used: rows[0] === undefined ? 0 : Number(rows[0].used), resetSeconds };
  }

  async add(network: string, limit: number): Promise<{ counted: boolean; resetSeconds: number }> {
    const { start, resetSeconds } = this.window();
    const { rows } = await this.pool.query(
      `INSERT INTO rate_budgets (key, window_start, expires_at, used) VALUES ($1, $2, $3, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET used = rate_budgets.used + 1 WHERE rate_budgets.used < $4
       RETURNING used`,
      [`signin:${network}`, start, start + HOUR_MS, limit],
    );
    return { counted: rows.length > 0, resetSeconds };
  }

  private window(): { start: number; resetSeconds: number } {
    const now = this.now();
    const start = now - (now % HOUR_MS);
    if (start !== this.hour) {
      this.hour = start;
      this.pool.query('DELETE FROM rate_budgets WHERE expires_at < $1', [now]).catch(() => undefined);
    }
    return { start, resetSeconds: Math.ceil((start + HOUR_MS - now) / 1000) };
  }
}
