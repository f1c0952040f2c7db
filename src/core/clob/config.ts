/**
 * Configuration shapes of the CLOB engine (spot and options). The values of the embedded default
 * live in src/config/clob-markets.ts; the core only sees these types, so the engine stays a pure
 * function of its configuration and the command history.
 *
 * Assumptions the engine relies on (asserted when the engine is built): option premiums are exact
 * at the settlement asset's precision (priceDecimals + sizeDecimals of an option <= 6), fee rates
 * are non-negative for options, and the premium cap is a fraction in (0, 1].
 */
import type { Fixed } from '../money.ts';
import type { MarketSpec } from '../markets.ts';
import type { FeeTier } from '../risk/fees.ts';

/** One tier of the options fee schedule (decisions.md "Market data"; mechanics.md 6). */
export interface OptionFeeTier {
  readonly min30dVolumeUsd: Fixed;
  /** Rate in basis points of the underlying index, per contract. */
  readonly makerBps: Fixed;
  readonly takerBps: Fixed;
  /** Cap of the fee as a percentage of the premium (12.5 = 12.5 %). */
  readonly maxFeePctOfPremium: Fixed;
}

/** Standard per-position option margin parameters (mechanics.md 3.6), as fractions of 1. */
export interface OptionMarginParams {
  readonly imBase: Fixed;
  readonly imFloor: Fixed;
  readonly mm: Fixed;
}

/** How options on one underlying are listed and traded. */
export interface OptionUnderlying {
  readonly symbol: string;
  readonly priceDecimals: number;
  readonly sizeDecimals: number;
  readonly minSize: Fixed;
  readonly maxSize: Fixed;
  /** Strike spacing for expiries closer than `nearDays` at listing time, and beyond. */
  readonly strikeStepNear: Fixed;
  readonly strikeStepFar: Fixed;
  readonly nearDays: number;
  /** Strikes listed on each side of the at-the-money strike. */
  readonly strikesEachSide: number;
  readonly margin: OptionMarginParams;
}

export interface ClobLimits {
  readonly maxOpenOrdersPerMarket: number;
  readonly maxOpenOrdersPerAccount: number;
  readonly maxQuoteLevels: number;
  readonly clientIdRetentionMs: number;
  readonly minStrategyLegs: number;
  readonly maxStrategyLegs: number;
  /** Settlement price window before expiry (index TWAP), mechanics.md 3.7. */
  readonly settlementWindowMs: number;
}

export interface ClobConfig {
  /** Spot markets (type 'spot'), listed from the first command on. */
  readonly spot: readonly MarketSpec[];
  readonly spotFeeTiers: readonly FeeTier[];
  readonly options: readonly OptionUnderlying[];
  readonly optionFeeTiers: readonly OptionFeeTier[];
  readonly limits: ClobLimits;
}
