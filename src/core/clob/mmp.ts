/**
 * Market-maker protection (research/mechanics.md 3.8, Paradex/Bybit style): per (account,
 * underlying) a sliding window of the maker fills of the account's quote orders (orders placed
 * through a quote endpoint) on that underlying's options. Over the last `windowMs` it sums the
 * contracts filled, |Σ signed contracts x delta| and |Σ signed contracts x vega| (buy +, sell −;
 * without Greeks for an instrument only the quantity counts). When any sum reaches its limit the
 * protection trips: the engine cancels the account's quote orders on the underlying in the same
 * command and new quote orders for it are refused (MMP_TRIGGERED) until `frozenMs` has passed
 * (0: until a manual reset). Aggressive (taker) fills never count, so hedges do not offset it.
 *
 * State is a pure function of the journaled fills and times. Tested in mmp.test.ts.
 */
import type { Fixed } from '../money.ts';

export interface MmpConfig {
  readonly windowMs: number;
  readonly frozenMs: number;
  /** Contracts. */
  readonly quantityLimit: Fixed;
  readonly deltaLimit: Fixed | null;
  readonly vegaLimit: Fixed | null;
}

export interface MmpView {
  readonly underlying: string;
  readonly config: MmpConfig;
  readonly frozen: boolean;
  /** When the freeze ends; null while frozen until reset, or when not frozen. */
  readonly frozenUntil: number | null;
  readonly triggeredAt: number | null;
  readonly quantity: Fixed;
  readonly delta: Fixed;
  readonly vega: Fixed;
}

interface MmpFill {
  readonly at: number;
  readonly quantity: Fixed;
  readonly delta: Fixed;
  readonly vega: Fixed;
}

interface MmpState {
  config: MmpConfig;
  fills: MmpFill[];
  triggeredAt: number | null;
}

const abs = (x: Fixed): Fixed => (x < 0n ? -x : x);

export class MmpRegistry {
  private readonly states = new Map<string, MmpState>();

  /** Sets (or with null removes) the protection of (account, underlying); a new config unfreezes. */
  set(accountId: number, underlying: string, config: MmpConfig | null): void {
    const key = `${accountId}|${underlying}`;
    if (config === null) this.states.delete(key);
    else this.states.set(key, { config, fills: [], triggeredAt: null });
  }

  /** Manual reset: unfreezes and clears the window. Returns false when no protection is set. */
  reset(accountId: number, underlying: string): boolean {
    const s = this.states.get(`${accountId}|${underlying}`);
    if (s === undefined) return false;
    s.fills = [];
    s.triggeredAt = null;
    return true;
  }

  isFrozen(accountId: number, underlying: string, now: number): boolean {
    const s = this.states.get(`${accountId}|${underlying}`);
    return s !== undefined && frozen(s, now);
  }

  /**
   * Records a maker fill of a quote order; true when it trips the protection now. Fills while
   * frozen are not counted (the quotes are being cancelled).
   */
  record(accountId: number, underlying: string, fill: MmpFill): boolean {
    const s = this.states.get(`${accountId}|${underlying}`);
    if (s === undefined || frozen(s, fill.at)) return false;
    s.fills = s.fills.filter((f) => f.at > fill.at - s.config.windowMs);
    s.fills.push(fill);
    const t = totals(s.fills);
    const c = s.config;
    const hit = t.quantity >= c.quantityLimit
      || (c.deltaLimit !== null && abs(t.delta) >= c.deltaLimit)
      || (c.vegaLimit !== null && abs(t.vega) >= c.vegaLimit);
    if (!hit) return false;
    s.triggeredAt = fill.at;
    s.fills = [];
    return true;
  }

  views(accountId: number, now: number): MmpView[] {
    const out: MmpView[] = [];
    for (const [key, s] of this.states) {
      const [id, underlying] = key.split('|') as [string, string];
      if (Number(id) !== accountId) continue;
      const live = s.fills.filter((f) => f.at > now - s.config.windowMs);
      const t = totals(live);
      const isFrozen = frozen(s, now);
      const until = isFrozen && s.config.frozenMs > 0 ? s.triggeredAt! + s.config.frozenMs : null;
      const triggeredAt = s.triggeredAt;
      out.push({ underlying, config: s.config, frozen: isFrozen, frozenUntil: until, triggeredAt, ...t });
    }
    return out.sort((a, b) => (a.underlying < b.underlying ? -1 : 1));
  }

  /** When the current freeze of (account, underlying) ends: null = until reset. */
  frozenUntil(accountId: number, underlying: string): number | null {
    const s = this.states.get(`${accountId}|${underlying}`);
    if (s === undefined || s.triggeredAt === null || s.config.frozenMs === 0) return null;
    return s.triggeredAt + s.config.frozenMs;
  }
}

function frozen(s: MmpState, now: number): boolean {
  if (s.triggeredAt === null) return false;
  return s.config.frozenMs === 0 || now < s.triggeredAt + s.config.frozenMs;
}

function totals(fills: readonly MmpFill[]): { quantity: Fixed; delta: Fixed; vega: Fixed } {
  let quantity = 0n;
  let delta = 0n;
  let vega = 0n;
  for (const f of fills) {
    quantity += f.quantity;
    delta += f.delta;
    vega += f.vega;
  }
  return { quantity, delta: abs(delta), vega: abs(vega) };
}
