/**
 * A CLOB market: a spot pair (base/USDC) or one European, cash-settled option instrument. It holds
 * the specification and tick/lot units, the shared order book, the last trade, and for options
 * the contract terms, the positions open on it (so expiry settles them without a scan of all
 * accounts) and its margin per short contract at the last pricing key (option-margin.ts).
 *
 * Lifecycle of an option: `open` (trading) -> `settling` (expiry passed: orders expired, waiting
 * for the settlement TWAP) -> `expired` (settled, positions closed, removed from the listing).
 * Spot markets are always `open`.
 */
import { OrderBook } from '../book/order-book.ts';
import { MarketUnits, type MarketSpec } from '../markets.ts';
import type { Fixed } from '../money.ts';
import type { OptionUnderlying } from './config.ts';
import { ContractMargin } from './option-margin.ts';
import type { OptionPosition } from './position.ts';

export type OptionType = 'call' | 'put';
export type ClobMarketStatus = 'open' | 'settling' | 'expired';

export interface OptionTerms {
  readonly underlying: string;
  readonly expiry: number;
  readonly strike: Fixed;
  readonly type: OptionType;
  readonly params: OptionUnderlying;
}

export class ClobMarket {
  readonly units: MarketUnits;
  readonly book = new OrderBook();
  status: ClobMarketStatus = 'open';
  lastTrade: { price: Fixed; at: number } | null = null;
  /** Open option positions on this instrument, by account id (empty for spot). */
  readonly positions = new Map<number, OptionPosition>();
  /** Margin per short contract, kept for the pricing key it was valued at (options only). */
  readonly valuation = new ContractMargin();

  constructor(
    readonly spec: MarketSpec,
    /** Contract terms of an option; null for a spot pair. */
    readonly option: OptionTerms | null,
  ) {
    this.units = new MarketUnits(spec);
  }

  get isOption(): boolean {
    return this.option !== null;
  }

  /** The asset bought and sold on a spot pair (the underlying of an option). */
  get baseAsset(): string {
    return this.spec.baseSymbol;
  }

  get underlying(): string {
    return this.spec.underlying;
  }

  bestBid(): Fixed | null {
    const t = this.book.bestBid();
    return Number.isNaN(t) ? null : this.units.price(t);
  }

  bestAsk(): Fixed | null {
    const t = this.book.bestAsk();
    return Number.isNaN(t) ? null : this.units.price(t);
  }
}
