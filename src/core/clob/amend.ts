/**
 * Amending a resting order (`POST /options/orders/{id}/modify`, research/mechanics.md 7):
 * `price` is the new limit and `quantity` the new total size (filled part included, so it must
 * exceed what has filled). Time priority is kept only when the price is unchanged and the size
 * decreases (book.reduce, the released lots' hold is freed); any other change re-queues the order:
 * it leaves the book and is placed again with the same id, a new time priority, and its fill
 * history, after the same tick / step / size / band checks and the funding gate for the new hold
 * (computed as if the old order were gone); a reduction in place takes no band check, as it adds
 * nothing to the book. A re-queued price that crosses the book trades like a
 * new order (a post-only order is refused with POST_ONLY_WOULD_CROSS instead). An unchanged price
 * and size is accepted as a no-op. Nothing changes on a rejection. Tested in amend.test.ts.
 */
import { BUY } from '../book/order-book.ts';
import { isRejection, reject, type Rejection } from '../errors.ts';
import type { PlaceResult } from '../linear/engine.ts';
import type { OrderRequest } from '../linear/order.ts';
import { formatDecimal, type Fixed } from '../money.ts';
import type { ClobAccount } from './account.ts';
import { checkBand, checkState, checkUnits } from './checks.ts';
import type { ClobEngine, OpenPlan } from './engine.ts';
import type { ClobOrder } from './order.ts';
import { availableNow, marginAdded } from './option-margin.ts';
import { buyReservePerLot } from './risk.ts';

const show = (v: Fixed): string => formatDecimal(v > 0n ? v : 0n);

export function amendOrder(
  e: ClobEngine, accountId: number, orderId: number, price: Fixed | null, quantity: Fixed | null,
): PlaceResult | Rejection {
  const account = e.findAccount(accountId);
  const order = account?.orders.get(orderId);
  if (account === undefined || order === undefined) {
    return reject('NOT_FOUND', `open order ${orderId} not found`);
  }
  if (price === null && quantity === null) {
    return reject('VALIDATION_ERROR', 'give a price, a quantity or both');
  }
  const m = order.market;
  const now = e.deps.now();
  const r: OrderRequest = {
    ...order.request,
    price: price ?? order.request.price,
    quantity: quantity ?? m.units.size(order.originalLots),
  };
  const early = checkState(m, now) ?? checkUnits(m, r);
  if (early !== null) return early;
  const remaining = m.units.lots(r.quantity) - order.filledLots;
  if (remaining <= 0) {
    const filled = formatDecimal(m.units.size(order.filledLots));
    return reject('VALIDATION_ERROR', `quantity must exceed the filled quantity ${filled}`);
  }
  const ticks = m.units.ticks(r.price!);
  // Shrinking in place adds nothing to the book, so the band (which bounds where new liquidity is
  // priced) is not asked: an order that rested while the index was stale may lie outside it now.
  if (ticks === order.priceTicks && remaining <= order.remainingLots) {
    if (remaining < order.remainingLots) reduceInPlace(e, order, remaining);
    return e.resultOf(order);
  }
  const band = checkBand(e, m, r, now);
  if (band !== null) return band;
  const plan = requeuePlan(e, account, order, r, ticks, remaining);
  if (isRejection(plan)) return plan;
  e.detach(order);
  return e.resultOf(e.open(account, m, r, plan, order.isQuote, order));
}

/** Lowers the size of a resting order keeping its place in the queue. */
function reduceInPlace(e: ClobEngine, order: ClobOrder, remaining: number): void {
  const freed = order.remainingLots - remaining;
  order.market.book.reduce(order.id, remaining);
  order.originalLots -= freed;
  if (order.reservePerLot !== null) e.release(order, order.reservePerLot * BigInt(freed));
  if (order.restingSellLots > 0) e.adjustRestingSells(order, -Math.min(freed, order.restingSellLots));
  order.updatedAt = e.deps.now();
  e.touch(order);
}

/** The new order's hold and the gate for it, with the old order's hold counted as released. */
function requeuePlan(
  e: ClobEngine, account: ClobAccount, order: ClobOrder, r: OrderRequest, ticks: number, lots: number,
): OpenPlan | Rejection {
  const m = order.market;
  if (r.postOnly && m.book.wouldCross(order.side, ticks)) {
    return reject('POST_ONLY_WOULD_CROSS', 'post-only order would take liquidity');
  }
  const plan: { -readonly [K in keyof OpenPlan]: OpenPlan[K] } = {
    lots, limitTicks: ticks, priceTicks: ticks, reserve: 0n, reservePerLot: null,
  };
  if (m.isOption && order.side !== BUY) {
    const gate = sellGate(e, account, order, lots);
    return gate ?? plan;
  }
  const fraction = m.isOption ? e.optionFees.maxCapPct / 100n : e.spotMaxBps / 10_000n;
  const d = e.settlementDecimals;
  const perLot = order.side === BUY ? buyReservePerLot(m, ticks, fraction, d) : m.units.step;
  plan.reservePerLot = perLot;
  plan.reserve = perLot * BigInt(lots);
  const extra = plan.reserve - order.reserve;
  if (extra <= 0n) return plan;
  const needs = `the amended order needs ${formatDecimal(extra)} more`;
  if (m.isOption) {
    const available = availableNow(e, account, e.deps.now());
    if (available >= extra) return plan;
    return reject('INSUFFICIENT_MARGIN', `${needs} USDC of premium and fee; available ${show(available)}`);
  }
  const asset = e.reserveAsset(order);
  const available = e.userBalance(account.id, 'spot', asset) - account.held('spot', asset);
  if (available >= extra) return plan;
  return reject('INSUFFICIENT_BALANCE', `insufficient spot ${asset}: ${needs}, available ${show(available)}`);
}

/** An option sell's re-queue needs the initial margin its new size adds over the old one. */
function sellGate(e: ClobEngine, account: ClobAccount, order: ClobOrder, lots: number): Rejection | null {
  const m = order.market;
  const now = e.deps.now();
  const added = marginAdded(e, account, m, now, 0, lots - order.restingSellLots);
  if (added <= 0n) return null;
  // No margin without a spot (risk.ts marginPerContract is null exactly then).
  if (e.riskSpot(m.underlying, now) === null) {
    return reject('MARKET_CLOSED', `no index price for ${m.underlying}`);
  }
  const available = availableNow(e, account, now);
  if (available >= added) return null;
  const needs = `the amended order needs ${formatDecimal(added)} USDC more initial margin`;
  const message = `${needs}; available ${show(available)}`;
  return reject('INSUFFICIENT_MARGIN', message);
}
