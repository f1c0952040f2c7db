/**
 * The first part of amending a resting perp or futures order (engine.ts amend): the checks of the
 * new price and quantity that come before anything else (market state, tick, step, size range,
 * more than the filled quantity; codes as for a new order) and whether the amend may shrink the
 * order where it rests. Pure: reads the order and its market, changes nothing.
 */
import { reject, type Rejection } from '../errors.ts';
import { formatDecimal } from '../money.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder, OrderRequest } from './order.ts';

/**
 * The amended order's total lots when it keeps its place (its price unchanged and its size not
 * larger: the book only shrinks it; unchanged price and size is a no-op), null when it must be
 * re-queued through the checks of a new order, or the first failing early check.
 */
export function shrinkInPlace(market: LinearMarket, order: LinearOrder, r: OrderRequest, now: number): number | null | Rejection {
  if (market.status !== 'open') return reject('MARKET_CLOSED', `market ${market.spec.id} is ${market.status}`);
  if (market.spec.expiry !== null && now >= market.spec.expiry) return reject('MARKET_CLOSED', `market ${market.spec.id} has expired`);
  const units = market.units;
  const ticks = units.ticksOrNaN(r.price!);
  if (Number.isNaN(ticks)) return reject('INVALID_TICK', `price must be a multiple of ${formatDecimal(units.tick)}`);
  const lots = units.lotsOrNaN(r.quantity);
  if (Number.isNaN(lots)) return reject('INVALID_STEP', `quantity must be a multiple of ${formatDecimal(units.step)}`);
  if (r.quantity < market.spec.minSize || r.quantity > market.spec.maxSize) {
    return reject('SIZE_OUT_OF_RANGE', `quantity must be between ${formatDecimal(market.spec.minSize)} and ${formatDecimal(market.spec.maxSize)}`);
  }
  if (lots <= order.filledLots) {
    return reject('VALIDATION_ERROR', `quantity must exceed the filled quantity ${formatDecimal(units.size(order.filledLots))}`);
  }
  if (ticks !== order.priceTicks) return null;
  // A reduce-only order trimmed to its shrinking position rests with fewer lots than it asked for.
  if (lots === order.originalLots || lots - order.filledLots <= order.remainingLots) return lots;
  return null;
}
