/**
 * Market configuration of the CLOB engine in the embedded default: the BTC-USDC and ETH-USDC spot
 * pairs, the option ladders on BTC and ETH (strike spacing, precision, size limits, standard
 * margin parameters), the spot and options fee schedules, and the venue's limits. Operational
 * values a client reads from live responses (market lists, /options/fees), never constants of the
 * contract (decisions.md "Limits").
 */
import type { ClobConfig, ClobLimits, OptionFeeTier, OptionUnderlying } from '../core/clob/config.ts';
import type { MarketSpec } from '../core/markets.ts';
import { fx } from '../core/money.ts';
import type { FeeTier } from '../core/risk/fees.ts';

function spotSpec(base: string, priceDecimals: number, sizeDecimals: number, min: string, max: string) {
  const id = `${base}-USDC`;
  const spec: MarketSpec = {
    id,
    symbol: id,
    type: 'spot',
    underlying: base,
    baseSymbol: base,
    quoteSymbol: 'USDC',
    priceDecimals,
    sizeDecimals,
    minSize: fx(min),
    maxSize: fx(max),
    // While the index is fresh, limit prices must be within 10 % of it.
    priceBandBps: 1000,
    expiry: null,
    indexMarketId: id,
    marginTiers: [],
    impactNotional: 0n,
  };
  return spec;
}

export const SPOT_MARKETS: readonly MarketSpec[] = [
  spotSpec('BTC', 2, 5, '0.0001', '100'),
  spotSpec('ETH', 2, 4, '0.001', '1000'),
];

/** Spot fees on quote notional by rolling 30-day spot volume. */
export const SPOT_FEE_TIERS: readonly FeeTier[] = [
  { min30dVolumeUsd: fx('0'), makerBps: fx('2'), takerBps: fx('5') },
  { min30dVolumeUsd: fx('1000000'), makerBps: fx('1'), takerBps: fx('4') },
  { min30dVolumeUsd: fx('10000000'), makerBps: fx('0'), takerBps: fx('3') },
];

const STANDARD_MARGIN = { imBase: fx('0.15'), imFloor: fx('0.1'), mm: fx('0.075') };

export const OPTION_UNDERLYINGS: readonly OptionUnderlying[] = [
  {
    symbol: 'BTC',
    priceDecimals: 1,
    sizeDecimals: 2,
    minSize: fx('0.01'),
    maxSize: fx('1000'),
    strikeStepNear: fx('1000'),
    strikeStepFar: fx('2500'),
    nearDays: 8,
    strikesEachSide: 8,
    margin: STANDARD_MARGIN,
  },
  {
    symbol: 'ETH',
    priceDecimals: 2,
    sizeDecimals: 2,
    minSize: fx('0.01'),
    maxSize: fx('10000'),
    strikeStepNear: fx('50'),
    strikeStepFar: fx('100'),
    nearDays: 8,
    strikesEachSide: 8,
    margin: STANDARD_MARGIN,
  },
];

/** Options fees (mechanics.md 6): bps of the index per contract, capped at 12.5 % of the premium. */
const optionTier = (volume: string, maker: string, taker: string): OptionFeeTier => ({
  min30dVolumeUsd: fx(volume), makerBps: fx(maker), takerBps: fx(taker), maxFeePctOfPremium: fx('12.5'),
});

export const OPTION_FEE_TIERS: readonly OptionFeeTier[] = [
  optionTier('0', '1', '3'),
  optionTier('10000000', '0.5', '2.5'),
  optionTier('100000000', '0', '2'),
];

export const CLOB_LIMITS: ClobLimits = {
  maxOpenOrdersPerMarket: 200,
  maxOpenOrdersPerAccount: 1000,
  maxQuoteLevels: 50,
  clientIdRetentionMs: 86_400_000,
  minStrategyLegs: 2,
  maxStrategyLegs: 8,
  settlementWindowMs: 30 * 60_000,
};

export function clobConfig(): ClobConfig {
  return {
    spot: SPOT_MARKETS,
    spotFeeTiers: SPOT_FEE_TIERS,
    options: OPTION_UNDERLYINGS,
    optionFeeTiers: OPTION_FEE_TIERS,
    limits: CLOB_LIMITS,
  };
}
