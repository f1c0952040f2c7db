/**
 * Per-client rate limits (decisions.md "Limits"): fixed windows of `windowMs`; anonymous clients
 * are counted per IP (an IPv6 peer per /64, client-network.ts), authenticated ones per account (all of an account's sessions and keys share
 * one budget), and order actions on a budget of their own. Every response carries
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (whole seconds until the
 * window resets); a request over budget is answered 429 `RATE_LIMITED` before any work is done.
 *
 * Why not @fastify/rate-limit: its key is computed before authentication by default and it keeps
 * one budget per route group; here the key depends on the resolved identity and order actions
 * draw on a separate budget, which is a dozen lines on a fixed-window counter.
 *
 * Limiter state lives only in the gateway and is lost on restart; it never affects what the core
 * does with an accepted command (research/reliability.md 5.5).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientNetwork } from './client-network.ts';
import { apiError } from './errors.ts';

export interface RateLimitSettings {
  readonly windowMs: number;
  readonly anonymousPerWindow: number;
  readonly accountPerWindow: number;
  readonly orderActionsPerWindow: number;
}

export class RateLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();

  /**
   * `now`: a monotonic clock by default. Windows are relative (the reset header counts seconds), and
   * the wall clock stepping back into another window would end every client's window at once.
   */
  constructor(
    private readonly settings: RateLimitSettings,
    private readonly now: () => number = () => Math.floor(performance.now()),
  ) {}

  /** Counts one request for `key` against `limit`; returns what the headers should say. */
  take(key: string, limit: number): { allowed: boolean; remaining: number; resetSeconds: number } {
    const now = this.now();
    const start = now - (now % this.settings.windowMs);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.counts = new Map(); // every key's window ends at once: memory is bounded by one window's clients
    }
    const used = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, used);
    const resetSeconds = Math.ceil((start + this.settings.windowMs - now) / 1000);
    return { allowed: used <= limit, remaining: Math.max(0, limit - used), resetSeconds };
  }

  /**
   * Counts a request that reached no route (refused by the HTTP parser, no credential read) on its
   * peer's anonymous budget; returns what the headers should say. Nothing is refused here.
   */
  takeAnonymous(ip: string): { limit: number; remaining: number; resetSeconds: number } {
    const limit = this.settings.anonymousPerWindow;
    const { remaining, resetSeconds } = this.take(`ip:${clientNetwork(ip)}`, limit);
    return { limit, remaining, resetSeconds };
  }

  hook() {
    return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const address = req.identity?.address;
      const orderAction = req.routeOptions.config?.orderAction === true && address !== undefined;
      const key = orderAction ? `orders:${address}` : address !== undefined ? `acct:${address}` : `ip:${clientNetwork(req.ip)}`;
      const limit = orderAction
        ? this.settings.orderActionsPerWindow
        : address !== undefined
          ? this.settings.accountPerWindow
          : this.settings.anonymousPerWindow;
      const r = this.take(key, limit);
      reply.header('X-RateLimit-Limit', limit);
      reply.header('X-RateLimit-Remaining', r.remaining);
      reply.header('X-RateLimit-Reset', r.resetSeconds);
      if (!r.allowed) {
        reply.header('Retry-After', r.resetSeconds);
        throw apiError('RATE_LIMITED', `rate limit of ${limit} requests per ${this.settings.windowMs / 1000} s exceeded`);
      }
    };
  }
}
