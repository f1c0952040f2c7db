/**
 * Market specifications shared by both engines: identity, precision, size and price limits, and
 * for derivatives the margin tiers. Prices are whole ticks and sizes whole lots inside the books;
 * the conversions below are exact because priceDecimals + sizeDecimals <= 18.
 */
import { assert } from './assert.ts';
import { SCALE, unitOf, type Fixed } from './money.ts';

export type MarketType = 'perp' | 'future' | 'spot' | 'option';
export type MarketStatus = 'open' | 'expired';

/** One row of a tiered margin table: applies to position notional up to `upToNotional`. */
export interface MarginTier {
  readonly upToNotional: Fixed | null; // null: no upper bound
  readonly maxLeverage: number;
}

export interface MarketSpec {
  readonly id: string;
  readonly symbol: string;
  readonly type: MarketType;
  readonly underlying: string;
  readonly baseSymbol: string;
  readonly quoteSymbol: string;
  readonly priceDecimals: number;
  readonly sizeDecimals: number;
  readonly minSize: Fixed;
  readonly maxSize: Fixed;
  /** Limit orders must be within mark ± band; market orders sweep no further. */
  readonly priceBandBps: number;
  readonly expiry: number | null;
  readonly indexMarketId: string;
  readonly marginTiers: readonly MarginTier[];
  /** Notional used for impact bid/ask in the funding premium (perps). */
  readonly impactNotional: Fixed;
}

/** Derived constants for tick/lot arithmetic, computed once per market. */
export class MarketUnits {
  readonly tick: Fixed;
  readonly step: Fixed;
  /** USDC value of one tick times one lot (exact). */
  readonly notionalUnit: Fixed;
  /**
   * The highest price an order may carry, in ticks: the books keep prices and sizes as safe
   * integers, and at this ceiling even an order of the market's maximum size is worth a safe
   * integer of notional units (ticks x lots <= 2^53 - 1). A price above it is refused with
   * PRICE_OUT_OF_BAND before any book is asked (the wire allows 20 integer digits).
   */
  readonly maxPriceTicks: number;
  readonly maxPrice: Fixed;

  constructor(spec: Pick<MarketSpec, 'priceDecimals' | 'sizeDecimals'> & { readonly maxSize?: Fixed }) {
    assert(spec.priceDecimals + spec.sizeDecimals <= 18, 'price and size decimals must sum to at most 18');
    this.tick = unitOf(spec.priceDecimals);
    this.step = unitOf(spec.sizeDecimals);
    this.notionalUnit = (this.tick * this.step) / SCALE;
    const maxLots = spec.maxSize === undefined ? 1n : spec.maxSize / this.step;
    assert(maxLots >= 1n && maxLots <= BigInt(Number.MAX_SAFE_INTEGER), 'the maximum size must be 1 to 2^53 - 1 lots');
    this.maxPriceTicks = Number(BigInt(Number.MAX_SAFE_INTEGER) / maxLots);
    this.maxPrice = this.price(this.maxPriceTicks);
  }

  /**
   * A tick count derived from a price (a band edge or a bankruptcy price around an index), held to
   * one tick past the ceiling: it stays a safe integer for the books however far off an index is,
   * and past the ceiling no order rests anyway.
   */
  edgeTicks(ticks: bigint): number {
    const cap = BigInt(this.maxPriceTicks) + 1n;
    return Number(ticks > cap ? cap : ticks);
  }

  price(ticks: number): Fixed {
    return BigInt(ticks) * this.tick;
  }

  size(lots: number): Fixed {
    return BigInt(lots) * this.step;
  }

  /** Exact price of a Fixed as ticks; the caller has checked it is on the tick. */
  ticks(price: Fixed): number {
    const ticks = this.ticksOrNaN(price);
    assert(!Number.isNaN(ticks), 'price is not on the tick');
    return ticks;
  }

  lots(size: Fixed): number {
    const lots = this.lotsOrNaN(size);
    assert(!Number.isNaN(lots), 'size is not on the step');
    return lots;
  }

  /** The price in whole ticks, or NaN when it is off the tick (one check and conversion per order). */
  ticksOrNaN(price: Fixed): number {
    const ticks = price / this.tick;
    return ticks * this.tick === price ? Number(ticks) : NaN;
  }

  /** The size in whole lots, or NaN when it is off the step. */
  lotsOrNaN(size: Fixed): number {
    const lots = size / this.step;
    return lots * this.step === size ? Number(lots) : NaN;
  }

  notional(ticks: number, lots: number): Fixed {
    // ticks x lots is exact in a double while it is a safe integer (a larger true product rounds to
    // at least 2^53, which is not): one BigInt instead of two, on every order and fill.
    const units = ticks * lots;
    if (Number.isSafeInteger(units)) return BigInt(units) * this.notionalUnit;
    return BigInt(ticks) * BigInt(lots) * this.notionalUnit;
  }
}
