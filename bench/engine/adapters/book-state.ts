/**
 * End-of-run state of one of the engine's order books, in workload lots (an adapter whose market
 * counts `scale` engine lots per workload lot divides them back), for the check against the
 * workload generator's shadow book. Shared by the full-path adapters.
 */
import { BUY, SELL, type OrderBook } from '../../../src/core/book/order-book.ts';
import type { EndState } from './adapter.ts';

export function bookEndState(book: OrderBook, fills: number, filledLots: number, scale = 1): EndState {
  const out: number[] = [];
  const qty = (side: 0 | 1): number => {
    const levels = book.depth(side, book.levelCount(side), out);
    let q = 0;
    for (let j = 0; j < levels; j++) q += out[2 * j + 1]!;
    return q / scale;
  };
  const bid = book.bestBid();
  const ask = book.bestAsk();
  return {
    restingOrders: book.orderCount(),
    bidQty: qty(BUY),
    askQty: qty(SELL),
    bestBid: Number.isNaN(bid) ? null : bid,
    bestAsk: Number.isNaN(ask) ? null : ask,
    fills,
    filledLots: filledLots / scale,
  };
}
