/**
 * Per-client rate limits (decisions.md "Limits"): fixed windows of `windowMs`; anonymous clients
 * are counted per IP (an IPv6 peer per /64, client-network.ts), authenticated ones per account (all of an account's sessions and keys share
 * one budget), and order actions on a budget of their own. Every request also counts against its
 * client address's ceiling (`addressPerWindow`, RATE_LIMIT_IP): accounts cost nothing, so without it
 * one address multiplies its budget with fresh accounts. Every response carries
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (whole seconds until the
 * window resets) of the request's own budget; a request over a budget is answered 429 `RATE_LIMITED`
 * before any work is done, its message and `X-RateLimit-Budget` naming the budget that ran out
 * (`anonymous`, `account`, `orders`, `address`), and the headers then describe that budget.
 *
 * New sessions have a throttle of their own (`SignInThrottle`): so many sign-ins per client address
 * per hour (RATE_LIMIT_SIGNIN_PER_HOUR), budget `sign-in`.
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
  readonly addressPerWindow: number;
}

export type Budget = 'anonymous' | 'account' | 'orders' | 'address' | 'sign-in';

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
      const network = clientNetwork(req.ip);
      const orderAction = req.routeOptions.config?.orderAction === true && address !== undefined;
      const budget: Budget = orderAction ? 'orders' : address !== undefined ? 'account' : 'anonymous';
      const key = orderAction ? `orders:${address}` : address !== undefined ? `acct:${address}` : `ip:${network}`;
      const limit = budget === 'orders'
        ? this.settings.orderActionsPerWindow
        : budget === 'account' ? this.settings.accountPerWindow : this.settings.anonymousPerWindow;
      const own = this.take(key, limit);
      const ceiling = this.take(`addr:${network}`, this.settings.addressPerWindow);
      const [ranOut, used, usedLimit] = !own.allowed
        ? [budget, own, limit] as const
        : !ceiling.allowed ? ['address' as const, ceiling, this.settings.addressPerWindow] as const : [null, own, limit] as const;
      reply.header('X-RateLimit-Limit', usedLimit);
      reply.header('X-RateLimit-Remaining', used.remaining);
      reply.header('X-RateLimit-Reset', used.resetSeconds);
      if (ranOut !== null) {
        reply.header('Retry-After', used.resetSeconds);
        reply.header('X-RateLimit-Budget', ranOut);
        throw apiError('RATE_LIMITED', `${BUDGET_NAMES[ranOut]} of ${usedLimit} requests per ${this.settings.windowMs / 1000} s exceeded`);
      }
    };
  }
}

const BUDGET_NAMES: Record<Budget, string> = {
  anonymous: 'the anonymous budget of this address',
  account: 'the account budget',
  orders: 'the order-action budget of the account',
  address: 'the budget of this client address (all its accounts together)',
  'sign-in': 'the sign-in budget of this client address',
};

/**
 * New sessions per client address (IPv6: /64) per hour, in fixed hourly windows on a monotonic clock:
 * one address cannot sign in accounts by the hundred. Only sign-ins that succeed are counted (a
 * failed one burns its nonce, whose issue is limited per wallet and address already).
 */
export class SignInThrottle {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(
    private readonly perHour: number,
    private readonly now: () => number = () => Math.floor(performance.now()),
  ) {}

  /** Refuses (429, budget `sign-in`) when `ip`'s network has used its sign-ins this hour. */
  check(ip: string, reply: FastifyReply): void {
    const network = clientNetwork(ip);
    this.roll();
    if ((this.counts.get(network) ?? 0) < this.perHour) return;
    const reset = Math.ceil((this.windowStart + HOUR_MS - this.now()) / 1000);
    reply.header('Retry-After', reset);
    reply.header('X-RateLimit-Budget', 'sign-in');
    throw apiError('RATE_LIMITED', `${BUDGET_NAMES['sign-in']} of ${this.perHour} new sessions per hour exceeded`);
  }

  /** Counts one new session of `ip`'s network. */
  count(ip: string): void {
    this.roll();
    const network = clientNetwork(ip);
    this.counts.set(network, (this.counts.get(network) ?? 0) + 1);
  }

  private roll(): void {
    const now = this.now();
    const start = now - (now % HOUR_MS);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.counts = new Map();
    }
  }
}

const HOUR_MS = 3_600_000;
