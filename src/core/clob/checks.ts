/**
 * Pre-trade checks of a spot or option order, in the fixed order the venue promises (cheap to
 * expensive, first failure wins, nothing changes on a rejection):
 *   request shape → market state → tick / step → size range → price ceiling → price band → open-order limits →
 *   duplicate client id → reduce-only feasibility → funding gate → post-only → fill-or-kill →
 *   immediate-or-cancel liquidity.
 * The same function serves the live order, `POST /orders/preview` and each strategy leg (which
 * stops before the gate: a strategy is gated on its combined result, strategy.ts). The order's
 * figures (limit, notional, fee, holds, margin) come from funding.ts.
 *
 * Venue rules (documented in the OpenAPI description of POST /orders):
 *  - Spot trades with or without an index; while the index is fresh, limit prices must be within
 *    the market's band around it and market orders sweep no further than the band edge. A market
 *    order may carry a price (the contract has every order carry one): the worst it accepts, its
 *    sweep stopping there when that is inside the band (no band check: the band caps it anyway).
 *  - Options: MARKET_CLOSED at and after expiry. Static price bounds: a call never above the
 *    underlying (S), a put never above its strike; no mark is needed to trade.
 *  - reduceOnly: refused on spot (a holding is a balance, not a position); on options it applies to
 *    immediate orders (ioc, fok, market) and is clipped to the position on arrival. A resting
 *    reduce-only order is refused: other fills could make it outgrow the position it reduces.
 *  - Funding gate: spot orders are funded, not margined (400 INSUFFICIENT_BALANCE when the spot
 *    bucket cannot hold the lock); option orders pass a margin gate (422 INSUFFICIENT_MARGIN):
 *    buys hold premium plus fee, sells need the initial margin they may add.
 */
import { BUY } from '../book/order-book.ts';
import { reject, type Rejection } from '../errors.ts';
import type { OrderRequest } from '../linear/order.ts';
import { formatDecimal, type Fixed } from '../money.ts';
import type { FeeRole, FeeSchedule } from '../risk/fees.ts';
import type { ClobAccount } from './account.ts';
import type { ClobLimits } from './config.ts';
import { bandEdge, planOrder, type Subject } from './funding.ts';
import type { ClobMarket } from './market.ts';
import type { OptionFeeSchedule } from './option-fees.ts';
import { availableNow, type MarginSource } from './option-margin.ts';

export interface ClobEnv extends MarginSource {
  readonly limits: ClobLimits;
  readonly spotFees: FeeSchedule;
  readonly optionFees: OptionFeeSchedule;
  /** The highest spot fee rate of any tier and role (bps): what a buy reserves for its fee. */
  readonly spotMaxBps: Fixed;
  spotVolume(accountId: number, now: number): Fixed;
  optionVolume(accountId: number, now: number): Fixed;
  /** The fresh index, or null when stale. */
  freshIndex(underlying: string, now: number): Fixed | null;
}

/** Everything the engine needs to execute an accepted order (and a preview reports). */
export interface ClobPlan {
  readonly lots: number;
  /** Book limit for matching: the limit price, or the band edge for market orders. */
  readonly limitTicks: number;
  readonly priceTicks: number;
  /** Premium (options) or quote notional (spot): at the limit, or what an immediate order takes now. */
  readonly notional: Fixed;
  /** Funds the order holds on acceptance, in `reserveAsset` of the market's bucket. */
  readonly reserve: Fixed;
  readonly reservePerLot: Fixed | null;
  readonly reserveAsset: string;
  /** What the gate requires: the reserve, or for option sells the initial margin they add. */
  readonly marginRequired: Fixed;
  readonly feeRole: FeeRole;
  readonly feeBps: Fixed;
  readonly estFee: Fixed;
  readonly volume30d: Fixed;
}

export type CheckStage = 'order' | 'leg';

const show = (v: Fixed): string => formatDecimal(v > 0n ? v : 0n);

export function checkOrder(
  e: ClobEnv, a: ClobAccount, m: ClobMarket, r: OrderRequest, now: number,
): ClobPlan | Rejection {
  const out = evaluateOrder(e, a, m, r, now, 'order');
  return out.rejection ?? out.plan!;
}

/** The checks with their partial result: `plan` is known from the funding figures on. */
export function evaluateOrder(
  e: ClobEnv, a: ClobAccount, m: ClobMarket, r: OrderRequest, now: number, stage: CheckStage,
) {
  let plan: ClobPlan | null = null;
  const rejection = runChecks({ e, a, m, r, now }, stage, (p) => (plan = p));
  return { plan: plan as ClobPlan | null, rejection };
}

function runChecks(s: Subject, stage: CheckStage, planned: (p: ClobPlan) => void): Rejection | null {
  const { e, a, m, r, now } = s;
  const early = checkShape(m, r) ?? checkState(m, now) ?? checkUnits(m, r) ?? checkBand(e, m, r, now)
    ?? checkLimits(e, a, m, r, now);
  if (early !== null) return early;
  let lots = m.units.lots(r.quantity);
  if (r.reduceOnly) {
    const size = a.position(m)?.size ?? 0;
    if (size === 0 || (size > 0) === (r.side === BUY)) {
      const message = 'reduce-only order would not reduce the option position (flat or same side)';
      return reject('REDUCE_ONLY_REJECTED', message);
    }
    lots = Math.min(lots, Math.abs(size));
  }
  const plan = planOrder(s, lots);
  if (plan === null) {
    return reject('MARKET_CLOSED', `no index price for ${m.underlying}: option margin cannot be computed`);
  }
  planned(plan);
  if (stage === 'leg') return null;
  return checkGate(s, plan) ?? checkLiquidity(m, r, plan, a.id);
}

function checkShape(m: ClobMarket, r: OrderRequest): Rejection | null {
  const invalid = (message: string) => reject('VALIDATION_ERROR', message);
  if (r.type === 'limit' && r.price === null) return invalid('price is required for a limit order');
  if (r.type === 'market' && r.timeInForce === 'gtc') return invalid('a market order is ioc or fok');
  if (r.postOnly && (r.type !== 'limit' || r.timeInForce !== 'gtc')) {
    return invalid('postOnly applies only to gtc limit orders');
  }
  if (r.stopPrice !== null || r.takeProfitPrice !== null || r.stopLossPrice !== null) {
    return invalid('stop, take-profit and stop-loss prices are not supported on spot and options');
  }
  if (r.marginMode !== 'cross') return invalid('marginMode does not apply to spot and options');
  if (r.reduceOnly && !m.isOption) {
    return invalid('reduceOnly does not apply to spot: a holding is a balance');
  }
  if (r.reduceOnly && r.type === 'limit' && r.timeInForce === 'gtc') {
    return invalid('a reduce-only option order must be ioc, fok or market (it cannot rest)');
  }
  return null;
}

export function checkState(m: ClobMarket, now: number): Rejection | null {
  if (m.status !== 'open') return reject('MARKET_CLOSED', `market ${m.spec.id} is ${m.status}`);
  if (m.option !== null && now >= m.option.expiry) {
    return reject('MARKET_CLOSED', `option ${m.spec.id} has expired`);
  }
  return null;
}

export function checkUnits(m: ClobMarket, r: OrderRequest): Rejection | null {
  const u = m.units;
  if (r.price !== null && r.price % u.tick !== 0n) {
    return reject('INVALID_TICK', `price must be a multiple of ${formatDecimal(u.tick)}`);
  }
  if (r.quantity % u.step !== 0n) {
    return reject('INVALID_STEP', `quantity must be a multiple of ${formatDecimal(u.step)}`);
  }
  if (r.quantity < m.spec.minSize || r.quantity > m.spec.maxSize) {
    const range = `${formatDecimal(m.spec.minSize)} and ${formatDecimal(m.spec.maxSize)}`;
    return reject('SIZE_OUT_OF_RANGE', `quantity must be between ${range}`);
  }
  if (r.price !== null && r.price > u.maxPrice) {
    return reject('PRICE_OUT_OF_BAND', `price may not exceed ${formatDecimal(u.maxPrice)}`);
  }
  return null;
}

export function checkBand(e: ClobEnv, m: ClobMarket, r: OrderRequest, now: number): Rejection | null {
  // A market order's price is only the worst it accepts: it sweeps no further than the band anyway.
  if (r.price === null || r.type === 'market') return null;
  const ticks = m.units.ticks(r.price);
  if (m.option !== null) {
    const upper = bandEdge(e, m, BUY, now);
    if (upper === null || ticks <= upper) return null;
    const what = m.option.type === 'put' ? 'the strike' : 'the underlying';
    const limit = formatDecimal(m.units.price(upper));
    return reject('PRICE_OUT_OF_BAND', `an option price may not exceed ${limit} (${what})`);
  }
  const edge = bandEdge(e, m, r.side, now);
  if (edge === null || (r.side === BUY ? ticks <= edge : ticks >= edge)) return null;
  const bound = `${r.side === BUY ? 'at most' : 'at least'} ${formatDecimal(m.units.price(edge))}`;
  const pct = m.spec.priceBandBps / 100;
  return reject('PRICE_OUT_OF_BAND', `price must be within ${pct}% of the index (${bound})`);
}

function checkLimits(
  e: ClobEnv, a: ClobAccount, m: ClobMarket, r: OrderRequest, now: number,
): Rejection | null {
  const l = e.limits;
  // The limits bound what rests: an order that cannot rest (ioc, fok, market, a strategy's legs)
  // passes at a limit, so an account holding as many orders as it may can still close a position.
  const rests = r.type === 'limit' && r.timeInForce === 'gtc';
  if (rests && a.orders.size >= l.maxOpenOrdersPerAccount) {
    return reject('TOO_MANY_OPEN_ORDERS', `at most ${l.maxOpenOrdersPerAccount} open orders per account`);
  }
  if (rests && a.liveCount(m) >= l.maxOpenOrdersPerMarket) {
    return reject('TOO_MANY_OPEN_ORDERS', `at most ${l.maxOpenOrdersPerMarket} open orders per market`);
  }
  if (r.clientOrderId !== null) {
    const existing = a.clientIds.inUse(r.clientOrderId, now, l.clientIdRetentionMs);
    if (existing !== null) {
      const message = `clientOrderId ${r.clientOrderId} is already used by order ${existing}`;
      return reject('DUPLICATE_CLIENT_ORDER_ID', message);
    }
  }
  return null;
}

function checkGate(s: Subject, plan: ClobPlan): Rejection | null {
  const { e, a, m, r, now } = s;
  if (plan.marginRequired === 0n) return null;
  if (!m.isOption) {
    const asset = plan.reserveAsset;
    const available = e.userBalance(a.id, 'spot', asset) - a.held('spot', asset);
    if (available >= plan.marginRequired) return null;
    const needed = formatDecimal(plan.marginRequired);
    const message = `insufficient spot ${asset}: the order needs ${needed}, available ${show(available)}`;
    return reject('INSUFFICIENT_BALANCE', message);
  }
  const available = availableNow(e, a, now);
  if (available >= plan.marginRequired) return null;
  const what = r.side === BUY ? 'premium and fee' : 'initial margin';
  const needed = formatDecimal(plan.marginRequired);
  const message = `order needs ${needed} USDC of ${what}; available in options is ${show(available)}`;
  return reject('INSUFFICIENT_MARGIN', message);
}

function checkLiquidity(m: ClobMarket, r: OrderRequest, plan: ClobPlan, owner: number): Rejection | null {
  const book = m.book;
  const stp = r.selfTradePrevention;
  if (r.postOnly && book.wouldCross(r.side, plan.priceTicks)) {
    return reject('POST_ONLY_WOULD_CROSS', 'post-only order would take liquidity');
  }
  if (r.timeInForce === 'fok') {
    if (book.fillableLots(r.side, plan.limitTicks, plan.lots, owner, stp) < plan.lots) {
      return reject('FOK_NOT_FILLED', 'fill-or-kill order cannot be filled in full now');
    }
  } else if (r.timeInForce === 'ioc' || r.type === 'market') {
    if (book.fillableLots(r.side, plan.limitTicks, 1, owner, stp) === 0) {
      return reject('NO_LIQUIDITY', 'no liquidity to fill the order now; nothing rests');
    }
  }
  return null;
}
