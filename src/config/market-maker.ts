/**
 * Parameters of the reference market maker (MARKET_MAKER=on): funding targets, refresh cadence,
 * ladders for perps/futures/spot, option quote width and size, its own volatility view and the
 * inventory limits. Operational values, documented in the README; none is a contract constant.
 */
import type { LadderParams, OptionQuoteParams, VolView } from '../agents/quoting.ts';

export interface MarketMakerConfig {
  /** USDC the maker deposits (once) and spreads across its buckets. */
  readonly usdcDeposit: string;
  readonly buckets: { readonly perps: string; readonly options: string; readonly spot: string };
  /** Spot inventory granted from the treasury at start, per base asset. */
  readonly spotInventory: Readonly<Record<string, string>>;
  /** A cycle reads marks and positions and refreshes what is due. */
  readonly cycleMs: number;
  /**
   * A linear or spot ladder is priced from the mark (spot: index) it was last anchored to, re-anchored
   * when the mark moved `moveBps` from it or the anchor is `linearRefreshMs` old; a ladder is sent
   * when it differs from the last one sent, or as a heartbeat `linearRefreshMs` after it (agents/requote.ts).
   */
  readonly linearRefreshMs: number;
  readonly moveBps: number;
  /** The same for options, per expiry: the forward (and time to expiry) anchor and the heartbeat. */
  readonly optionRefreshMs: number;
  readonly optionMoveBps: number;
  /** Quote requests in flight at once (one group commit then covers many of them). */
  readonly concurrency: number;
  /** Share of the venue's order-action budget kept for pulls and first quotes (no optional re-quotes). */
  readonly orderBudgetReserve: number;
  readonly perp: Readonly<Record<string, LadderParams>>;
  readonly spot: Readonly<Record<string, LadderParams>>;
  readonly option: OptionQuoteParams;
  readonly vol: Readonly<Record<string, VolView>>;
  /**
   * Annual carry (continuous) of each underlying's dated futures: the maker quotes a future around
   * index·e^(carry·T), and prices that expiry's options off the future's mark, which follows.
   */
  readonly carry: Readonly<Record<string, number>>;
}

export const MARKET_MAKER_CONFIG: MarketMakerConfig = {
  usdcDeposit: '60000000',
  buckets: { perps: '20000000', options: '30000000', spot: '9000000' },
  spotInventory: { BTC: '50', ETH: '800' },
  cycleMs: 1000,
  // Every quote is a journal record (and a history row per order), so the cadence is what the
  // venue's disk grows by while nobody else trades (docs/performance.md "Idle growth"). The
  // simulated index moves 1-2 bp a second (median 1.4), more than a tick of nearly every market: a
  // ladder priced from the live mark would differ on nearly every cycle (measured: 82 commands/s,
  // the order budget's limit). Anchored at 5 bp (linear: a future's top level may sit up to 3 bp
  // past its mark before it moves) and 10 bp (options: a 30-day at-the-money option's value moves by
  // under half its half-spread), with a heartbeat a minute, the maker sends 8-11 quotes a second.
  linearRefreshMs: 60_000,
  moveBps: 5,
  optionRefreshMs: 60_000,
  optionMoveBps: 10,
  concurrency: 32,
  orderBudgetReserve: 0.25,
  perp: {
    BTC: { firstBps: 2, stepBps: 3, levels: 5, size: 0.25, maxPosition: 25 },
    ETH: { firstBps: 3, stepBps: 4, levels: 5, size: 4, maxPosition: 400 },
  },
  // Spot inventory is measured against `spotInventory`: at ±maxPosition base units from it the
  // maker stops buying (or selling) that pair.
  spot: {
    BTC: { firstBps: 5, stepBps: 5, levels: 3, size: 0.1, maxPosition: 40 },
    ETH: { firstBps: 5, stepBps: 5, levels: 3, size: 1.5, maxPosition: 600 },
  },
  // forwardCoverBps: an expiry is re-priced when its forward (the future's mark) moved optionMoveBps
  // (10), checked once a cycle, so it can be a little past that before the maker re-quotes, and the
  // future's mark follows its book (re-anchored at 5 bp) over its 30 s average: 20 bp on the delta
  // keeps the marks inside the quotes and the synthetic forward around the futures book
  // (docs/architecture.md "Option board, DVOL"; measured at 15 bp: 17 tradable conversions in
  // 99,303 strike pairs over seven minutes).
  option: { hVolPts: 1, minHalfSpread: 0, forwardCoverBps: 20, minTicks: 2, size: 0.5, maxPosition: 20 },
  vol: {
    BTC: { atm: 0.55, skew: -0.18, smile: 0.6, term: 0.04 },
    ETH: { atm: 0.7, skew: -0.2, smile: 0.7, term: 0.05 },
  },
  // A USD rate plus a typical crypto basis; at 5 % a year a three-month future trades ~1.25 % over
  // the index.
  carry: { BTC: 0.05, ETH: 0.05 },
};
