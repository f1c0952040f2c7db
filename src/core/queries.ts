/**
 * The core's query surface: everything the gateway reads of live state (markets and books, index
 * and marks, the option board, accounts, balances, positions, open orders, fee tiers, order
 * previews), named for what it asks. The gateway holds a CoreQueries and never the Exchange, so a
 * local core and a gateway's replica of the core (an Exchange following the command log, issue 31)
 * serve the same reads (docs/architecture.md "Reads of live state").
 *
 * Nothing here changes state: markets come back as read-only views of the engines' live objects
 * (no copy), and the previews are dry runs. A read costs what it reads: map lookups, or one pass
 * over the caller's own orders or positions, as the routes did before.
 */
import type { Side } from './book/types.ts';
import type { BookOrder } from './book/order-book.ts';
import type { OptionFeeTier } from './clob/config.ts';
import type { ClobEngine } from './clob/engine.ts';
import type { OptionTerms, ClobMarketStatus } from './clob/market.ts';
import type { MmpView } from './clob/mmp.ts';
import { orderRecord as clobOrderRecord } from './clob/records.ts';
import { previewStrategy, type StrategyEvaluation, type StrategyRequest } from './clob/strategy.ts';
import { optionAccountView, optionInstruments, optionPositionViews, type OptionAccountView, type OptionInstrument, type OptionPositionView } from './clob/views.ts';
import type { AssetBalance, CoreConfig, Exchange, WalletBalances } from './exchange.ts';
import { systemAccount } from './ledger/ledger.ts';
import type { PerpPreview } from './linear/engine.ts';
import type { OrderRequest } from './linear/order.ts';
import { orderRecord as linearOrderRecord, positionRecord } from './linear/records.ts';
import { perpBalanceView, positionViewFor, positionViews, type PerpBalanceView, type PositionView } from './linear/views.ts';
import type { MarketSpec, MarketStatus, MarketUnits } from './markets.ts';
import type { Fixed } from './money.ts';
import type { DvolValue, OptionRow, UnderlyingBoard } from './options/board.ts';
import type { IndexValue } from './prices/index-board.ts';
import type { EngineName, MarginMode, OrderRecord, PositionRecord } from './records.ts';
import type { FeeTier } from './risk/fees.ts';

/** An order book as the gateway reads it (prices and sizes in ticks and lots; NaN: no such side). */
export interface BookView {
  bestBid(): number;
  bestAsk(): number;
  levelLots(side: Side, priceTicks: number): number;
  /** Writes up to `maxLevels` [priceTicks, lots] pairs of one side into `out`; returns how many. */
  depth(side: Side, maxLevels: number, out: number[]): number;
  forEachResting(fn: (o: BookOrder) => void): void;
}

/** A perpetual or dated future (the linear engine), read-only. */
export interface LinearMarketView {
  readonly spec: MarketSpec;
  readonly units: MarketUnits;
  readonly status: MarketStatus;
  readonly book: BookView;
  readonly openInterestLots: number;
}

/** A spot pair or option instrument (the CLOB engine), read-only. */
export interface ClobMarketView {
  readonly spec: MarketSpec;
  readonly units: MarketUnits;
  readonly status: ClobMarketStatus;
  readonly book: BookView;
  /** The option's terms; null for a spot pair. */
  readonly option: OptionTerms | null;
  readonly isOption: boolean;
  readonly underlying: string;
  readonly lastTrade: { readonly price: Fixed; readonly at: number } | null;
}

/** A CLOB order's dry run: its plan, or the rejection the order would get. */
export type ClobPreview = ReturnType<ClobEngine['preview']>;

export interface CoreQueries {
  readonly config: CoreConfig;
  /** Core time: that of the last command applied. */
  now(): number;

  // ---- accounts ----
  /** The id of the account with this address, or undefined before its first command. */
  accountId(address: string): number | undefined;
  accountAddress(accountId: number): string | undefined;

  // ---- markets and prices ----
  /** Perpetuals and dated futures by id, expired ones included. */
  linearMarkets(): ReadonlyMap<string, LinearMarketView>;
  /** Spot pairs and option instruments by id, expired ones included. */
  clobMarkets(): ReadonlyMap<string, ClobMarketView>;
  /** A linear market's mark at `now`; null without a fresh one (or for an unknown market). */
  markPrice(marketId: string, now: number): Fixed | null;
  /** A perpetual's funding rate of the running interval so far, and the next funding time; null for a future or an unknown market. */
  fundingInfo(marketId: string, now: number): { rate: Fixed | null; nextFundingAt: number } | null;
  /** The underlying's index at `now`, null while stale. */
  index(underlying: string, now: number): IndexValue | null;
  indexPrice(underlying: string, now: number): Fixed | null;
  /** Underlyings that have index inputs. */
  indexedUnderlyings(): readonly string[];
  /** Time of the newest index input of the underlying (fresh or not), or null. */
  newestIndexInputTs(underlying: string): number | null;
  /** The option board the last clock tick computed for the underlying. */
  optionBoard(underlying: string): UnderlyingBoard | undefined;
  optionMark(instrumentId: string, now: number): OptionRow | null;
  dvol(underlying: string, now: number): DvolValue | null;
  optionInstruments(underlying?: string, expiry?: number): OptionInstrument[];
  perpFeeTiers(): readonly FeeTier[];
  spotFeeTiers(): readonly FeeTier[];
  optionFeeTiers(): readonly OptionFeeTier[];

  // ---- money ----
  walletBalances(address: string): WalletBalances;
  assetBalances(address: string): AssetBalance[];
  /** The perps bucket valued at the marks (accountId -1: an account that does not exist yet). */
  perpBalance(accountId: number, now: number): PerpBalanceView;
  optionAccount(accountId: number, now: number): OptionAccountView;
  insuranceFundBalance(): Fixed;

  // ---- positions and orders ----
  perpPositions(accountId: number, now: number): PositionView[];
  perpPosition(accountId: number, marketId: string, mode: MarginMode, now: number): PositionView | null;
  hasOpenPerpPosition(accountId: number, marketId: string, mode: MarginMode): boolean;
  /** Every account's open perp positions (the streams seed their mirror from them once). */
  openPerpPositions(): PositionRecord[];
  insuranceFundPositions(): PositionRecord[];
  optionPositions(accountId: number, now: number): OptionPositionView[];
  /** The account's live orders on one engine (untriggered included), newest first. */
  openOrders(engine: EngineName, accountId: number, marketId?: string): OrderRecord[];
  /** The market of one of the account's live orders, or undefined when it has none with this id. */
  liveOrderMarket(engine: EngineName, accountId: number, orderId: number): MarketSpec | undefined;
  mmpStatus(accountId: number, now: number): MmpView[];
  /** The deadline of the account's armed dead-man switch (core time, ms), or null. */
  cancelAfterDeadline(address: string): number | null;

  // ---- dry runs (no command, no change) ----
  previewPerpOrder(address: string, request: OrderRequest, now: number): PerpPreview;
  previewClobOrder(accountId: number, request: OrderRequest, now: number): ClobPreview;
  previewStrategy(accountId: number, strategy: StrategyRequest, now: number): StrategyEvaluation;
}

/** The query surface over an Exchange: the local core's, or a gateway replica's. */
export class ExchangeQueries implements CoreQueries {
  constructor(private readonly exchange: Exchange) {}

  get config(): CoreConfig {
    return this.exchange.config;
  }

  now(): number {
    return this.exchange.now();
  }

  accountId(address: string): number | undefined {
    return this.exchange.accounts.find(address)?.id;
  }

  accountAddress(accountId: number): string | undefined {
    return this.exchange.accounts.byNumber(accountId)?.address;
  }

  linearMarkets(): ReadonlyMap<string, LinearMarketView> {
    return this.exchange.linear.markets;
  }

  clobMarkets(): ReadonlyMap<string, ClobMarketView> {
    return this.exchange.clob.markets;
  }

  markPrice(marketId: string, now: number): Fixed | null {
    const market = this.exchange.linear.markets.get(marketId);
    return market === undefined ? null : this.exchange.linear.markAt(market, now);
  }

  fundingInfo(marketId: string, now: number): { rate: Fixed | null; nextFundingAt: number } | null {
    const market = this.exchange.linear.markets.get(marketId);
    return market === undefined ? null : this.exchange.lifecycle.fundingInfo(market, now);
  }

  index(underlying: string, now: number): IndexValue | null {
    return this.exchange.index.index(underlying, now);
  }

  indexPrice(underlying: string, now: number): Fixed | null {
    return this.exchange.indexPrice(underlying, now);
  }

  indexedUnderlyings(): readonly string[] {
    return this.exchange.index.underlyingNames();
  }

  newestIndexInputTs(underlying: string): number | null {
    return this.exchange.index.newestInputTs(underlying);
  }

  optionBoard(underlying: string): UnderlyingBoard | undefined {
    return this.exchange.board.board(underlying);
  }

  optionMark(instrumentId: string, now: number): OptionRow | null {
    return this.exchange.board.mark(instrumentId, now);
  }

  dvol(underlying: string, now: number): DvolValue | null {
    return this.exchange.board.dvolOf(underlying, now);
  }

  optionInstruments(underlying?: string, expiry?: number): OptionInstrument[] {
    return optionInstruments(this.exchange.clob, underlying, expiry);
  }

  perpFeeTiers(): readonly FeeTier[] {
    return this.exchange.perpFees.tiers;
  }

  spotFeeTiers(): readonly FeeTier[] {
    return this.exchange.clob.spotFees.tiers;
  }

  optionFeeTiers(): readonly OptionFeeTier[] {
    return this.exchange.clob.optionFees.tiers;
  }

  walletBalances(address: string): WalletBalances {
    return this.exchange.walletBalances(address);
  }

  assetBalances(address: string): AssetBalance[] {
    return this.exchange.assetBalances(address);
  }

  perpBalance(accountId: number, now: number): PerpBalanceView {
    return perpBalanceView(this.exchange.linear, accountId, this.exchange.config.settlementAsset, now);
  }

  optionAccount(accountId: number, now: number): OptionAccountView {
    return optionAccountView(this.exchange.clob, accountId, now);
  }

  insuranceFundBalance(): Fixed {
    return this.exchange.ledger.balance(systemAccount('insurance', this.exchange.config.settlementAsset));
  }

  perpPositions(accountId: number, now: number): PositionView[] {
    return positionViews(this.exchange.linear, accountId, now);
  }

  perpPosition(accountId: number, marketId: string, mode: MarginMode, now: number): PositionView | null {
    return positionViewFor(this.exchange.linear, accountId, marketId, mode, now);
  }

  hasOpenPerpPosition(accountId: number, marketId: string, mode: MarginMode): boolean {
    const account = this.exchange.linear.findAccount(accountId);
    const market = this.exchange.linear.markets.get(marketId);
    if (account === undefined || market === undefined) return false;
    return (account.position(market, mode)?.size ?? 0) !== 0;
  }

  openPerpPositions(): PositionRecord[] {
    const out: PositionRecord[] = [];
    for (const account of this.exchange.accounts.all()) this.pushOpenPositions(account.id, out);
    return out;
  }

  insuranceFundPositions(): PositionRecord[] {
    // The insurance fund trades as linear account 0 (lifecycle.ts takes over liquidated positions).
    return this.pushOpenPositions(0, []);
  }

  private pushOpenPositions(accountId: number, out: PositionRecord[]): PositionRecord[] {
    for (const p of this.exchange.linear.findAccount(accountId)?.positions.values() ?? []) {
      if (p.size !== 0) out.push(positionRecord(p));
    }
    return out;
  }

  optionPositions(accountId: number, now: number): OptionPositionView[] {
    return optionPositionViews(this.exchange.clob, accountId, now);
  }

  openOrders(engine: EngineName, accountId: number, marketId?: string): OrderRecord[] {
    const inMarket = (o: { readonly market: { readonly spec: MarketSpec } }) => marketId === undefined || o.market.spec.id === marketId;
    const newestFirst = (a: { readonly id: number }, b: { readonly id: number }) => b.id - a.id;
    if (engine === 'linear') {
      const account = this.exchange.linear.findAccount(accountId);
      return account === undefined ? [] : [...account.orders.values()].filter(inMarket).sort(newestFirst).map(linearOrderRecord);
    }
    const account = this.exchange.clob.findAccount(accountId);
    return account === undefined ? [] : [...account.orders.values()].filter(inMarket).sort(newestFirst).map(clobOrderRecord);
  }

  liveOrderMarket(engine: EngineName, accountId: number, orderId: number): MarketSpec | undefined {
    const engineAccount = engine === 'linear' ? this.exchange.linear.findAccount(accountId) : this.exchange.clob.findAccount(accountId);
    return engineAccount?.orders.get(orderId)?.market.spec;
  }

  mmpStatus(accountId: number, now: number): MmpView[] {
    return this.exchange.clob.mmp.views(accountId, now);
  }

  cancelAfterDeadline(address: string): number | null {
    return this.exchange.cancelAfterDeadline(address);
  }

  previewPerpOrder(address: string, request: OrderRequest, now: number): PerpPreview {
    return this.exchange.previewPerpOrder(address, request, now);
  }

  previewClobOrder(accountId: number, request: OrderRequest, now: number): ClobPreview {
    return this.exchange.clob.preview(accountId, request, now);
  }

  previewStrategy(accountId: number, strategy: StrategyRequest, now: number): StrategyEvaluation {
    return previewStrategy(this.exchange.clob, accountId, strategy, now);
  }
}
