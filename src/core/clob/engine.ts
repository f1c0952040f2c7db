/**
 * The CLOB engine: spot pairs and European, cash-settled USDC options on the shared order book.
 * It owns its markets and books, every account's spot/option orders, option positions and holds;
 * money moves only through the ledger (money-moves.ts): swaps between the two sides' buckets,
 * fees to the fee account, option payoffs through a per-instrument clearing account.
 *
 * A command runs like the linear engine's: checks (checks.ts; nothing changes on a rejection),
 * execution (match with this object as the book's MatchSink, then rest or cancel the remainder),
 * and `flush` at the end of the command, which emits one snapshot per order and position touched.
 * Fills are emitted as they happen. Fill money (fills.ts), quotes (quotes.ts), amends (amend.ts),
 * strategies (strategy.ts), listing (listing.ts), expiry (expiry.ts), holds (holds.ts) and the
 * read models (views.ts) live in their own modules and use the operations marked below.
 *
 * Option margin is kept per account (option-margin.ts) against a pricing epoch that moves at the
 * end of every clock tick (the option board fits its marks inside the tick, after `onTick`) and
 * when the pricing source is replaced; inside a tick nothing is kept (the epoch reads -1).
 *
 * Invariants (asserted, or checked after every command by the tests): the book is never crossed;
 * an account's hold per (bucket, asset) equals the sum of its live orders' reserves and never goes
 * negative; resting option sell lots per instrument equal the sum of the resting sells; no user
 * bucket ends a command negative; a market-maker-protection trip cancels the maker's quotes before
 * anything else in the same command, but only after the taker order (or strategy) that tripped it
 * has finished matching, so fill-or-kill and strategy fillability stay exact.
 */
import { BUY, type BookOrder, type MatchSink } from '../book/order-book.ts';
import { CommandChanges } from '../command-changes.ts';
import { isRejection, reject, type Rejection } from '../errors.ts';
import type { ExchangeEvent } from '../events.ts';
import type { Bucket, Ledger } from '../ledger/ledger.ts';
import type { PlaceResult } from '../linear/engine.ts';
import type { OrderRequest } from '../linear/order.ts';
import { mul, type Fixed } from '../money.ts';
import type { IndexBoard } from '../prices/index-board.ts';
import type { FillRecord, OrderRecord, OrderStatus, PositionRecord } from '../records.ts';
import { FeeSchedule, VolumeTracker } from '../risk/fees.ts';
import { ClobAccount } from './account.ts';
import { checkOrder, evaluateOrder, type ClobEnv, type ClobPlan } from './checks.ts';
import type { ClobConfig, ClobLimits } from './config.ts';
import { observeWindows, settleDue } from './expiry.ts';
import { settleOptionFill, settleSpotFill, type FillSides } from './fills.ts';
import { listDue } from './listing.ts';
import { ClobMarket } from './market.ts';
import { MmpRegistry } from './mmp.ts';
import type { PostingContext } from './money-moves.ts';
import { auditMargins } from './option-margin.ts';
import { OptionFeeSchedule } from './option-fees.ts';
import { ClobOrder } from './order.ts';
import type { OptionPosition } from './position.ts';
import { fillRecord, orderRecord, positionRecord, type SideFigures } from './records.ts';

export interface OptionGreeks {
  /** Per contract, to the underlying. */
  readonly delta: Fixed;
  /** Per contract, USDC per vol point. */
  readonly vega: Fixed;
}

export interface ClobDeps {
  readonly ledger: Ledger;
  readonly index: IndexBoard;
  readonly config: ClobConfig;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  nextOrderId(): number;
  nextTradeId(): number;
  now(): number;
  emit(event: ExchangeEvent): void;
  /** The option's mark from the pricing layer (fitted surface), or null when it has none. */
  optionMark(instrumentId: string, now: number): Fixed | null;
  /**
   * The last mark the pricing layer fitted for the option, however old (null when it never had
   * one): what margin values a short at while no fresh mark is served. Risk only, never displayed.
   */
  heldMark(instrumentId: string): Fixed | null;
  optionGreeks(instrumentId: string, now: number): OptionGreeks | null;
}

/** Option marks and Greeks (the option board, once wired in). */
export type OptionPricing = Pick<ClobDeps, 'optionMark' | 'heldMark' | 'optionGreeks'>;

export interface ClobCancelFilter {
  readonly marketId?: string;
  readonly underlying?: string;
  readonly quoteId?: string;
  readonly clientOrderId?: string;
}

/** What `open` needs of a plan. */
export type OpenPlan = Pick<ClobPlan, 'lots' | 'limitTicks' | 'priceTicks' | 'reserve' | 'reservePerLot'>;

interface PendingResult {
  readonly result: { order: OrderRecord; fills: FillRecord[]; position: PositionRecord | null };
  readonly order: ClobOrder;
}

const HOUR_MS = 3_600_000;

export class ClobEngine implements MatchSink, ClobEnv {
  readonly markets = new Map<string, ClobMarket>();
  readonly spotFees: FeeSchedule;
  readonly optionFees: OptionFeeSchedule;
  readonly spotMaxBps: Fixed;
  readonly spotVolumes = new VolumeTracker();
  readonly optionVolumes = new VolumeTracker();
  readonly mmp = new MmpRegistry();
  readonly limits: ClobLimits;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  /** Option markets by expiry, until they are settled. */
  readonly byExpiry = new Map<number, ClobMarket[]>();
  /** `underlying|expiry` settlement windows in which a tick saw a fresh index (expiry.ts). */
  readonly windowSeen = new Set<string>();
  /** (underlying, expiry) ladders already listed, with their expiry (listing.ts). */
  private readonly listed = new Map<string, number>();
  private readonly accounts = new Map<number, ClobAccount>();
  private taker: ClobOrder | null = null;
  /** Orders and positions the current command changed: one snapshot each at `flush`. */
  private readonly changes = new CommandChanges<ClobOrder, OptionPosition>({
    orderRecord,
    positionRecord,
    emit: (event) => this.deps.emit(event),
    afterPosition: (p) => {
      if (p.size === 0) this.accounts.get(p.accountId)?.forgetPosition(p);
    },
  });
  private readonly pendingResults: PendingResult[] = [];
  private readonly pendingMmp = new Map<string, { accountId: number; underlying: string }>();
  private lastPrune = 0;
  private pricing: OptionPricing;
  /** Moves when marks or held marks may have changed (option-margin.ts); see `pricingEpoch`. */
  private pricingVersion = 0;
  /** Between `onTick` and the end of its command: the board is fitting its marks. */
  private repricing = false;
  /**
   * Tests: value every option check by a full recomputation of the account (risk.ts optionFunds),
   * the oracle the kept figures must equal. Never set in the service.
   */
  fullRevaluation = false;
  nextStrategyId = 1;

  constructor(readonly deps: ClobDeps) {
    const c = deps.config;
    this.pricing = deps;
    this.limits = c.limits;
    this.settlementAsset = deps.settlementAsset;
    this.settlementDecimals = deps.settlementDecimals;
    this.spotFees = new FeeSchedule(c.spotFeeTiers, deps.settlementDecimals);
    this.optionFees = new OptionFeeSchedule(c.optionFeeTiers, deps.settlementDecimals);
    let maxBps = 0n;
    for (const t of c.spotFeeTiers) for (const r of [t.makerBps, t.takerBps]) if (r > maxBps) maxBps = r;
    this.spotMaxBps = maxBps;
    for (const u of c.options) {
      if (u.priceDecimals + u.sizeDecimals > deps.settlementDecimals) {
        throw new Error(`option premiums of ${u.symbol} would be finer than the settlement precision`);
      }
    }
    for (const spec of c.spot) this.markets.set(spec.id, new ClobMarket(spec, null));
  }

  // ---- environment of the checks (ClobEnv) ----

  userBalance(accountId: number, bucket: 'spot' | 'options', asset: string): Fixed {
    return this.deps.ledger.userBalance(accountId, bucket, asset);
  }

  riskSpot(underlying: string, now: number): Fixed | null {
    return this.deps.index.index(underlying, now)?.price ?? this.deps.index.lastPrice(underlying);
  }

  freshIndex(underlying: string, now: number): Fixed | null {
    return this.deps.index.index(underlying, now)?.price ?? null;
  }

  optionMark(instrumentId: string, now: number): Fixed | null {
    return this.pricing.optionMark(instrumentId, now);
  }

  heldMark(instrumentId: string): Fixed | null {
    return this.pricing.heldMark(instrumentId);
  }

  optionGreeks(instrumentId: string, now: number): OptionGreeks | null {
    return this.pricing.optionGreeks(instrumentId, now);
  }

  /**
   * Replaces the source of option marks and Greeks (the board is built after the engine). It must
   * be a deterministic function of the journaled state and the time, like everything in the core.
   */
  usePricing(pricing: OptionPricing): void {
    this.pricing = pricing;
    this.pricingVersion++;
  }

  /**
   * The pricing epoch the kept margin is valued at. The source must change its marks and held marks
   * only inside a clock tick (the board refits there) or when replaced; between epochs it may only
   * let a mark lapse to none (option-margin.ts relies on exactly this). -1 inside a tick.
   */
  pricingEpoch(): number {
    return this.repricing ? -1 : this.pricingVersion;
  }

  spotVolume(accountId: number, now: number): Fixed {
    return this.spotVolumes.volume30d(accountId, now);
  }

  optionVolume(accountId: number, now: number): Fixed {
    return this.optionVolumes.volume30d(accountId, now);
  }

  // ---- accounts ----

  account(id: number): ClobAccount {
    let a = this.accounts.get(id);
    if (a === undefined) this.accounts.set(id, (a = new ClobAccount(id)));
    return a;
  }

  findAccount(id: number): ClobAccount | undefined {
    return this.accounts.get(id);
  }

  allAccounts(): IterableIterator<ClobAccount> {
    return this.accounts.values();
  }

  // ---- commands ----

  place(accountId: number, request: OrderRequest): PlaceResult | Rejection {
    const order = this.accept(accountId, request, false);
    return isRejection(order) ? order : this.resultOf(order); // a trip it caused is applied by flush()
  }

  /** The live order's checks at `now` without executing: its figures and the first failing check. */
  preview(accountId: number, request: OrderRequest, now: number) {
    const market = this.markets.get(request.marketId);
    if (market === undefined || market.status === 'expired') {
      return { plan: null, rejection: reject('NOT_FOUND', `market ${request.marketId} not found`) };
    }
    const account = this.accounts.get(accountId) ?? new ClobAccount(accountId);
    return evaluateOrder(this, account, market, request, now, 'order');
  }

  cancel(accountId: number, orderId: number): OrderRecord | Rejection {
    const order = this.accounts.get(accountId)?.orders.get(orderId);
    if (order === undefined) return reject('NOT_FOUND', `open order ${orderId} not found`);
    return this.changes.recordOfEnded(this.cancelOrder(order, 'cancelled'));
  }

  cancelAll(accountId: number, f: ClobCancelFilter): string[] {
    const account = this.accounts.get(accountId);
    if (account === undefined) return [];
    const ids: string[] = [];
    // One market's orders in the order the account placed them, as a walk of all of them finds them.
    const market = f.marketId === undefined ? undefined : this.markets.get(f.marketId);
    if (f.marketId !== undefined && market === undefined) return ids;
    const orders = market === undefined ? [...account.orders.values()] : account.ordersOn(market);
    for (const o of orders) {
      const r = o.request;
      if (f.marketId !== undefined && r.marketId !== f.marketId) continue;
      if (f.underlying !== undefined && o.market.underlying !== f.underlying) continue;
      if (f.quoteId !== undefined && r.quoteId !== f.quoteId) continue;
      if (f.clientOrderId !== undefined && r.clientOrderId !== f.clientOrderId) continue;
      ids.push(String(this.cancelOrder(o, 'cancelled').id));
    }
    return ids;
  }

  /** Time passes: list the option ladders the calendar wants, expire and settle what is due. */
  onTick(now: number): void {
    this.repricing = true; // the board refits after this, inside the same command (flush ends it)
    listDue(this, this.listed, now);
    observeWindows(this, now);
    settleDue(this, now);
    if (now - this.lastPrune >= HOUR_MS) {
      this.lastPrune = now;
      for (const a of this.accounts.values()) a.clientIds.prune(now, this.limits.clientIdRetentionMs);
    }
  }

  /**
   * Ends a command: emits one snapshot per order and position it touched, completes the results of
   * its placements from the same snapshots, and forgets positions that closed.
   */
  flush(): void {
    // Every command applies the trips it caused before it ends (a quote ladder applies them after each
    // level too): a trip left pending would be applied inside a later command, even a rejected one.
    this.flushMmp();
    if (this.repricing) {
      this.repricing = false;
      this.pricingVersion++;
    }
    const changes = this.changes;
    if (changes.isEmpty() && this.pendingResults.length === 0) return;
    changes.snapshot();
    for (const { result, order } of this.pendingResults) {
      result.order = changes.orderRecordOf(order);
      const p = order.market.isOption ? this.accounts.get(order.owner)?.position(order.market) : undefined;
      result.position = p === undefined ? null : changes.positionRecordOf(p);
      order.takerFills = null;
    }
    this.pendingResults.length = 0;
    changes.finish();
  }

  // ---- operations used by the engine's modules ----

  /** Checks and, when they pass, opens and executes an order; returns it or the rejection. */
  accept(accountId: number, r: OrderRequest, isQuote: boolean): ClobOrder | Rejection {
    const market = this.markets.get(r.marketId);
    if (market === undefined || market.status === 'expired') {
      return reject('NOT_FOUND', `market ${r.marketId} not found`);
    }
    // A refused order leaves no trace: a new account is registered only when an order opens.
    const account = this.accounts.get(accountId) ?? new ClobAccount(accountId);
    const plan = checkOrder(this, account, market, r, this.deps.now());
    if (isRejection(plan)) return plan;
    return this.open(account, market, r, plan, isQuote);
  }

  /**
   * Opens an order whose checks passed, holds its reserve and executes it. With `replaces` (an
   * amend that re-queues) it keeps that order's id, creation time, client id and fill history.
   */
  open(
    a: ClobAccount, m: ClobMarket, r: OrderRequest, plan: OpenPlan, isQuote: boolean, replaces?: ClobOrder,
  ): ClobOrder {
    const order = new ClobOrder({
      id: replaces?.id ?? this.deps.nextOrderId(),
      accountId: a.id,
      market: m,
      request: r,
      priceTicks: plan.priceTicks,
      lots: plan.lots,
      isQuote,
      now: this.deps.now(),
      createdAt: replaces?.createdAt,
    });
    if (replaces !== undefined) {
      order.inherit(replaces);
      order.originalLots = replaces.filledLots + plan.lots;
    }
    if (!this.accounts.has(a.id)) this.accounts.set(a.id, a);
    a.track(order);
    if (r.clientOrderId !== null && replaces === undefined) a.clientIds.reserve(r.clientOrderId, order.id);
    this.hold(order, plan.reserve, plan.reservePerLot);
    this.changes.orders.add(order);
    this.execute(order, plan.limitTicks);
    return order;
  }

  /** The order's result, completed by `flush` at the end of the command. */
  resultOf(order: ClobOrder): PlaceResult {
    const result = { order: null as unknown as OrderRecord, fills: order.takerFills ?? [], position: null };
    this.pendingResults.push({ result, order });
    return result;
  }

  fillsOf(order: ClobOrder): FillRecord[] {
    return order.takerFills ?? [];
  }

  /** Ends a live order: out of the book, holds released, client id retained. */
  end(order: ClobOrder, status: OrderStatus): void {
    order.status = status;
    order.updatedAt = this.deps.now();
    this.releaseAll(order);
    const account = this.account(order.owner);
    account.untrack(order);
    const cid = order.request.clientOrderId;
    if (cid !== null) account.clientIds.release(cid, order.updatedAt);
    this.changes.orders.add(order);
  }

  cancelOrder(order: ClobOrder, status: 'cancelled' | 'expired'): ClobOrder {
    if (order.level !== null) order.market.book.cancel(order.id);
    this.end(order, status);
    return order;
  }

  /** Takes an order out of the book and the account without ending it (an amend replaces it). */
  detach(order: ClobOrder): void {
    if (order.level !== null) order.market.book.cancel(order.id);
    this.releaseAll(order);
    this.account(order.owner).untrack(order);
    this.changes.orders.delete(order);
  }

  touch(order: ClobOrder): void {
    this.changes.orders.add(order);
  }

  touchPosition(p: OptionPosition): void {
    this.changes.positions.add(p);
  }

  bucketOf(market: ClobMarket): Bucket {
    return market.isOption ? 'options' : 'spot';
  }

  /** The asset an order holds: the base for a spot sell, the settlement asset otherwise. */
  reserveAsset(order: ClobOrder): string {
    return !order.market.isOption && order.side !== BUY ? order.market.baseAsset : this.settlementAsset;
  }

  hold(order: ClobOrder, amount: Fixed, perLot: Fixed | null): void {
    order.reserve = amount;
    order.reservePerLot = perLot;
    this.account(order.owner).adjustHold(this.bucketOf(order.market), this.reserveAsset(order), amount);
  }

  /** Releases `amount` (at most what the order holds) of the order's reserve. */
  release(order: ClobOrder, amount: Fixed): void {
    const take = amount > order.reserve ? order.reserve : amount < 0n ? 0n : amount;
    if (take === 0n) return;
    order.reserve -= take;
    this.account(order.owner).adjustHold(this.bucketOf(order.market), this.reserveAsset(order), -take);
  }

  /** Counts (or with a negative `lots`, uncounts) resting option sell lots of the order. */
  adjustRestingSells(order: ClobOrder, lots: number): void {
    if (lots === 0) return;
    order.restingSellLots += lots;
    this.account(order.owner).adjustSellLots(order.market, lots);
  }

  /** Applies deferred market-maker-protection trips: cancels the tripped accounts' quote orders. */
  flushMmp(): void {
    if (this.pendingMmp.size === 0) return;
    const now = this.deps.now();
    for (const { accountId, underlying } of this.pendingMmp.values()) {
      const cancelled: string[] = [];
      for (const o of this.account(accountId).optionQuotesOn(underlying)) {
        o.rejectReason = 'MMP_TRIGGERED';
        cancelled.push(String(this.cancelOrder(o, 'cancelled').id));
      }
      const frozenUntil = this.mmp.frozenUntil(accountId, underlying);
      this.deps.emit({ type: 'mmp', accountId, underlying, frozenUntil, cancelled, at: now });
    }
    this.pendingMmp.clear();
  }

  /**
   * Every account's kept state against a fresh computation: option margin (option-margin.ts
   * auditMargins, at the engine's time) and the per-market order indexes. Empty when all agree;
   * run by the tests after every command.
   */
  audit(): string[] {
    const errors = auditMargins(this, this.accounts.values(), this.deps.now());
    for (const a of this.accounts.values()) errors.push(...a.auditIndexes());
    return errors;
  }

  postingContext(): PostingContext {
    const d = this.deps;
    return {
      ledger: d.ledger,
      settlementAsset: d.settlementAsset,
      settlementDecimals: d.settlementDecimals,
      at: d.now(),
    };
  }

  // ---- execution ----

  private execute(order: ClobOrder, limitTicks: number): void {
    const r = order.request;
    const book = order.market.book;
    this.taker = order;
    if (order.remainingLots > 0) {
      book.match(order.side, limitTicks, order.remainingLots, order.owner, r.selfTradePrevention, this);
    }
    this.taker = null;
    const selfTradeStop = book.lastStopReason === 'self_trade';
    if (order.remainingLots === 0) this.end(order, 'filled');
    else if (r.type === 'limit' && r.timeInForce === 'gtc' && !selfTradeStop) this.rest(order);
    else this.end(order, 'cancelled');
  }

  private rest(order: ClobOrder): void {
    order.market.book.rest(order);
    order.status = 'open';
    if (order.market.isOption && order.side !== BUY) this.adjustRestingSells(order, order.remainingLots);
  }

  private releaseAll(order: ClobOrder): void {
    this.release(order, order.reserve);
    this.adjustRestingSells(order, -order.restingSellLots);
  }

  // ---- fills (MatchSink) ----

  onMakerCancelled(maker: BookOrder): void {
    this.end(maker as ClobOrder, 'cancelled');
  }

  onFill(makerNode: BookOrder, lots: number, priceTicks: number): void {
    const maker = makerNode as ClobOrder;
    const taker = this.taker!;
    const market = taker.market;
    const now = this.deps.now();
    const notional = market.units.notional(priceTicks, lots);
    for (const o of [maker, taker]) {
      o.filledLots += lots;
      o.filledNotional += notional;
      o.updatedAt = now;
    }
    taker.remainingLots -= lots;
    this.changes.orders.add(maker);
    const buyer = taker.side === BUY ? taker : maker;
    const sides: FillSides = { buyer, seller: buyer === taker ? maker : taker, maker };
    const tradeId = this.deps.nextTradeId();
    const money = market.isOption
      ? settleOptionFill(this, sides, lots, priceTicks, notional, tradeId)
      : settleSpotFill(this, sides, lots, notional, tradeId);
    for (const o of [maker, taker]) {
      if (o.restingSellLots > 0) this.adjustRestingSells(o, -Math.min(lots, o.restingSellLots));
      // Limit orders release per lot; a market buy releases exactly what the fill cost it.
      const paid = o === buyer ? money.buyerPaid : 0n;
      if (o.reserve > 0n) this.release(o, o.reservePerLot !== null ? o.reservePerLot * BigInt(lots) : paid);
    }
    if (maker.remainingLots === 0) this.end(maker, 'filled');
    market.lastTrade = { price: market.units.price(priceTicks), at: now };
    const figures = (o: ClobOrder): SideFigures => ({
      accountId: o.owner,
      orderId: String(o.id),
      ...(o === buyer ? money.buyer : money.seller),
    });
    const fill = fillRecord(tradeId, market, priceTicks, lots, taker, figures(maker), figures(taker), now);
    (taker.takerFills ??= []).push(fill);
    this.deps.emit({ type: 'fill', fill });
    if (maker.isQuote && market.isOption) this.countMmp(maker, lots, now);
  }

  /** Counts a maker fill of a quote order for market-maker protection; a trip is applied later. */
  private countMmp(maker: ClobOrder, lots: number, now: number): void {
    const market = maker.market;
    const contracts = market.units.size(lots);
    const g = this.optionGreeks(market.spec.id, now);
    const signed = maker.side === BUY ? contracts : -contracts;
    const delta = g === null ? 0n : mul(signed, g.delta);
    const vega = g === null ? 0n : mul(signed, g.vega);
    if (this.mmp.record(maker.owner, market.underlying, { at: now, quantity: contracts, delta, vega })) {
      const key = `${maker.owner}|${market.underlying}`;
      this.pendingMmp.set(key, { accountId: maker.owner, underlying: market.underlying });
    }
  }
}
