/**
 * The linear engine: perpetuals and dated futures. It owns the markets, their books, and every
 * account's perp orders and positions; money moves only through the ledger (realised PnL against
 * the market's clearing account, fees to the fee account, shortfalls from the insurance fund),
 * posted by its cash side (cash.ts) after each execution.
 *
 * A command runs in three steps: checks (checks.ts; nothing changes on rejection), execution
 * (match against the book with this object as the book's MatchSink, then rest or cancel the
 * remainder), and `flush` at the end of the command, which emits one snapshot event per order and
 * position the command touched. Fills are emitted as they happen.
 *
 * Invariants asserted or kept: the book is never crossed (the book asserts), resting-order totals
 * equal the sum of resting non-reduce-only orders, a user's perps balance never ends negative
 * (shortfalls are covered by the insurance fund in the same command), client ids are unique.
 */
import { fail } from '../assert.ts';
import { BUY, SELL, type BookOrder, type MakerCancel, type MatchSink } from '../book/order-book.ts';
import { isRejection, reject, type Rejection } from '../errors.ts';
import { CommandChanges } from '../command-changes.ts';
import type { ExchangeEvent } from '../events.ts';
import { systemAccount, userAccount, type Ledger } from '../ledger/ledger.ts';
import type { MarketSpec } from '../markets.ts';
import { roundTo, type Fixed } from '../money.ts';
import type { IndexBoard } from '../prices/index-board.ts';
import type { FillRecord, FillSide, MarginMode, OrderRecord, OrderStatus, PositionRecord } from '../records.ts';
import type { FeeRole, FeeSchedule, VolumeTracker } from '../risk/fees.ts';
import { crossedLadder } from '../quote-ladder.ts';
import { exitsDeclared, LinearAccount, type OrderTotals } from './account.ts';
import { shrinkInPlace } from './amend.ts';
import { LinearCash } from './cash.ts';
import { fillsWithin, MakerChecks, reducedOnly } from './maker-checks.ts';
import { checkOrder, evaluateOrder, type CheckContext, type LinearLimits, type OrderPlan } from './checks.ts';
import { FUND_ACCOUNT } from './lifecycle.ts';
import {
  accountRisk, leveragedOpening, leverageSurcharge, marginAudit, openLossAt, reduceOnlyOpenLoss, reduceOnlySums, reduceOnlySumsText,
  reduces, riskMark,
} from './margin.ts';
import { LinearMarket, MARK_SETTINGS } from './market.ts';
import { LinearOrder, PLAIN_ORDER, type OrderRequest } from './order.ts';
import { averageFillTicks, estimateAfterFill, type PositionEstimate } from './position-estimate.ts';
import type { Position } from './position.ts';
import { directFillRecord, fillRecord, orderRecord, positionRecord } from './records.ts';

export interface LinearDeps {
  readonly ledger: Ledger;
  readonly index: IndexBoard;
  readonly fees: FeeSchedule;
  readonly volumes: VolumeTracker;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  readonly limits: LinearLimits;
  nextOrderId(): number;
  nextTradeId(): number;
  now(): number;
  emit(event: ExchangeEvent): void;
}

export interface PlaceResult {
  readonly order: OrderRecord;
  readonly fills: readonly FillRecord[];
  readonly position: PositionRecord | null;
}

/**
 * A preview: the plan once the order's figures are known, the first failing check, the fee context,
 * and the order's position as it would stand had the order filled in full at its expected average
 * price (position-estimate.ts; null without a plan or without a fresh mark).
 */
export interface PerpPreview {
  readonly plan: OrderPlan | null;
  readonly rejection: Rejection | null;
  readonly volume30d: Fixed;
  readonly feeRole: FeeRole;
  readonly feeBps: Fixed;
  readonly estimate: PositionEstimate | null;
}

export interface QuoteRequest {
  readonly marketId: string;
  readonly quoteId: string | null;
  /** Cancel the caller's resting quote orders on the market first (bulk `cancelAll`). */
  readonly cancelAll: boolean;
  /** Cancel the caller's resting orders with this quoteId first (single two-sided quote). */
  readonly replaceQuoteId: string | null;
  readonly levels: readonly OrderRequest[];
}

export interface QuoteResult {
  readonly quoteId: string | null;
  readonly cancelled: string[];
  readonly orders: PlaceResult[];
  readonly rejected: { index: number; error: string; message: string }[];
}

export interface CancelFilter {
  readonly marketId?: string;
  readonly quoteId?: string;
  readonly clientOrderId?: string;
  readonly marginMode?: MarginMode;
}

const CLIENT_ID_PRUNE_MS = 3_600_000;
/** The fills of an order that took none (most orders rest): one shared, frozen array. */
const NO_FILLS: readonly FillRecord[] = Object.freeze([]);

export class LinearEngine implements MatchSink {
  readonly markets = new Map<string, LinearMarket>();
  private readonly accounts = new Map<number, LinearAccount>();
  private taker: LinearOrder | null = null;
  /**
   * The taker's fee rate, fixed when it starts to match: its fills add to its 30-day volume as they
   * happen, and an order crossing a tier boundary part-way would otherwise pay two rates, not the
   * one its preview (and its check's fee reserve) quoted.
   */
  private takerBps: Fixed = 0n;
  /** Lots the last movePosition opened or added (its fill's lots less those it closed). */
  private openedLots = 0;
  /** The leverage of the order whose fill movePosition applies (undefined: the tiers', and outside a book fill). */
  private fillLeverage: Fixed | undefined = undefined;
  /** Orders and positions the current command changed: one snapshot each at `flush`. */
  private readonly changes = new CommandChanges<LinearOrder, Position>({
    orderRecord,
    positionRecord,
    emit: (event) => this.deps.emit(event),
    afterPosition: (p) => {
      if (p.size === 0) this.accounts.get(p.accountId)?.forgetPosition(p);
    },
  });
  /** Realised PnL, fees and shortfalls of each execution, posted to the ledger (cash.ts). */
  readonly cash: LinearCash;
  /** Whether a resting order may still fill without its owner going bankrupt (maker-checks.ts). */
  readonly makers: MakerChecks;
  /** Results of this command's placements, completed from the snapshots `flush` takes. */
  private readonly pendingResults: { result: { order: OrderRecord; fills: readonly FillRecord[]; position: PositionRecord | null }; order: LinearOrder }[] = [];

  private lastClientIdPrune = 0;

  constructor(readonly deps: LinearDeps) {
    this.cash = new LinearCash({
      ledger: deps.ledger,
      settlementAsset: deps.settlementAsset,
      settlementDecimals: deps.settlementDecimals,
      now: () => deps.now(),
      account: (id) => this.account(id),
      markAt: (market, now) => this.markAt(market, now),
      positionChanged: (p) => this.changes.positions.add(p),
    });
    this.makers = new MakerChecks({
      fees: deps.fees,
      volumes: deps.volumes,
      settlementDecimals: deps.settlementDecimals,
      now: () => deps.now(),
      findAccount: (id) => this.accounts.get(id),
      cashOf: (id) => this.balance(id) + this.cash.pendingOf(id),
      markAt: (market, now) => this.markAt(market, now),
    });
  }

  listMarket(spec: MarketSpec): LinearMarket {
    const market = new LinearMarket(spec);
    this.markets.set(spec.id, market);
    return market;
  }

  account(id: number): LinearAccount {
    let a = this.accounts.get(id);
    if (a === undefined) this.accounts.set(id, (a = this.unregistered(id)));
    return a;
  }

  findAccount(id: number): LinearAccount | undefined {
    return this.accounts.get(id);
  }

  /**
   * Forgets client order ids whose retention has passed, at most once an hour (bounded memory: an
   * ended order's id is otherwise kept until the same id is used again). Nothing a client sees
   * changes: an expired id is already free.
   */
  pruneClientIds(now: number): void {
    if (now - this.lastClientIdPrune < CLIENT_ID_PRUNE_MS) return;
    this.lastClientIdPrune = now;
    for (const a of this.accounts.values()) a.clientIds.prune(now, this.deps.limits.clientIdRetentionMs);
  }

  /** The mark at `now`: the computed mark while the index is fresh, else null. */
  markAt(market: LinearMarket, now: number): Fixed | null {
    return this.deps.index.index(market.spec.underlying, now) === null ? null : market.mark;
  }

  // ---- commands ----

  place(accountId: number, request: OrderRequest, isQuote = false): PlaceResult | Rejection {
    const order = this.accept(accountId, request, isQuote);
    if (isRejection(order)) return order;
    return this.resultOf(order);
  }

  /**
   * The live order's checks without executing: its figures and the first failing check, if any.
   * The account's 30-day volume and its fee rate for the order's likely role are known before any
   * check, so a preview rejected early (no plan yet) still reports them.
   */
  preview(accountId: number, request: OrderRequest): PerpPreview {
    const market = this.markets.get(request.marketId);
    const account = this.accounts.get(accountId) ?? this.detachedAccount(accountId);
    const evaluated = market === undefined
      ? { plan: null, rejection: reject('NOT_FOUND', `market ${request.marketId} not found`) }
      : evaluateOrder(market, request, this.checkContext(account, market, false));
    const { plan } = evaluated;
    const volume30d = this.deps.volumes.volume30d(accountId, this.deps.now());
    const feeRole = plan?.feeRole ?? (request.postOnly ? 'maker' : 'taker');
    const estimate = market === undefined || plan === null ? null : this.estimate(account, market, request, plan);
    return { ...evaluated, volume30d, feeRole, feeBps: plan?.feeBps ?? this.deps.fees.rateFor(volume30d, feeRole), estimate };
  }

  /**
   * The order's position once the order has filled in full at its expected average price (a
   * reduce-only order no further than the position), with the plan's fee; null without a fresh mark.
   */
  private estimate(account: LinearAccount, market: LinearMarket, r: OrderRequest, plan: OrderPlan): PositionEstimate | null {
    const now = this.deps.now();
    const mark = this.markAt(market, now);
    if (mark === null) return null;
    const priceTicks = averageFillTicks(market, plan.fillLots, plan.notional);
    let lots = priceTicks === null ? 0 : plan.fillLots;
    let fee = plan.estFee;
    if (r.reduceOnly) {
      const size = account.position(market, r.marginMode)?.size ?? 0;
      const room = reduces(size, r.side) ? Math.abs(size) : 0;
      if (lots > room) {
        lots = room;
        fee = this.deps.fees.fee(market.units.notional(priceTicks!, lots), plan.feeBps);
      }
    }
    const fill = { side: r.side, lots, priceTicks: priceTicks ?? 0, fee: lots === 0 ? 0n : fee, leverage: r.leverage };
    return estimateAfterFill(account, this.balance(account.id), market, r.marginMode, fill, mark, this.deps.settlementDecimals, now);
  }

  /** A blank account that is not registered (reads about an account the engine has not seen). */
  private detachedAccount(accountId: number): LinearAccount {
    return new LinearAccount(accountId, userAccount(accountId, 'perps', this.deps.settlementAsset));
  }

  /**
   * A new account, not yet registered: an order is checked against it and it is registered only
   * when the order is accepted, so a refused order leaves no trace (the live core and a replay of
   * the journal, which holds no refused command, then hold the same accounts in the same order).
   */
  private unregistered(id: number): LinearAccount {
    // The insurance fund (account 0) trades with the insurance ledger account as its cash.
    const cash = id === FUND_ACCOUNT ? systemAccount('insurance', this.deps.settlementAsset) : userAccount(id, 'perps', this.deps.settlementAsset);
    return new LinearAccount(id, cash);
  }

  quote(accountId: number, q: QuoteRequest): QuoteResult | Rejection {
    const market = this.markets.get(q.marketId);
    if (market === undefined) return reject('NOT_FOUND', `market ${q.marketId} not found`);
    if (q.levels.length > this.deps.limits.maxQuoteLevels) {
      return reject('VALIDATION_ERROR', `at most ${this.deps.limits.maxQuoteLevels} quote levels per request`);
    }
    const crossed = crossedLadder(q.levels);
    if (crossed !== null) return crossed;
    const cancelled: string[] = [];
    const account = this.account(accountId);
    if (q.cancelAll || q.replaceQuoteId !== null) {
      const replaced: OrderRequest[] = [];
      for (const o of account.ordersOn(market)) {
        if (o.trigger !== null) continue;
        const hit = q.cancelAll ? o.isQuote : o.request.quoteId === q.replaceQuoteId;
        if (!hit) continue;
        cancelled.push(String(this.cancelOrder(o, 'cancelled').id));
        replaced.push(o.request);
      }
      account.clientIds.handOver(replaced, q.levels);
    }
    const accepted: LinearOrder[] = [];
    const rejected: QuoteResult['rejected'] = [];
    q.levels.forEach((level, index) => {
      const order = this.accept(accountId, level, true);
      if (isRejection(order)) rejected.push({ index, error: order.code, message: order.message });
      else accepted.push(order);
    });
    return { quoteId: q.quoteId, cancelled, orders: accepted.map((o) => this.resultOf(o)), rejected };
  }

  /**
   * Amends a resting order (`POST /perps/orders/{id}/modify`, the CLOB's rules, clob/amend.ts):
   * `price` is the new limit and `quantity` the new total size (filled part included, so it must
   * exceed what has filled). An unchanged price and size is a no-op; the same price with a smaller
   * size shrinks the order in place, keeping its time priority (nothing is added to the book, so
   * no check is asked). Any other change re-queues it: the order leaves the book and its sums, the
   * changed order runs every check a new order runs (the open-order limits and its client id
   * excepted: it holds both already), and, if they pass, it is placed again with the same id, a
   * new time priority and its fill history, matching like a new order when its price crosses. If
   * a check refuses, the order goes back to its old place in the queue and nothing has changed.
   * Conditional orders (untriggered stops, take-profit / stop-loss exits) are refused.
   */
  amend(accountId: number, orderId: number, price: Fixed | null, quantity: Fixed | null): PlaceResult | Rejection {
    const account = this.accounts.get(accountId);
    const order = account?.orders.get(orderId);
    if (account === undefined || order === undefined) return reject('NOT_FOUND', `open order ${orderId} not found`);
    if (price === null && quantity === null) return reject('VALIDATION_ERROR', 'give a price, a quantity or both');
    if (order.level === null) {
      return reject('VALIDATION_ERROR', `order ${orderId} is conditional (it waits for its trigger): cancel it and place a new one`);
    }
    const market = order.market;
    const request: OrderRequest = { ...order.request, price: price ?? order.request.price, quantity: quantity ?? order.quantity() };
    const kept = shrinkInPlace(market, order, request, this.deps.now());
    if (isRejection(kept)) return kept;
    if (kept !== null) {
      const lots = kept - order.filledLots;
      if (lots < order.remainingLots) this.reduceInPlace(order, lots);
      if (kept !== order.originalLots) {
        order.originalLots = kept;
        order.request = request;
        this.changes.orders.add(order);
      }
      return this.resultOf(order);
    }
    return this.requeue(account, order, request);
  }

  /** Lowers a resting order's size keeping its place in the queue. */
  private reduceInPlace(order: LinearOrder, lots: number): void {
    this.unreserve(order, order.remainingLots - lots);
    order.market.book.reduce(order.id, lots);
    this.countResting(order);
    order.updatedAt = this.deps.now();
    this.changes.orders.add(order);
  }

  /** An amend that re-queues: out of the book, the checks of a new order, back in place if refused. */
  private requeue(account: LinearAccount, order: LinearOrder, request: OrderRequest): PlaceResult | Rejection {
    const market = order.market;
    const { seq, next } = order;
    market.book.cancel(order.id);
    this.countResting(order);
    this.unreserve(order, order.reservedLots);
    const c = this.checkContext(account, market, false);
    this.scratchContext.replacing = order;
    // A fired stop keeps its stopPrice in its request; the amended order is checked as the limit order it now is.
    const plan = checkOrder(market, request.stopPrice === null ? request : { ...request, stopPrice: null }, c);
    this.scratchContext.replacing = null;
    if (isRejection(plan)) {
      market.book.reinstate(order, seq, next);
      if (order.request.reduceOnly) this.countResting(order);
      else this.reserve(order);
      return plan;
    }
    order.request = request;
    order.priceTicks = plan.priceTicks;
    order.remainingLots = plan.lots;
    order.originalLots = order.filledLots + plan.lots;
    order.updatedAt = this.deps.now();
    this.changes.orders.add(order);
    this.execute(order, plan.limitTicks);
    return this.resultOf(order);
  }

  cancel(accountId: number, orderId: number): OrderRecord | Rejection {
    const order = this.accounts.get(accountId)?.orders.get(orderId);
    if (order === undefined) return reject('NOT_FOUND', `open order ${orderId} not found`);
    return this.changes.recordOfEnded(this.cancelOrder(order, 'cancelled'));
  }

  cancelAll(accountId: number, f: CancelFilter): string[] {
    const account = this.accounts.get(accountId);
    if (account === undefined) return [];
    const ids: string[] = [];
    // One market's orders in the order the account placed them, as a walk of all of them finds them.
    const market = f.marketId === undefined ? undefined : this.markets.get(f.marketId);
    if (f.marketId !== undefined && market === undefined) return ids;
    for (const o of market === undefined ? [...account.orders.values()] : account.ordersOn(market)) {
      const r = o.request;
      if (f.marketId !== undefined && r.marketId !== f.marketId) continue;
      if (f.quoteId !== undefined && r.quoteId !== f.quoteId) continue;
      if (f.clientOrderId !== undefined && r.clientOrderId !== f.clientOrderId) continue;
      if (f.marginMode !== undefined && r.marginMode !== f.marginMode) continue;
      ids.push(String(this.cancelOrder(o, 'cancelled').id));
    }
    return ids;
  }

  /** Re-marks every market of `underlying` (all when null) and fires conditional orders. */
  updateMarks(underlying: string | null, now: number): void {
    for (const market of this.markets.values()) {
      if (market.status !== 'open' || (underlying !== null && market.spec.underlying !== underlying)) continue;
      const index = this.deps.index.index(market.spec.underlying, now);
      const windowStart = market.spec.expiry === null ? null : market.spec.expiry - MARK_SETTINGS.settlementWindowMs;
      const twap = windowStart === null || now < windowStart ? null : this.deps.index.twap(market.spec.underlying, windowStart, now);
      market.updateMark(index?.price ?? null, now, twap);
      this.deps.emit({ type: 'mark', marketId: market.spec.id, markPrice: market.mark, indexPrice: index?.price ?? null, at: now });
      if (market.mark !== null) this.fireTriggers(market, market.mark);
    }
  }

  /**
   * Ends a command: emits one snapshot per order and position it touched, completes the results
   * of its placements from the same snapshots, and forgets positions that closed.
   */
  flush(): void {
    const changes = this.changes;
    if (changes.isEmpty() && this.pendingResults.length === 0) return;
    changes.snapshot();
    for (const { result, order } of this.pendingResults) {
      result.order = changes.orderRecordOf(order);
      const p = this.accounts.get(order.owner)?.position(order.market, order.request.marginMode);
      result.position = p === undefined ? null : changes.positionRecordOf(p);
      order.takerFills = null;
    }
    this.pendingResults.length = 0;
    changes.finish();
  }

  // ---- placement and execution ----

  private accept(accountId: number, r: OrderRequest, isQuote: boolean): LinearOrder | Rejection {
    const market = this.markets.get(r.marketId);
    if (market === undefined) return reject('NOT_FOUND', `market ${r.marketId} not found`);
    const account = this.accounts.get(accountId) ?? this.unregistered(accountId);
    const plan = this.checkTaker(market, r, account, false);
    if (isRejection(plan)) return plan;
    if (!this.accounts.has(accountId)) this.accounts.set(accountId, account);
    const now = this.deps.now();
    const order = new LinearOrder({
      id: this.deps.nextOrderId(),
      accountId,
      market,
      request: r,
      priceTicks: plan.priceTicks,
      lots: plan.lots,
      trigger: plan.trigger,
      isQuote,
      now,
    });
    account.track(order);
    if (r.clientOrderId !== null) account.clientIds.reserve(r.clientOrderId, order.id);
    this.changes.orders.add(order);
    if (order.trigger !== null) market.untriggered.add(order);
    else this.execute(order, plan.limitTicks);
    return order;
  }

  /** One reusable context object: the checks run once per order and must not allocate per call. */
  private readonly scratchContext = {
    account: null as unknown as LinearAccount,
    balance: 0n as Fixed,
    mark: null as Fixed | null,
    now: 0,
    limits: null as unknown as LinearLimits,
    volume30d: 0n as Fixed,
    triggered: false,
    replacing: null as LinearOrder | null,
    engine: this as LinearEngine,
    feeRate(role: 'maker' | 'taker'): Fixed {
      return this.engine.deps.fees.rateFor(this.volume30d, role);
    },
    fee(notional: Fixed, bps: Fixed): Fixed {
      return this.engine.deps.fees.fee(notional, bps);
    },
    accountOf(id: number): LinearAccount | undefined {
      return this.engine.findAccount(id);
    },
    admits: (maker: BookOrder): boolean => this.makers.admits(maker as LinearOrder),
    realisable: (market: LinearMarket): boolean => this.makers.realisable(market),
    admitsAfter: (maker: LinearOrder, spent: Fixed, played: Position | undefined, heldLots: number): boolean =>
      this.makers.admits(maker, spent, played, heldLots),
    playIsolatedFill: (scratch: Position, maker: LinearOrder, lots: number): void => this.makers.playIsolatedFill(scratch, maker, lots),
    fillCost: (maker: LinearOrder, lots: number, heldLots: number): Fixed => this.makers.predictedCost(maker, lots, heldLots),
  };

  /** The pre-trade checks of an order (checks.ts). */
  private checkTaker(market: LinearMarket, r: OrderRequest, account: LinearAccount, triggered: boolean): OrderPlan | Rejection {
    return checkOrder(market, r, this.checkContext(account, market, triggered));
  }

  private checkContext(account: LinearAccount, market: LinearMarket, triggered: boolean): CheckContext {
    const c = this.scratchContext;
    const now = this.deps.now();
    c.account = account;
    c.balance = this.balance(account.id);
    c.mark = this.markAt(market, now);
    c.now = now;
    c.limits = this.deps.limits;
    c.volume30d = this.deps.volumes.volume30d(account.id, now);
    c.triggered = triggered;
    c.replacing = null;
    return c;
  }

  private execute(order: LinearOrder, limitTicks: number): void {
    const r = order.request;
    const market = order.market;
    if (r.reduceOnly) this.clipReduceOnly(order);
    this.taker = order;
    this.takerBps = this.makers.feeRate(order.owner, 'taker');
    if (order.remainingLots > 0) market.book.match(order.side, limitTicks, order.remainingLots, order.owner, r.selfTradePrevention, this);
    this.taker = null;
    this.cash.post('realized_pnl');
    const selfTradeStop = market.book.lastStopReason === 'self_trade';
    if (order.remainingLots === 0) this.end(order, 'filled');
    else if (r.type === 'limit' && r.timeInForce === 'gtc' && !selfTradeStop) this.rest(order);
    else this.end(order, 'cancelled');
  }

  private rest(order: LinearOrder): void {
    if (order.request.reduceOnly) {
      this.clipReduceOnly(order);
      if (order.remainingLots === 0) return this.end(order, 'cancelled');
    }
    order.market.book.rest(order);
    order.status = 'open';
    if (!order.request.reduceOnly) this.reserve(order);
    else this.countResting(order);
  }

  /**
   * Keeps a reduce-only order's share of its position's restingReduceOnlyLots equal to what it has
   * resting in the book (0 once it left), and of its account's kept open loss (reduce-only-losses.ts).
   * Called wherever a resting order changes: rest, fill, trim, end.
   */
  private countResting(order: LinearOrder): void {
    if (!order.request.reduceOnly) return;
    const lots = order.level === null ? 0 : order.remainingLots;
    if (lots === order.countedReduceOnlyLots) return;
    const account = this.accounts.get(order.owner);
    account?.reduceOnlyLosses.changed(order);
    const position = order.countedIn ?? account?.position(order.market, order.request.marginMode);
    if (position === undefined) fail(`reduce-only order ${order.id} rests without a position`);
    position.restingReduceOnlyLots += lots - order.countedReduceOnlyLots;
    if (!(position.restingReduceOnlyLots >= 0)) fail(`position ${position.id}: resting reduce-only lots below zero`);
    order.countedReduceOnlyLots = lots;
    order.countedIn = lots === 0 ? null : position;
  }

  /** A reduce-only order never exceeds the position it reduces. */
  private clipReduceOnly(order: LinearOrder): void {
    const pos = this.accounts.get(order.owner)?.position(order.market, order.request.marginMode);
    const size = pos?.size ?? 0;
    const cap = reduces(size, order.side) ? Math.abs(size) : 0;
    if (order.remainingLots > cap) order.remainingLots = cap;
  }

  private reserve(order: LinearOrder): void {
    const t = this.account(order.owner).totalsFor(order.market, order.request.marginMode);
    const lots = order.remainingLots;
    const notional = order.market.units.notional(order.priceTicks, lots);
    if (order.side === BUY) {
      t.buyLots += lots;
      t.buyNotional += notional;
    } else {
      t.sellLots += lots;
      t.sellNotional += notional;
    }
    t.invalidate();
    order.reservedLots = lots;
    if (order.request.leverage !== undefined) this.setSurcharge(order, t, notional);
  }

  /** Keeps an order's share of its totals' leverage surcharge equal to what its reserved lots ask. */
  private setSurcharge(order: LinearOrder, t: OrderTotals, notional: Fixed): void {
    const surcharge = leverageSurcharge(order.market, notional, order.request.leverage);
    t.leverageSurcharge += surcharge - order.reservedSurcharge;
    order.reservedSurcharge = surcharge;
  }

  private unreserve(order: LinearOrder, lots: number): void {
    if (order.reservedLots === 0) return;
    const take = Math.min(lots, order.reservedLots);
    const t = this.account(order.owner).totalsFor(order.market, order.request.marginMode);
    const notional = order.market.units.notional(order.priceTicks, take);
    if (order.side === BUY) {
      t.buyLots -= take;
      t.buyNotional -= notional;
    } else {
      t.sellLots -= take;
      t.sellNotional -= notional;
    }
    t.invalidate();
    order.reservedLots -= take;
    if (order.request.leverage !== undefined) this.setSurcharge(order, t, order.market.units.notional(order.priceTicks, order.reservedLots));
  }

  /** Ends a live order: out of the book and the trigger set, totals released, id retained. */
  private end(order: LinearOrder, status: OrderStatus): void {
    order.status = status;
    order.updatedAt = this.deps.now();
    this.unreserve(order, order.reservedLots);
    order.market.untriggered.delete(order);
    const account = this.account(order.owner);
    account.untrack(order);
    this.countResting(order);
    if (order.request.clientOrderId !== null) account.clientIds.release(order.request.clientOrderId, order.updatedAt);
    this.changes.orders.add(order);
    if (order.parent !== null) this.exitEnded(order);
  }

  private cancelOrder(order: LinearOrder, status: 'cancelled' | 'expired'): LinearOrder {
    if (order.level !== null) order.market.book.cancel(order.id);
    this.end(order, status);
    return order;
  }

  // ---- fills (MatchSink) ----

  /** The book asks before each maker fill whether the maker may fill (maker-checks.ts). */
  admits(makerNode: BookOrder): boolean {
    return this.makers.admits(makerNode as LinearOrder);
  }

  onMakerCancelled(makerNode: BookOrder, why: MakerCancel): void {
    const maker = makerNode as LinearOrder;
    if (why === 'refused') maker.rejectReason = 'INSUFFICIENT_MARGIN';
    this.end(maker, 'cancelled');
  }

  onFill(makerNode: BookOrder, lots: number, priceTicks: number): void {
    const maker = makerNode as LinearOrder;
    const taker = this.taker!;
    const market = taker.market;
    const now = this.deps.now();
    const notional = market.units.notional(priceTicks, lots);
    this.countResting(maker); // the book took `lots` off it
    this.unreserve(maker, lots);
    maker.filledLots += lots;
    maker.filledNotional += notional;
    maker.updatedAt = now;
    taker.filledLots += lots;
    taker.filledNotional += notional;
    taker.remainingLots -= lots;
    taker.updatedAt = now;
    this.changes.orders.add(maker);
    const makerSide = this.settleSide(maker, 'maker', lots, priceTicks, notional);
    const makerOpened = this.openedLots;
    const takerSide = this.settleSide(taker, 'taker', lots, priceTicks, notional);
    const takerOpened = this.openedLots;
    if (maker.remainingLots === 0) this.end(maker, 'filled');
    market.tradedAt(priceTicks, now);
    const fill = fillRecord(this.deps.nextTradeId(), market, priceTicks, lots, taker, makerSide, takerSide, now);
    (taker.takerFills ??= []).push(fill);
    this.deps.emit({ type: 'fill', fill });
    this.attachExits(maker, makerOpened);
    this.attachExits(taker, takerOpened);
  }

  /** Position, realised PnL, fee and volume of one side of a fill: that side of the fill record. */
  private settleSide(order: LinearOrder, role: 'maker' | 'taker', lots: number, priceTicks: number, notional: Fixed): FillSide {
    const now = this.deps.now();
    const mode = order.request.marginMode;
    const signed = order.side === BUY ? lots : -lots;
    const bps = role === 'taker' ? this.takerBps : this.makers.feeRate(order.owner, role);
    const fee = this.deps.fees.fee(notional, bps);
    if (fee !== 0n) this.cash.fee(order.owner, fee);
    // An isolated position pays the fees of fills that reduce it out of its own margin, before the
    // fill releases any of it (a full close releases it all), never out of the cross pool (which
    // has no position to liquidate if it went negative); a margin the fee exhausts is the fund's. A
    // fill that opens, adds to or flips it pays from the cross pool as far as the cross cash holds
    // it (cash.ts settleOpeningCharges), so it starts with its whole initial margin.
    let openingFee = 0n;
    if (mode === 'isolated' && fee !== 0n) {
      const isolated = this.account(order.owner).position(order.market, mode);
      if (isolated !== undefined && reducedOnly(isolated.size, signed)) this.chargeIsolated(isolated, fee);
      else if (fee > 0n) openingFee = fee;
    }
    this.fillLeverage = order.request.leverage;
    const realized = this.movePosition(order.owner, order.market, mode, signed, priceTicks);
    this.fillLeverage = undefined;
    if (openingFee > 0n) this.cash.openingCharge(this.account(order.owner).position(order.market, mode)!, openingFee);
    this.deps.volumes.record(order.owner, notional, now);
    return {
      accountId: order.owner,
      orderId: String(order.id),
      side: order.side === BUY ? 'buy' : 'sell',
      liquidity: role,
      fee,
      feeBps: bps,
      realizedPnl: realized,
      marginMode: mode,
    };
  }

  private chargeIsolated(p: Position, amount: Fixed): void {
    p.isolatedMargin -= amount;
    if (p.isolatedMargin < 0n) this.cash.coverIsolated(p);
  }

  /**
   * Applies a signed trade of `signedLots` at `priceTicks` to an account's position: cost basis,
   * realised PnL (queued for the ledger), isolated margin, open interest, and the upkeep of its
   * reduce-only orders. Book fills, backstop takeovers, deleveraging and expiry all go through here.
   * Returns the realised PnL as it will be posted (rounded to the settlement asset's unit).
   */
  movePosition(accountId: number, market: LinearMarket, mode: MarginMode, signedLots: number, priceTicks: number): Fixed {
    const now = this.deps.now();
    const account = this.account(accountId);
    const position = account.openPosition(market, mode, now);
    const before = position.size;
    market.positionMoves++;
    if (before === 0) position.fundingIndex = market.fundingIndex; // funding accrues from now on
    const effect = position.applyFill(signedLots, priceTicks, now);
    this.openedLots = Math.abs(signedLots) - effect.closedLots;
    account.totals.get(market.modeKeys[mode])?.positionChanged(); // order margin depends on the position
    market.openInterestLots += Math.max(0, position.size) - Math.max(0, before);
    const realized = effect.realized === 0n ? 0n : roundTo(effect.realized, this.deps.settlementDecimals, 'floor');
    position.realizedPnl += realized;
    if (realized !== 0n) this.cash.realized(accountId, market, realized);
    if (mode === 'isolated') {
      this.adjustIsolated(position, before, effect.closedLots, realized, Math.abs(signedLots) - effect.closedLots, priceTicks);
    }
    this.cash.positionMoved(position);
    this.changes.positions.add(position);
    if (before === 0 && position.size !== 0) position.status = 'open'; // reopened within one command
    if (position.size === 0) this.positionClosed(account, position);
    else if (before !== 0 && Math.sign(position.size) !== Math.sign(before)) this.cancelReduceOnly(account, position);
    else if (Math.abs(position.size) < Math.abs(before)) this.trimReduceOnly(account, position);
    return realized;
  }

  /**
   * Isolated margin follows the position: realised PnL lands in it, the closed fraction is
   * released, and opened lots bring what they add to the position's initial margin (at the fill
   * price, margin.ts isolatedOpening) from the cross pool,
   * plus their open loss at the mark when they fill worse than it (a buy above, a sell below: the
   * margin gate reserved both), so a position opens with its initial margin of equity.
   */
  private adjustIsolated(p: Position, before: number, closedLots: number, realized: Fixed, openedLots: number, priceTicks: number): void {
    if (closedLots > 0) {
      p.releaseClosedShare(before, closedLots, realized);
      // A loss beyond the whole allocation is the insurance fund's, never the cross pool's.
      if (p.isolatedMargin < 0n) this.cash.coverIsolated(p);
    }
    if (openedLots > 0) {
      const price = p.market.units.price(priceTicks);
      const heldLots = closedLots > 0 ? 0 : Math.abs(before); // a flip opens from nothing
      const initial = leveragedOpening(p.market, heldLots, openedLots, price, this.fillLeverage) + openLossAtMark(p, openedLots, price);
      p.isolatedMargin += initial;
      this.cash.openingCharge(p, initial);
    }
  }

  private positionClosed(account: LinearAccount, position: Position): void {
    position.status = 'closed';
    position.isolatedMargin = 0n;
    this.cancelReduceOnly(account, position);
  }

  /** The position closed or flipped: its reduce-only orders (resting, TP/SL) would now add to it. */
  private cancelReduceOnly(account: LinearAccount, position: Position): void {
    // A market maker's position crosses zero often: walk its orders only when one can be reduce-only
    // here (resting ones are counted on the position, waiting ones among the market's triggers).
    if (position.restingReduceOnlyLots === 0 && account.liveCounts(position.market).triggers === 0) return;
    for (const o of account.ordersOn(position.market)) {
      if (o === this.taker || o.remainingLots === 0) continue; // finishing on its own
      if (o.request.marginMode === position.marginMode && o.request.reduceOnly) {
        this.cancelOrder(o, 'cancelled');
      }
    }
  }

  /**
   * Resting reduce-only orders may not add up to more than the position they reduce. Kept in the
   * order they were placed: the newest give way first. Only walks the account's orders when they
   * no longer fit (restingReduceOnlyLots), so a taker lifting a position's own reduce-only orders
   * (each fill shrinks both alike) never walks them.
   */
  private trimReduceOnly(account: LinearAccount, position: Position): void {
    let room = Math.abs(position.size);
    if (position.restingReduceOnlyLots <= room) return;
    for (const o of account.liveOrdersOn(position.market)) {
      if (o.request.marginMode !== position.marginMode || !o.request.reduceOnly) continue;
      if (o.level === null || o === this.taker) continue;
      if (o.remainingLots <= room) room -= o.remainingLots;
      else if (room > 0) {
        o.market.book.reduce(o.id, room);
        this.countResting(o);
        room = 0;
        this.changes.orders.add(o);
      } else this.cancelOrder(o, 'cancelled');
    }
  }

  // ---- conditional orders ----

  /**
   * Take-profit / stop-loss exits protect what the order's fills open: a fill's opened lots grow the
   * exits still waiting, or, when none is (the first such fill; or they fired, were cancelled, or
   * went with a position that closed or flipped between its fills), start a fresh pair. Lots a fill
   * closes of an opposite position get none: a reduce-only exit there would add to it.
   */
  private attachExits(parent: LinearOrder, lots: number): void {
    const r = parent.request;
    if (lots === 0 || r.reduceOnly || (r.takeProfitPrice === null && r.stopLossPrice === null)) return;
    if (parent.exits === null) {
      const up = parent.side === BUY;
      const tp = r.takeProfitPrice === null ? null : this.exitOrder(parent, r.takeProfitPrice, up ? 1 : -1, lots);
      const sl = r.stopLossPrice === null ? null : this.exitOrder(parent, r.stopLossPrice, up ? -1 : 1, lots);
      if (tp !== null && sl !== null) {
        tp.sibling = sl;
        sl.sibling = tp;
      }
      parent.exits = [tp, sl].filter((o): o is LinearOrder => o !== null);
      this.account(parent.owner).exitsSettled(parent);
      return;
    }
    for (const child of parent.exits) {
      if (child.status !== 'untriggered') continue;
      child.originalLots += lots;
      child.remainingLots += lots;
      this.changes.orders.add(child);
    }
  }

  /**
   * An exit ended. Once none of its pair waits, a parent still live counts its exits as pending
   * again (against the limits, account.ts exitsPending) and its next opening fill starts a new pair.
   */
  private exitEnded(child: LinearOrder): void {
    const parent = child.parent!;
    if (parent.exits === null || parent.exits.some((o) => o.status === 'untriggered')) return;
    parent.exits = null;
    const account = this.account(parent.owner);
    if (account.orders.get(parent.id) === parent) account.exitsPending(parent); // live (tracked)
  }

  private exitOrder(parent: LinearOrder, price: Fixed, direction: 1 | -1, lots: number): LinearOrder {
    const p = parent.request;
    const request: OrderRequest = {
      marketId: p.marketId,
      side: parent.side === BUY ? SELL : BUY,
      type: 'market',
      quantity: parent.market.units.size(lots),
      price: null,
      timeInForce: 'ioc',
      postOnly: false,
      reduceOnly: true,
      marginMode: p.marginMode,
      clientOrderId: null,
      stopPrice: price,
      takeProfitPrice: null,
      stopLossPrice: null,
      selfTradePrevention: p.selfTradePrevention,
      quoteId: null,
    };
    const order = new LinearOrder({
      id: this.deps.nextOrderId(),
      accountId: parent.owner,
      market: parent.market,
      request,
      priceTicks: 0,
      lots,
      trigger: { price, direction },
      isQuote: false,
      now: this.deps.now(),
    });
    order.parent = parent;
    this.account(parent.owner).track(order);
    parent.market.untriggered.add(order);
    this.changes.orders.add(order);
    return order;
  }

  private fireTriggers(market: LinearMarket, mark: Fixed): void {
    if (market.untriggered.size === 0) return;
    const due = [...market.untriggered].filter((o) => {
      const t = o.trigger!;
      return t.direction === 1 ? mark >= t.price : mark <= t.price;
    });
    due.sort((a, b) => a.id - b.id);
    for (const order of due) {
      if (order.status !== 'untriggered') continue; // a sibling fired first
      market.untriggered.delete(order);
      const account = this.account(order.owner);
      account.triggered(order);
      order.trigger = null;
      order.status = 'open';
      order.updatedAt = this.deps.now();
      this.changes.orders.add(order);
      if (order.sibling !== null && order.sibling.status === 'untriggered') this.cancelOrder(order.sibling, 'cancelled');
      // A TP/SL exit grew with its parent's fills after it was created: it fires for all of them.
      const request = { ...order.request, stopPrice: null, quantity: market.units.size(order.remainingLots) };
      const plan = this.checkTaker(market, request, account, true);
      if (isRejection(plan)) {
        order.rejectReason = plan.code;
        this.end(order, 'cancelled');
        continue;
      }
      order.remainingLots = plan.lots;
      this.execute(order, plan.limitTicks);
    }
  }

  // ---- lifecycle operations (lifecycle.ts drives them; each keeps the ledger balanced) ----

  /** Pays one funding interval: users' perps buckets against the insurance fund's residue. */
  postFunding(market: LinearMarket, payments: readonly { position: Position; amount: Fixed }[], at: number): void {
    if (payments.length === 0) return;
    const lines = [];
    let residue = 0n;
    for (const { position, amount } of payments) {
      position.funding += amount;
      if (position.marginMode === 'isolated') position.isolatedMargin += amount;
      lines.push({ account: this.account(position.accountId).perpsLedger, delta: amount });
      residue -= amount;
      this.changes.positions.add(position);
      this.cash.positionMoved(position);
    }
    // The rounding residue (payers round up, receivers down) goes to the insurance fund.
    lines.push({ account: systemAccount('insurance', this.deps.settlementAsset), delta: residue });
    this.deps.ledger.post('funding', lines, at, { ref: market.spec.id });
    this.cash.post('realized_pnl');
  }

  /** Cancels an account's live orders, all of them or those of one market and mode. */
  cancelAccountOrders(accountId: number, only: { market: LinearMarket; mode: MarginMode } | null): void {
    const account = this.accounts.get(accountId);
    if (account === undefined) return;
    for (const o of only === null ? [...account.orders.values()] : account.ordersOn(only.market)) {
      if (only !== null && o.request.marginMode !== only.mode) continue;
      this.cancelOrder(o, 'cancelled');
    }
  }

  /**
   * Cancels the account's resting orders that admits() now refuses (INSUFFICIENT_MARGIN): funding,
   * fees, marks and its other orders and positions moved their bound (a reducing order's
   * bankruptcy price, an opening order's loss against the cross equity) past them after they
   * rested. A taker's match cancels such an order when it reaches it; without this sweep it
   * would show in the book until then, as liquidity no taker can trade. Orders are checked one at a
   * time, in the account's order, each against the state the cancels before it left.
   */
  cancelRefusedMakers(accountId: number): void {
    const account = this.accounts.get(accountId);
    if (account === undefined || account.orders.size === 0) return;
    // Where the account holds no reduce-only order in the market (or the position is isolated),
    // the orders on one side of a position share one bound (closeBoundTicks reads nothing of the
    // order then), kept per side and position key until a reduce-only cancel changes the
    // account's sums. The opening test is skipped for cross orders while the account covers all
    // of them at once (crossOpeningsCovered).
    const shared = [new Map<string, number | null>(), new Map<string, number | null>()];
    const covered = this.makers.crossOpeningsCovered(account);
    // A Map may lose entries while it is iterated (the cancels below): the walk goes on in order.
    for (const o of account.orders.values()) {
      if (o.level === null) continue;
      const mode = o.request.marginMode;
      const plain = mode === 'isolated' || account.liveReduceOnly === 0 ||
        (account.reduceOnlyLosses.sumsOf(account).byMarket.get(o.market)?.lots ?? 0) === 0;
      const p = account.position(o.market, mode);
      const key = o.market.modeKeys[mode];
      let bound = plain ? shared[o.side]!.get(key) : undefined;
      if (bound === undefined) {
        bound = this.makers.bound(o, account, p, 0n);
        if (plain) shared[o.side]!.set(key, bound);
      }
      if (fillsWithin(o, bound) && ((covered && mode === 'cross') || this.makers.opensWithinEquity(o, account, p, 0n))) continue;
      if (o.request.reduceOnly) {
        shared[0]!.clear();
        shared[1]!.clear();
      }
      o.rejectReason = 'INSUFFICIENT_MARGIN';
      this.cancelOrder(o, 'cancelled');
    }
  }

  /** Cancels (or expires) every live order of a market. */
  cancelMarketOrders(market: LinearMarket, status: 'cancelled' | 'expired'): void {
    for (const account of this.accounts.values()) {
      for (const o of account.ordersOn(market)) this.cancelOrder(o, status);
    }
  }

  /**
   * A reduce-only IOC order the venue sends for an account (liquidation, fund unwinding): it skips
   * the client checks (band, margin) but matches like any order, at the maker's price, never beyond
   * `limitTicks`.
   */
  liquidationOrder(accountId: number, market: LinearMarket, mode: MarginMode, side: 0 | 1, lots: number, limitTicks: number): LinearOrder {
    const request: OrderRequest = {
      marketId: market.spec.id,
      side,
      type: 'limit',
      quantity: market.units.size(lots),
      price: market.units.price(limitTicks),
      timeInForce: 'ioc',
      postOnly: false,
      reduceOnly: true,
      marginMode: mode,
      ...PLAIN_ORDER,
    };
    const order = new LinearOrder({
      id: this.deps.nextOrderId(), accountId, market, request, priceTicks: limitTicks, lots, trigger: null, isQuote: false,
      now: this.deps.now(),
    });
    this.account(accountId).track(order);
    this.changes.orders.add(order);
    this.execute(order, limitTicks);
    return order;
  }

  /** Moves `lots` of position `p` to another account at `priceTicks` outside the book (backstop). */
  transferPosition(p: Position, toAccountId: number, toMode: MarginMode, lots: number, priceTicks: number, kind: string): void {
    const signed = p.size > 0 ? -lots : lots;
    const fromAccount = p.accountId;
    const realized = this.movePosition(fromAccount, p.market, p.marginMode, signed, priceTicks);
    const toRealized = this.movePosition(toAccountId, p.market, toMode, -signed, priceTicks);
    this.directFill(p.market, priceTicks, lots, { accountId: fromAccount, side: signed > 0 ? BUY : SELL, mode: p.marginMode, realized },
      { accountId: toAccountId, mode: toMode, realized: toRealized }, kind);
    this.cash.post('realized_pnl');
  }

  /**
   * Auto-deleveraging: `p` and the opposite position `q` both shrink by `lots` at `priceTicks`.
   * Two positions of one account (its cross and isolated ones) are netted without a fill: no
   * counterparty traded, and a fill has one side per account (trade history keys its rows by
   * account and trade id); their position snapshots and realised PnL entries record it.
   */
  adlTrade(p: Position, q: Position, lots: number, priceTicks: number): void {
    const signed = p.size > 0 ? -lots : lots;
    const realized = this.movePosition(p.accountId, p.market, p.marginMode, signed, priceTicks);
    const qRealized = this.movePosition(q.accountId, q.market, q.marginMode, -signed, priceTicks);
    if (p.accountId !== q.accountId) {
      this.directFill(p.market, priceTicks, lots, { accountId: p.accountId, side: signed > 0 ? BUY : SELL, mode: p.marginMode, realized },
        { accountId: q.accountId, mode: q.marginMode, realized: qRealized }, 'adl');
    }
    this.cash.post('realized_pnl');
  }

  /** Closes every position of an expired market at the settlement price (ledger type settlement). */
  settleMarket(market: LinearMarket, priceTicks: number): void {
    for (const p of [...market.positions]) {
      if (p.size === 0) continue;
      this.movePosition(p.accountId, market, p.marginMode, -p.size, priceTicks);
    }
    this.cash.post('settlement');
  }

  /** Emits the fill of a trade the venue made outside the book (no fees; order id 0). */
  private directFill(
    market: LinearMarket,
    priceTicks: number,
    lots: number,
    taker: { accountId: number; side: 0 | 1; mode: MarginMode; realized: Fixed },
    maker: { accountId: number; mode: MarginMode; realized: Fixed },
    kind: string,
  ): void {
    const now = this.deps.now();
    const fill = directFillRecord(this.deps.nextTradeId(), market, priceTicks, lots, taker, maker, now, kind);
    this.deps.emit({ type: 'fill', fill });
  }

  // ---- reads ----

  /** The account's perps cash balance in the ledger. */
  balance(accountId: number): Fixed {
    const account = this.accounts.get(accountId);
    if (account !== undefined) return this.deps.ledger.balance(account.perpsLedger);
    return this.deps.ledger.userBalance(accountId, 'perps', this.deps.settlementAsset);
  }

  risk(accountId: number) {
    const account = this.accounts.get(accountId) ?? this.detachedAccount(accountId);
    return accountRisk(account, this.balance(accountId));
  }

  /** The order's result, completed by `flush` at the end of the command. */
  private resultOf(order: LinearOrder): PlaceResult {
    const result = { order: null as unknown as OrderRecord, fills: order.takerFills ?? NO_FILLS, position: null };
    this.pendingResults.push({ result, order });
    return result;
  }

  /** Margin in use and what may leave the perps bucket (the wallet asks before transfers). */
  holds() {
    return {
      locked: (accountId: number, asset: string): Fixed => {
        if (asset !== this.deps.settlementAsset) return 0n;
        const r = this.risk(accountId);
        const account = this.accounts.get(accountId);
        // Resting reduce-only orders' open loss is held like margin (margin.ts reduceOnlyOpenLoss).
        const used = r.isolatedAllocated + r.positionIM + r.orderIM + (account === undefined ? 0n : reduceOnlyOpenLoss(account));
        return used < 0n ? 0n : used > r.balance ? (r.balance < 0n ? 0n : r.balance) : used;
      },
      transferable: (accountId: number, asset: string): Fixed => {
        if (asset !== this.deps.settlementAsset) return 0n;
        const r = this.risk(accountId);
        const cash = r.balance - r.isolatedAllocated;
        const free = r.free < cash ? r.free : cash; // free keeps resting reduce-only orders' open loss
        return free > 0n ? this.cash.unitsDown(free) : 0n; // what may leave is whole units of the asset
      },
    };
  }

  /**
   * Every account's kept state checked against a fresh computation: margin caches (margin.ts
   * marginAudit), live-order counts (auditLiveOrders) and reduce-only losses (reduce-only-losses.ts).
   */
  audit(recount: boolean): string[] {
    const errors: string[] = [];
    for (const account of this.accounts.values()) {
      errors.push(...marginAudit(account, recount));
      this.auditLiveOrders(account, errors);
      errors.push(...account.auditOrderIndex());
      const kept = account.reduceOnlyLosses.kept();
      if (kept !== null) {
        const fresh = reduceOnlySumsText(reduceOnlySums(account));
        if (reduceOnlySumsText(kept) !== fresh) errors.push(`account ${account.id}: kept reduce-only sums ${reduceOnlySumsText(kept)} ≠ ${fresh}`);
      }
    }
    return errors;
  }

  /**
   * The counts the engine keeps of an account's live orders against a walk of them: the markets
   * that list it in accountsWithOrders, its live reduce-only orders, and what each reduce-only
   * order and each position count as resting (countResting).
   */
  private auditLiveOrders(account: LinearAccount, errors: string[]): void {
    let reduceOnly = 0;
    const resting = new Map<Position, number>();
    const pendingExits = new Map<LinearMarket, number>();
    for (const o of account.orders.values()) {
      const exits = o.exits === null ? exitsDeclared(o.request) : 0;
      if (o.pendingExits !== exits) errors.push(`order ${o.id}: ${o.pendingExits} pending exits counted, ${exits} declared and not created`);
      if (exits > 0) pendingExits.set(o.market, (pendingExits.get(o.market) ?? 0) + exits);
      if (!o.request.reduceOnly) continue;
      if (o.trigger === null) reduceOnly++;
      const p = account.position(o.market, o.request.marginMode);
      const lots = o.level === null ? 0 : o.remainingLots;
      if (lots !== 0 && p === undefined) errors.push(`reduce-only order ${o.id} rests without a position`);
      if (o.countedReduceOnlyLots !== lots || o.countedIn !== (lots === 0 ? null : p)) {
        errors.push(`reduce-only order ${o.id}: ${o.countedReduceOnlyLots} lots counted, ${lots} resting, or counted in another position`);
      }
      if (lots !== 0 && p !== undefined) resting.set(p, (resting.get(p) ?? 0) + lots);
    }
    let allPending = 0;
    for (const market of this.markets.values()) {
      const live = account.liveCounts(market);
      if ((live.orders > live.triggers) !== market.accountsWithOrders.has(account.id)) errors.push(`account ${account.id}: ${market.spec.id} accountsWithOrders disagrees with its ${live.orders - live.triggers} live orders`);
      const held = pendingExits.get(market) ?? 0;
      allPending += held;
      if (live.pendingExits !== held) errors.push(`account ${account.id}: ${market.spec.id} counts ${live.pendingExits} pending exits, its orders declare ${held}`);
    }
    if (allPending !== account.pendingExits) errors.push(`account ${account.id}: ${account.pendingExits} pending exits counted, ${allPending} declared`);
    if (reduceOnly !== account.liveReduceOnly) errors.push(`account ${account.id}: ${account.liveReduceOnly} live reduce-only orders counted, ${reduceOnly} held`);
    for (const p of account.positions.values()) {
      const held = resting.get(p) ?? 0;
      if (held !== p.restingReduceOnlyLots) errors.push(`position ${p.id}: ${p.restingReduceOnlyLots} resting reduce-only lots counted, ${held} resting`);
    }
  }

  riskMarkOf(market: LinearMarket): Fixed | null {
    return riskMark(market);
  }
}

/** What `lots` just opened at `price` lose at the market's risk mark (0 when they fill at or better than it). */
function openLossAtMark(p: Position, lots: number, price: Fixed): Fixed {
  const mark = riskMark(p.market);
  return mark === null ? 0n : openLossAt(p.market, p.size > 0, price, lots, mark);
}
