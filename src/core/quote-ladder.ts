/**
 * A quote ladder must not cross itself. Its levels are placed one after another as one command, so
 * an ask at or below one of its own bids would meet that bid and self-trade prevention would cancel
 * it: a two-sided quote would silently end one-sided at the aggressive price. Both engines refuse
 * such a request whole (VALIDATION_ERROR) before anything changes.
 */
import { BUY } from './book/order-book.ts';
import { reject, type Rejection } from './errors.ts';
import { formatDecimal, type Fixed } from './money.ts';
import type { OrderRequest } from './linear/order.ts';

export function crossedLadder(levels: readonly OrderRequest[]): Rejection | null {
  let bestBid: Fixed | null = null;
  let bestAsk: Fixed | null = null;
  for (const level of levels) {
    if (level.price === null) continue;
    if (level.side === BUY) {
      if (bestBid === null || level.price > bestBid) bestBid = level.price;
    } else if (bestAsk === null || level.price < bestAsk) bestAsk = level.price;
  }
  if (bestBid === null || bestAsk === null || bestBid < bestAsk) return null;
  return reject('VALIDATION_ERROR', `the quote crosses itself: bid ${formatDecimal(bestBid)} is not below ask ${formatDecimal(bestAsk)}`);
}
