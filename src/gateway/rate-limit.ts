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
 * The counters sit behind ports (rate-budgets.ts). In the embedded mode they live only in this
 * process and are lost on restart; in the distributed mode they live in PostgreSQL, shared by every
 * gateway (adapters/postgres/rate-budgets.ts; docs/architecture.md "Distributed mode: identity and
 * rate budgets"). Either way they never affect what the core does with an accepted command.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientNetwork } from './client-network.ts';
import { apiError } from './errors.ts';
import type { Maybe } from './auth/identity-store.ts';
import {
  LocalRateBudgets, LocalSignInCounts, monotonicMs, type BudgetUse, type RateBudgets, type SignInCounts,
} from './rate-budgets.ts';

export interface RateLimitSettings {
  readonly windowMs: number;
  readonly anonymousPerWindow: number;
  readonly accountPerWindow: number;
  readonly orderActionsPerWindow: number;
  readonly addressPerWindow: number;
}

export type Budget = 'anonymous' | 'account' | 'orders' | 'address' | 'sign-in';

export class RateLimiter {
  /**
   * `now`: the clock of the default in-memory budgets, monotonic by default (rate-budgets.ts).
   * `budgets`: where the counts live (default: this process's memory).
   */
  constructor(
    private readonly settings: RateLimitSettings,
    now: () => number = monotonicMs,
    private readonly budgets: RateBudgets = new LocalRateBudgets(settings.windowMs, now),
  ) {}

  /** Counts one request for `key` against `limit`; returns what the headers should say. */
  take(key: string, limit: number): Maybe<BudgetUse> {
    return this.budgets.take(key, limit);
  }

  /**
   * Counts a request that reached no route (refused by the HTTP parser, no credential read) on its
   * peer's anonymous budget; returns what the headers should say. Nothing is refused here.
   */
  takeAnonymous(ip: string): { limit: number; remaining: number; resetSeconds: number } {
    const limit = this.settings.anonymousPerWindow;
    const { remaining, resetSeconds } = this.budgets.takeNow(`ip:${clientNetwork(ip)}`, limit);
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
      // Both counted at once; a shared store's answers are awaited, the embedded mode's are at hand.
      const ownTake = this.budgets.take(key, limit);
      const ceilingTake = this.budgets.take(`addr:${network}`, this.settings.addressPerWindow);
      const own = ownTake instanceof Promise ? await ownTake : ownTake;
      const ceiling = ceilingTake instanceof Promise ? await ceilingTake : ceilingTake;
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
 * New sessions per client address (IPv6: /64) per hour, in fixed hourly windows (of a monotonic
 * clock in the embedded mode, of the wall clock when counted in PostgreSQL): one address cannot
 * sign in accounts by the hundred. Only sign-ins that succeed are counted (a failed one burns its
 * nonce, whose issue is limited per wallet and address already). `check` refuses early, before the
 * signature is verified; `count` counts one in a single atomic step that refuses it if the hour's
 * budget was used meanwhile (concurrent sign-ins, on this gateway or another), so the limit holds
 * exactly.
 */
export class SignInThrottle {
  constructor(
    private readonly perHour: number,
    now: () => number = monotonicMs,
    private readonly counts: SignInCounts = new LocalSignInCounts(now),
  ) {}

  /** Refuses (429, budget `sign-in`) when `ip`'s network has used its sign-ins this hour. */
  check(ip: string, reply: FastifyReply): Maybe<void> {
    const seen = this.counts.used(clientNetwork(ip));
    const decide = ({ used, resetSeconds }: { used: number; resetSeconds: number }) => {
      if (used >= this.perHour) this.refuse(resetSeconds, reply);
    };
    return seen instanceof Promise ? seen.then(decide) : decide(seen);
  }

  /** Counts one new session of `ip`'s network; refuses it (429) if the hour's budget ran out meanwhile. */
  count(ip: string, reply?: FastifyReply): Maybe<void> {
    const added = this.counts.add(clientNetwork(ip), this.perHour);
    const decide = ({ counted, resetSeconds }: { counted: boolean; resetSeconds: number }) => {
      if (!counted) this.refuse(resetSeconds, reply);
    };
    return added instanceof Promise ? added.then(decide) : decide(added);
  }

  private refuse(resetSeconds: number, reply: FastifyReply | undefined): never {
    reply?.header('Retry-After', resetSeconds);
    reply?.header('X-RateLimit-Budget', 'sign-in');
    throw apiError('RATE_LIMITED', `${BUDGET_NAMES['sign-in']} of ${this.perHour} new sessions per hour exceeded`);
  }
}
