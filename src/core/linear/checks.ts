/**
 * Pre-trade checks of a linear order, in the fixed order the venue promises (cheap to expensive,
 * first failure wins, nothing changes on a rejection):
 *   request shape → market and its state → tick / step / size range → price ceiling (markets.ts
 *   maxPrice) → mark available (else only reduce-only) → price band → open-order limits →
 *   duplicate client id → reduce-only feasibility → the bankruptcy bound of a reducing order →
 *   an isolated order's leverage within its tier → margin gate → post-only → fill-or-kill →
 *   immediate-or-cancel liquidity. (A leverage on a cross order or below 1 is a shape error.)
 * The same function serves the live order and `POST /perps/orders/preview`, so a preview always
 * agrees with what the live order then does (at the same state and time).
 */
import { BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT, SELL, type MakerAdmission, type SelfTradePrevention } from '../book/order-book.ts';
import { reject, type Rejection } from '../errors.ts';
import { formatDecimal, SCALE, type Fixed } from '../money.ts';
import type { FeeRole } from '../risk/fees.ts';
import { exitsDeclared, type LinearAccount } from './account.ts';
import {
  cachedOrdersMargin, closeBoundTicks, closingNotional, crossCashOf, freeCollateral, leveragedOpening, leverageSurcharge, ordersMargin,
  heldOnSide, reduceOnlyOpenLoss, reduces, riskMark,
} from './margin.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder, OrderRequest, Trigger } from './order.ts';
import type { Position } from './position.ts';

export interface LinearLimits {
  readonly maxOpenOrdersPerMarket: number;
  readonly maxOpenOrdersPerAccount: number;
  readonly maxTriggersPerMarket: number;
  readonly maxQuoteLevels: number;
  readonly clientIdRetentionMs: number;
}

/** Everything the engine needs to execute an accepted order (or a preview reports). */
export interface OrderPlan {
  readonly lots: number;
  /** Book limit for matching: the limit price, or the band edge for market orders. */
  readonly limitTicks: number;
  readonly priceTicks: number;
  readonly trigger: Trigger | null;
  readonly notional: Fixed;
  /** Lots `notional` values: what an immediate order can take from the book now, else all its lots. */
  readonly fillLots: number;
  readonly marginRequired: Fixed;
  readonly feeRole: FeeRole;
  readonly feeBps: Fixed;
  readonly estFee: Fixed;
  readonly volume30d: Fixed;
}

export interface CheckContext {
  readonly account: LinearAccount;
  readonly balance: Fixed;
  readonly mark: Fixed | null;
  readonly now: number;
  readonly limits: LinearLimits;
  readonly volume30d: Fixed;
  /** A conditional order firing: it already holds its client id and its open-order slot. */
  readonly triggered: boolean;
  /**
   * An amend (engine.ts amend): the live order the request replaces, already out of the book and
   * the account's sums. It keeps its client id and its open-order slot, and the request's quantity
   * is its new total: what it has filled counts towards it.
   */
  readonly replacing: LinearOrder | null;
  feeRate(role: FeeRole): Fixed;
  fee(notional: Fixed, bps: Fixed): Fixed;
  /** Another account (a maker), for the fill-or-kill check. */
  accountOf(id: number): LinearAccount | undefined;
  /** Whether a resting order may fill at its price now (the engine's MatchSink.admits). */
  readonly admits: MakerAdmission;
  /** Whether cross profit in a market can be realised now (margin.ts Realisable). */
  realisable(market: LinearMarket): boolean;
  /**
   * admits() once earlier fills of the same owner took `spent` from its equity, left its isolated
   * position as `played` (fill-or-kill walk; undefined: the position as it is) and `heldLots` on
   * the order's side.
   */
  admitsAfter(maker: LinearOrder, spent: Fixed, played: Position | undefined, heldLots: number): boolean;
  /** Applies a maker fill that reduces an isolated position to a scratch copy of it (maker-checks.ts playIsolatedFill). */
  playIsolatedFill(scratch: Position, maker: LinearOrder, lots: number): void;
  /**
   * At least what filling `lots` of a resting order takes from its owner's equity, its position
   * holding `heldLots` on the order's side (maker-checks.ts predictedCost).
   */
  fillCost(maker: LinearOrder, lots: number, heldLots: number): Fixed;
}


/** Where the checks leave the order's figures once they are known (before the margin gate). */
interface PlanSlot {
  plan: OrderPlan | null;
}

/** The live path's slot, reused: the core runs one order at a time and reads the plan at once. */
const liveSlot: PlanSlot = { plan: null };

export function checkOrder(market: LinearMarket, r: OrderRequest, c: CheckContext): OrderPlan | Rejection {
  liveSlot.plan = null;
  const rejection = runChecks(market, r, c, liveSlot);
  const plan = liveSlot.plan;
  liveSlot.plan = null;
  return rejection ?? plan!;
}

/**
 * The checks with their partial result: `plan` is filled in once the order's figures are known
 * (before the margin gate), so a rejected preview can still show notional, margin and fee.
 */
export function evaluateOrder(market: LinearMarket, r: OrderRequest, c: CheckContext): { plan: OrderPlan | null; rejection: Rejection | null } {
  const slot: PlanSlot = { plan: null };
  const rejection = runChecks(market, r, c, slot);
  return { plan: slot.plan, rejection };
}

function runChecks(market: LinearMarket, r: OrderRequest, c: CheckContext, slot: PlanSlot): Rejection | null {
  const shape = checkShape(r);
  if (shape !== null) return shape;
  if (market.status !== 'open') return reject('MARKET_CLOSED', `market ${market.spec.id} is ${market.status}`);
  if (market.spec.expiry !== null && c.now >= market.spec.expiry) return reject('MARKET_CLOSED', `market ${market.spec.id} has expired`);
  const units = market.units;
  const priceTicks = r.price === null ? 0 : units.ticksOrNaN(r.price);
  if (Number.isNaN(priceTicks)) return reject('INVALID_TICK', `price must be a multiple of ${formatDecimal(units.tick)}`);
  const orderedLots = units.lotsOrNaN(r.quantity);
  if (Number.isNaN(orderedLots)) return reject('INVALID_STEP', `quantity must be a multiple of ${formatDecimal(units.step)}`);
  const offTick = offTickTrigger(r, units.tick);
  if (offTick !== null) return reject('INVALID_TICK', `${offTick} must be a multiple of ${formatDecimal(units.tick)}`);
  if (r.quantity < market.spec.minSize || r.quantity > market.spec.maxSize) {
    return reject('SIZE_OUT_OF_RANGE', `quantity must be between ${formatDecimal(market.spec.minSize)} and ${formatDecimal(market.spec.maxSize)}`);
  }
  // The price ceiling holds with or without a mark: the book keeps prices as safe integers.
  if (priceTicks > units.maxPriceTicks) return reject('PRICE_OUT_OF_BAND', `price may not exceed ${formatDecimal(units.maxPrice)}`);
  // A trigger beyond it could never fire (the mark never gets there): refused like such a price.
  const highTrigger = triggerAbove(r, units.maxPrice);
  if (highTrigger !== null) return reject('PRICE_OUT_OF_BAND', `${highTrigger} may not exceed ${formatDecimal(units.maxPrice)}`);
  const mark = c.mark;
  if (mark === null && !r.reduceOnly) return reject('MARKET_CLOSED', `no fresh mark price for ${market.spec.id}: only reduce-only orders are accepted`);
  if (mark !== null && r.price === null && r.stopPrice === null && (r.takeProfitPrice !== null || r.stopLossPrice !== null)) {
    const exits = checkExitSides(r, mark, `the mark ${formatDecimal(mark)}`);
    if (exits !== null) return exits;
  }
  // While the index is stale (only reduce-only orders pass) the band, a market order's sweep limit
  // and a stop's direction are taken from the last mark: a feed outage is the worst time to sweep a
  // book, and a stop placed then must wait for the mark to cross it from where it last was.
  const anchor = mark ?? market.riskMark;
  const trigger = triggerOf(r, anchor);
  if (anchor !== null && r.price !== null && trigger === null && !market.priceInBand(r.side, priceTicks, anchor)) {
    const which = mark === null ? 'last mark' : 'mark';
    return reject('PRICE_OUT_OF_BAND', `price must be within ${market.spec.priceBandBps / 100}% of the ${which} ${formatDecimal(anchor)}`);
  }
  const holdsSlot = c.triggered || c.replacing !== null;
  const limitsHit = holdsSlot ? null : checkOpenOrderLimits(market, r, c, trigger !== null);
  if (limitsHit !== null) return limitsHit;
  if (r.clientOrderId !== null && !holdsSlot) {
    const existing = c.account.clientIds.inUse(r.clientOrderId, c.now, c.limits.clientIdRetentionMs);
    if (existing !== null) return reject('DUPLICATE_CLIENT_ORDER_ID', `clientOrderId ${r.clientOrderId} is already used by order ${existing}`);
  }
  const filledLots = c.replacing?.filledLots ?? 0;
  if (orderedLots <= filledLots) {
    return reject('VALIDATION_ERROR', `quantity must exceed the filled quantity ${formatDecimal(units.size(filledLots))}`);
  }
  let lots = orderedLots - filledLots;
  const position = c.account.position(market, r.marginMode);
  if (r.reduceOnly) {
    const size = position?.size ?? 0;
    if (!reduces(size, r.side)) {
      return reject('REDUCE_ONLY_REJECTED', 'reduce-only order would not reduce the position (flat or same side)');
    }
    if (trigger === null) lots = Math.min(lots, Math.abs(size));
  }
  const immediate = r.type === 'market' || r.timeInForce !== 'gtc';
  // A user order never trades a position beyond its bankruptcy price: the loss past it would be the
  // insurance fund's and the counterparty's gain. An immediate order matches no further than it (the
  // rest is cancelled); a resting order may not be priced beyond it. Conditional orders are bounded
  // when they fire.
  const bankruptcy = trigger === null && anchor !== null ? reducingBound(r, position, c, anchor, lots) : NO_BOUND;
  if (!immediate && beyond(r.side, priceTicks, bankruptcy)) {
    return reject('INSUFFICIENT_MARGIN', `a ${r.side === BUY ? 'buy' : 'sell'} at ${formatDecimal(r.price!)} would close the position beyond its bankruptcy price ${formatDecimal(units.price(bankruptcy))}`);
  }
  let limitTicks = r.type === 'market'
    ? (anchor === null ? (r.side === BUY ? MARKET_BUY_LIMIT : MARKET_SELL_LIMIT) : market.bandLimitTicks(r.side, anchor))
    : priceTicks;
  if (beyond(r.side, limitTicks, bankruptcy)) limitTicks = bankruptcy;
  const sweep = trigger === null && immediate ? sweepEstimate(market, r.side, limitTicks, lots, c.account.id, r.selfTradePrevention, c.admits) : null;
  // An immediate order never rests, so it can only take; a conditional order is taken to take when
  // it fires (a stop-market always does). Either way its fee reserve is the taker's.
  const takes = !r.postOnly && (immediate || trigger !== null || market.book.wouldCross(r.side, priceTicks));
  const notional = immediate ? (sweep?.notional ?? estimate(market, lots, mark)) : units.notional(priceTicks, lots);
  if (r.leverage !== undefined) {
    const most = market.margin.maxLeverage(notional);
    if (r.leverage > BigInt(most) * SCALE) {
      return reject('VALIDATION_ERROR', `leverage may not exceed ${most}x for an order of ${formatDecimal(notional)} USDC (the margin tier's maximum)`);
    }
  }
  const feeRole: FeeRole = takes ? 'taker' : 'maker';
  const feeBps = c.feeRate(feeRole);
  const estFee = c.fee(notional, feeBps);
  // An immediate order's unfillable rest is cancelled: it needs margin only for what it can take.
  const takenLots = sweep !== null && sweep.lots < lots ? sweep.lots : lots;
  let marginRequired = r.reduceOnly ? 0n : marginDelta(market, r, c, takenLots, notional, mark ?? 0n);
  if (!r.reduceOnly && r.leverage !== undefined) marginRequired += leverageSurcharge(market, notional, r.leverage);
  if (!r.reduceOnly && mark !== null) {
    const flip = isolatedFlipShortfall(r, position, takenLots, mark);
    if (flip > marginRequired) marginRequired = flip;
  }
  slot.plan = { lots, limitTicks, priceTicks, trigger, notional, fillLots: sweep?.lots ?? lots, marginRequired, feeRole, feeBps, estFee, volume30d: c.volume30d };
  if (marginRequired > 0n) {
    const free = freeCollateral(c.account, c.balance);
    const feeReserve = r.postOnly ? 0n : feeRole === 'taker' ? estFee : c.fee(notional, c.feeRate('taker'));
    if (free - marginRequired - (feeReserve > 0n ? feeReserve : 0n) < 0n) {
      return reject('INSUFFICIENT_MARGIN', `order needs ${formatDecimal(marginRequired)} USDC of margin; free collateral is ${formatDecimal(free)}`);
    }
    // An isolated position is funded with cash: unrealised cross profit counts towards free
    // collateral, but moving it into an allocation would turn it into cash that can leave.
    if (r.marginMode === 'isolated') {
      const cash = crossCashOf(c.account, c.balance) - reduceOnlyOpenLoss(c.account);
      if (cash - marginRequired - (feeReserve > 0n ? feeReserve : 0n) < 0n) {
        return reject('INSUFFICIENT_MARGIN', `an isolated order is funded from cash: it needs ${formatDecimal(marginRequired)} USDC; the cross cash is ${formatDecimal(cash)}`);
      }
    }
  }
  if (trigger !== null) return null;
  return checkLiquidity(market, r, lots, limitTicks, priceTicks, c);
}

function checkShape(r: OrderRequest): Rejection | null {
  if (r.type === 'limit' && r.price === null) return reject('VALIDATION_ERROR', 'price is required for a limit order');
  if (r.type === 'market' && r.price !== null) return reject('VALIDATION_ERROR', 'a market order takes no price');
  if (r.type === 'market' && r.timeInForce === 'gtc') return reject('VALIDATION_ERROR', 'a market order is ioc or fok');
  if (r.postOnly && (r.type !== 'limit' || r.timeInForce !== 'gtc')) {
    return reject('VALIDATION_ERROR', 'postOnly applies only to gtc limit orders');
  }
  if (r.leverage !== undefined && r.marginMode !== 'isolated') {
    return reject('VALIDATION_ERROR', 'leverage applies to isolated orders only: a cross position draws on the whole account\'s equity, so its leverage follows from the account, not the order');
  }
  if (r.leverage !== undefined && r.leverage < SCALE) return reject('VALIDATION_ERROR', 'leverage must be at least 1');
  if (r.reduceOnly && (r.takeProfitPrice !== null || r.stopLossPrice !== null)) {
    return reject('VALIDATION_ERROR', 'takeProfitPrice/stopLossPrice attach to orders that open a position, not to reduce-only orders');
  }
  const ref = r.price ?? r.stopPrice;
  return ref === null ? null : checkExitSides(r, ref, 'the order price');
}

/**
 * A take-profit exit sits on the winning side of where the position opens and a stop-loss on the
 * losing side (else it fires at once). `ref` is the order's price, its stop price, or for a market
 * order the mark it will fill near.
 */
function checkExitSides(r: OrderRequest, ref: Fixed, what: string): Rejection | null {
  const up = r.side === BUY;
  if (r.takeProfitPrice !== null && (up ? r.takeProfitPrice <= ref : r.takeProfitPrice >= ref)) {
    return reject('VALIDATION_ERROR', `takeProfitPrice must be ${up ? 'above' : 'below'} ${what} for a ${up ? 'buy' : 'sell'}`);
  }
  if (r.stopLossPrice !== null && (up ? r.stopLossPrice >= ref : r.stopLossPrice <= ref)) {
    return reject('VALIDATION_ERROR', `stopLossPrice must be ${up ? 'below' : 'above'} ${what} for a ${up ? 'buy' : 'sell'}`);
  }
  return null;
}

/** The first trigger price off the tick grid, if any (checked without allocating: every order runs this). */
function offTickTrigger(r: OrderRequest, tick: Fixed): string | null {
  if (r.stopPrice !== null && r.stopPrice % tick !== 0n) return 'stopPrice';
  if (r.takeProfitPrice !== null && r.takeProfitPrice % tick !== 0n) return 'takeProfitPrice';
  if (r.stopLossPrice !== null && r.stopLossPrice % tick !== 0n) return 'stopLossPrice';
  return null;
}

function triggerAbove(r: OrderRequest, ceiling: Fixed): string | null {
  if (r.stopPrice !== null && r.stopPrice > ceiling) return 'stopPrice';
  if (r.takeProfitPrice !== null && r.takeProfitPrice > ceiling) return 'takeProfitPrice';
  if (r.stopLossPrice !== null && r.stopLossPrice > ceiling) return 'stopLossPrice';
  return null;
}

/** A stop order waits for the mark to reach stopPrice from the side the mark is on now (or was last). */
function triggerOf(r: OrderRequest, mark: Fixed | null): Trigger | null {
  if (r.stopPrice === null) return null;
  const reference = mark ?? r.stopPrice;
  return { price: r.stopPrice, direction: r.stopPrice >= reference ? 1 : -1 };
}

/**
 * The open-order limits count live orders, and the take-profit / stop-loss exits live orders will
 * create when they first fill (LiveCounts.pendingExits), and this order's own exits: filling
 * resting parents can then never take an account past a limit.
 */
function checkOpenOrderLimits(market: LinearMarket, r: OrderRequest, c: CheckContext, conditional: boolean): Rejection | null {
  const a = c.account;
  const exits = exitsDeclared(r);
  // Live orders it can leave behind: one that cannot rest and declares no exit (ioc, fok, market)
  // passes at a limit, so an account holding as many orders as it may can still close a position.
  const leaves = (r.timeInForce === 'gtc' || conditional ? 1 : 0) + exits;
  if (leaves > 0 && a.orders.size + a.pendingExits + leaves > c.limits.maxOpenOrdersPerAccount) {
    return reject('TOO_MANY_OPEN_ORDERS', `at most ${c.limits.maxOpenOrdersPerAccount} open orders per account`);
  }
  const { orders: inMarket, triggers, pendingExits } = a.liveCounts(market);
  if (leaves > 0 && inMarket + pendingExits + leaves > c.limits.maxOpenOrdersPerMarket) {
    return reject('TOO_MANY_OPEN_ORDERS', `at most ${c.limits.maxOpenOrdersPerMarket} open orders per market`);
  }
  const newTriggers = (conditional ? 1 : 0) + exits;
  if (newTriggers > 0 && triggers + pendingExits + newTriggers > c.limits.maxTriggersPerMarket) {
    return reject('TOO_MANY_OPEN_ORDERS', `at most ${c.limits.maxTriggersPerMarket} conditional orders per market`);
  }
  return null;
}

/** Extra initial margin (plus open loss) the order adds to its market and mode at the mark. */
function marginDelta(market: LinearMarket, r: OrderRequest, c: CheckContext, lots: number, notional: Fixed, mark: Fixed): Fixed {
  const totals = c.account.totalsFor(market, r.marginMode);
  const posLots = c.account.position(market, r.marginMode)?.size ?? 0;
  const before = cachedOrdersMargin(totals, posLots);
  const buy = r.side === BUY;
  probe.buyLots = totals.buyLots + (buy ? lots : 0);
  probe.buyNotional = totals.buyNotional + (buy ? notional : 0n);
  probe.sellLots = totals.sellLots + (buy ? 0 : lots);
  probe.sellNotional = totals.sellNotional + (buy ? 0n : notional);
  const after = ordersMargin(market, posLots, probe, mark);
  // Only a probe at the mark the cache uses may stand in for it.
  if (mark === riskMark(market)) totals.rememberProbe(probe, after);
  return after - before;
}

/** No bankruptcy bound (the order does not reduce a position). */
const NO_BOUND = -1;

/**
 * The bankruptcy price (ticks) of the position the order would reduce, or NO_BOUND: where the
 * equity behind it, less the fee of closing it all (the fill pays one, taker or maker), is gone.
 */
function reducingBound(r: OrderRequest, position: Position | undefined, c: CheckContext, mark: Fixed, lots: number): number {
  if (position === undefined || !reduces(position.size, r.side)) return NO_BOUND;
  const fee = c.fee(closingNotional(position, mark), c.feeRate('taker'));
  return closeBoundTicks(position, c.account, c.balance, fee, mark, lots, null, c.realisable);
}

/** Whether `ticks` is past the bound on the losing side: a sell below it, a buy above it. */
function beyond(side: 0 | 1, ticks: number, bound: number): boolean {
  if (bound === NO_BOUND) return false;
  return side === BUY ? ticks > bound : ticks < bound;
}

/**
 * An isolated flip releases the old position's equity (allocation plus PnL, never below zero) to the
 * cross pool and charges the new side a whole initial margin: what the cross pool must add is the
 * difference. marginDelta nets the new side against the old position's initial margin, as the cross
 * pool does, which under-reserves when the isolated position has lost money.
 */
function isolatedFlipShortfall(r: OrderRequest, position: Position | undefined, lots: number, mark: Fixed): Fixed {
  if (r.marginMode !== 'isolated' || position === undefined || position.size === 0) return 0n;
  if ((position.size > 0) === (r.side === BUY) || lots <= Math.abs(position.size)) return 0n;
  const equity = position.isolatedMargin + position.unrealized(mark);
  const released = equity > 0n ? equity : 0n;
  const opened = lots - Math.abs(position.size);
  return leveragedOpening(position.market, 0, opened, mark, r.leverage) - released;
}

/** Reused scratch sums: one order added to a (market, mode)'s resting totals. */
const probe = { buyLots: 0, buyNotional: 0n, sellLots: 0, sellNotional: 0n };

function estimate(market: LinearMarket, lots: number, mark: Fixed | null): Fixed {
  return mark === null ? 0n : (BigInt(lots) * market.units.step * mark) / SCALE;
}

/**
 * What an immediate order would take from the book now: lots and exact notional. Its own orders are
 * skipped or end the sweep as its self-trade prevention makes the match do.
 */
export function sweepEstimate(market: LinearMarket, side: 0 | 1, limitTicks: number, lots: number, owner: number, stp: SelfTradePrevention, admits: MakerAdmission) {
  const fillable = market.book.fillableLots(side, limitTicks, lots, owner, stp, admits);
  return { lots: fillable, notional: BigInt(market.book.lastFillableCost) * market.units.notionalUnit };
}

function checkLiquidity(market: LinearMarket, r: OrderRequest, lots: number, limitTicks: number, priceTicks: number, c: CheckContext): Rejection | null {
  const book = market.book;
  const owner = c.account.id;
  if (r.postOnly && book.wouldCross(r.side, priceTicks)) {
    return reject('POST_ONLY_WOULD_CROSS', 'post-only order would take liquidity');
  }
  if (r.timeInForce === 'fok') {
    const stp = r.selfTradePrevention;
    // The book's count (every maker) is a cheap upper bound; the walk asks admits() and models the upkeep.
    if (book.fillableLots(r.side, limitTicks, lots, owner, stp) < lots || fokFillableLots(market, r.side, limitTicks, lots, owner, stp, c) < lots) {
      return reject('FOK_NOT_FILLED', 'fill-or-kill order cannot be filled in full now');
    }
  } else if (r.timeInForce === 'ioc' || r.type === 'market') {
    if (book.fillableLots(r.side, limitTicks, 1, owner, r.selfTradePrevention, c.admits) === 0) {
      return reject('NO_LIQUIDITY', 'no liquidity to fill the order now; nothing rests');
    }
  }
  return null;
}

/**
 * What a fill-or-kill taker really gets. book.fillableLots() counts every resting maker, but while
 * the order matches, the engine trims a maker's reduce-only orders as that maker's position shrinks
 * and cancels them when it closes or flips (engine.ts settleSide), so a later reduce-only order of
 * the same maker may be gone before the taker reaches it. This walk replays that upkeep on scratch
 * copies of the makers' positions and reduce-only sizes: an accepted FOK order never ends part-filled.
 * Each fill also takes its cost from its maker's equity, which bounds that maker's later orders
 * (maker-checks.ts admits): the walk asks them with what the earlier ones spent, and with what the
 * earlier fills of an isolated position left of it (its fee from the allocation, the closed share
 * given back).
 */
function fokFillableLots(market: LinearMarket, side: 0 | 1, limitTicks: number, lots: number, owner: number, stp: SelfTradePrevention, c: CheckContext): number {
  const makerSide = side === BUY ? SELL : BUY;
  const positions = new Map<string, number>();
  /** The makers' positions' resting reduce-only lots, as the replayed fills and trims leave them. */
  const reduceOnlyLots = new Map<string, number>();
  const remaining = new Map<LinearOrder, number>();
  const spent = new Map<number, Fixed>();
  const played = new Map<Position, Position>();
  let left = lots;
  let done = false;
  market.book.forEachResting((node) => {
    if (done || node.side !== makerSide) return;
    const o = node as LinearOrder;
    if (left === 0 || (side === BUY ? o.priceTicks > limitTicks : o.priceTicks < limitTicks)) return void (done = true);
    if (o.owner === owner) return void (done = stp !== 'cancel_maker');
    const account = c.accountOf(o.owner);
    const mode = o.request.marginMode;
    const isolated = mode === 'isolated' ? account?.position(market, mode) : undefined;
    const scratch = isolated === undefined ? undefined : played.get(isolated);
    const key = `${o.owner}|${mode}`;
    const position = account?.position(market, mode);
    const before = positions.get(key) ?? position?.size ?? 0;
    const held = heldOnSide(before, o.side);
    const spentBefore = spent.get(o.owner) ?? 0n;
    if (!c.admitsAfter(o, spentBefore, scratch, held)) return; // refused at the match, cancelled, not filled
    const available = remaining.get(o) ?? o.remainingLots;
    const take = Math.min(available, left);
    if (take === 0) return;
    left -= take;
    remaining.set(o, available - take);
    spent.set(o.owner, spentBefore + c.fillCost(o, take, held));
    // A fill that reduces an isolated position pays its fee from the allocation and gives back the
    // closed share: the position's next order is bounded by what that leaves (admits, played).
    if (isolated !== undefined && reduces((scratch ?? isolated).size, o.side)) {
      const next = scratch ?? isolated.scratchCopy();
      c.playIsolatedFill(next, o, take);
      played.set(isolated, next);
    }
    if (account === undefined) return;
    const after = before + (o.side === BUY ? take : -take);
    positions.set(key, after);
    let resting = reduceOnlyLots.get(key) ?? position?.restingReduceOnlyLots ?? 0;
    if (o.request.reduceOnly) reduceOnlyLots.set(key, (resting -= take));
    const closedOrFlipped = after === 0 || (before !== 0 && Math.sign(after) !== Math.sign(before));
    if (!closedOrFlipped && Math.abs(after) >= Math.abs(before)) return;
    let room = closedOrFlipped ? 0 : Math.abs(after);
    if (resting <= room) return; // they all still fit: the engine trims nothing (trimReduceOnly)
    reduceOnlyLots.set(key, room);
    for (const x of account.liveOrdersOn(market)) {
      if (x.request.marginMode !== mode || !x.request.reduceOnly || x.level === null) continue;
      const keep = Math.min(remaining.get(x) ?? x.remainingLots, room);
      room -= keep;
      remaining.set(x, keep);
    }
  });
  return lots - left;
}
