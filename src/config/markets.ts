/**
 * Market configuration of the embedded default: BTC and ETH perpetuals, dated futures on the
 * listing calendar, their precision, size limits, price bands and margin tiers, and the perp fee
 * schedule. These are operational values a client reads from live responses, never constants of
 * the contract (decisions.md "Limits").
 */
import type { LinearLimits } from '../core/linear/checks.ts';
import type { LifecycleSettings } from '../core/linear/lifecycle.ts';
import { futureId } from '../core/listings.ts';
import type { MarginTier, MarketSpec } from '../core/markets.ts';
import { fx } from '../core/money.ts';
import type { FeeTier } from '../core/risk/fees.ts';

export interface UnderlyingConfig {
  readonly symbol: string;
  readonly priceDecimals: number;
  readonly sizeDecimals: number;
  readonly minSize: string;
  readonly maxSize: string;
  readonly impactNotional: string;
  readonly marginTiers: readonly { upTo: string | null; maxLeverage: number }[];
}

export const UNDERLYINGS: readonly UnderlyingConfig[] = [
  {
    symbol: 'BTC',
    priceDecimals: 1,
    sizeDecimals: 4,
    minSize: '0.0001',
    maxSize: '1000',
    impactNotional: '20000',
    marginTiers: [
      { upTo: '2000000', maxLeverage: 50 },
      { upTo: '10000000', maxLeverage: 20 },
      { upTo: '50000000', maxLeverage: 10 },
      { upTo: null, maxLeverage: 5 },
    ],
  },
  {
    symbol: 'ETH',
    priceDecimals: 2,
    sizeDecimals: 3,
    minSize: '0.001',
    maxSize: '10000',
    impactNotional: '20000',
    marginTiers: [
      { upTo: '1000000', maxLeverage: 25 },
      { upTo: '5000000', maxLeverage: 15 },
      { upTo: '25000000', maxLeverage: 10 },
      { upTo: null, maxLeverage: 5 },
    ],
  },
];

const tiers = (u: UnderlyingConfig): MarginTier[] =>
  u.marginTiers.map((t) => ({ upToNotional: t.upTo === null ? null : fx(t.upTo), maxLeverage: t.maxLeverage }));

function linearSpec(u: UnderlyingConfig, id: string, expiry: number | null): MarketSpec {
  return {
    id,
    symbol: id,
    type: expiry === null ? 'perp' : 'future',
    underlying: u.symbol,
    baseSymbol: u.symbol,
    quoteSymbol: 'USDC',
    priceDecimals: u.priceDecimals,
    sizeDecimals: u.sizeDecimals,
    minSize: fx(u.minSize),
    maxSize: fx(u.maxSize),
    priceBandBps: 500,
    expiry,
    indexMarketId: `${u.symbol}-USDC`,
    marginTiers: tiers(u),
    impactNotional: fx(u.impactNotional),
  };
}

export const perpSpec = (u: UnderlyingConfig): MarketSpec => linearSpec(u, `${u.symbol}-PERP`, null);
export const futureSpec = (u: UnderlyingConfig, expiry: number): MarketSpec => linearSpec(u, futureId(u.symbol, expiry), expiry);

/** Perp fees by rolling 30-day volume (research/mechanics.md 6, dYdX-like with maker rebates at the top). */
export const PERP_FEE_TIERS: readonly FeeTier[] = [
  { min30dVolumeUsd: fx('0'), makerBps: fx('1'), takerBps: fx('5') },
  { min30dVolumeUsd: fx('1000000'), makerBps: fx('0.5'), takerBps: fx('4.5') },
  { min30dVolumeUsd: fx('5000000'), makerBps: fx('0'), takerBps: fx('4') },
  { min30dVolumeUsd: fx('25000000'), makerBps: fx('-0.5'), takerBps: fx('3.5') },
  { min30dVolumeUsd: fx('100000000'), makerBps: fx('-1'), takerBps: fx('3') },
];

export const LINEAR_LIMITS: LinearLimits = {
  maxOpenOrdersPerMarket: 200,
  maxOpenOrdersPerAccount: 1000,
  maxTriggersPerMarket: 20,
  maxQuoteLevels: 50,
  clientIdRetentionMs: 86_400_000,
};

/**
 * Funding and liquidation parameters (research/mechanics.md "Recommended defaults"): premium
 * sampled every 5 s, interest 0.01 % and clamp 0.05 % per 8 h, at most 4 % per hour; liquidation in
 * 20 % chunks above 100,000 USDC notional with a 30 s cooldown, 1 % fee to the insurance fund.
 */
export function lifecycleSettings(fundingIntervalMs: number): LifecycleSettings {
  return {
    funding: {
      intervalMs: fundingIntervalMs,
      sampleMs: 5_000,
      interest8h: fx('0.0001'),
      clamp8h: fx('0.0005'),
      capPerHour: fx('0.04'),
    },
    liquidation: {
      partialAboveNotional: fx('100000'),
      partialBps: 2_000,
      cooldownMs: 30_000,
      feeBps: 100,
    },
  };
}
