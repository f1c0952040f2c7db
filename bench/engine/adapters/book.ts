/**
 * Adapter for our bare OrderBook (src/core/book): limit = match() then rest() the remainder,
 * ioc = match() only, market = match() at the market limit, cancel = cancel(id). Every order gets
 * its own owner (owner = id), so self-trade prevention never triggers. Ops are converted ahead of
 * time into parallel typed arrays (no per-op objects); the only allocation in the timed loop is the
 * BookOrder of a resting remainder, as in a real engine. Fills go to a sink that counts them, so
 * the callbacks do real (if tiny) work. Exercised by bench/engine/book-bench.ts.
 */

import {
  BookOrder, BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT, OrderBook, SELL,
} from '../../../src/core/book/order-book.ts';
import type { MatchSink, Side } from '../../../src/core/book/order-book.ts';
import type { Adapter, EndState, WorkloadOp } from './adapter.ts';
import { T_CANCEL, T_IOC, T_LIMIT, T_MARKET } from './adapter.ts';

/** Counts what match() reports; also what keeps the sink calls from being free. */
class CountingSink implements MatchSink {
  fills = 0;
  filledLots = 0;
  makerCancels = 0;
  onFill(_maker: BookOrder, lots: number): void {
    this.fills++;
    this.filledLots += lots;
  }
  onMakerCancelled(): void {
    this.makerCancels++;
  }
}

export interface BookUnderTest { book: OrderBook; sink: CountingSink }

export interface BookPrepared {
  kind: Uint8Array;
  side: Uint8Array;
  price: Int32Array;
  size: Int32Array;
  id: Int32Array;
}

function prepare(ops: readonly WorkloadOp[]): BookPrepared {
  const n = ops.length;
  const p: BookPrepared = {
    kind: new Uint8Array(n), side: new Uint8Array(n), price: new Int32Array(n), size: new Int32Array(n),
    id: new Int32Array(n),
  };
  const KIND = { limit: T_LIMIT, ioc: T_IOC, market: T_MARKET, cancel: T_CANCEL } as const;
  for (let i = 0; i < n; i++) {
    const op = ops[i] as WorkloadOp;
    const k = KIND[op.type];
    if (k === undefined) throw new Error(`unknown op type ${op.type}`);
    p.kind[i] = k;
    p.side[i] = op.side === 'buy' ? BUY : SELL;
    p.price[i] = op.price; // 0 for market orders, whose limit apply() takes from the constants
    p.size[i] = op.size;
    p.id[i] = op.id;
  }
  return p;
}

function apply(t: BookUnderTest, p: BookPrepared, i: number): number {
  const book = t.book;
  const k = p.kind[i] as number;
  const id = p.id[i] as number;
  if (k === T_CANCEL) return book.cancel(id) === undefined ? 1 : 0;
  const side = p.side[i] as Side;
  const size = p.size[i] as number;
  if (k === T_MARKET) {
    book.match(side, side === BUY ? MARKET_BUY_LIMIT : MARKET_SELL_LIMIT, size, id, 'cancel_taker', t.sink);
    return 0;
  }
  const price = p.price[i] as number;
  const filled = book.match(side, price, size, id, 'cancel_taker', t.sink);
  if (k === T_LIMIT && filled < size) book.rest(new BookOrder(id, id, side, price, size - filled));
  return 0;
}

function replay(t: BookUnderTest, p: BookPrepared): number {
  let misses = 0;
  const n = p.kind.length;
  for (let i = 0; i < n; i++) misses += apply(t, p, i);
  return misses;
}

function endState(t: BookUnderTest): EndState {
  const out: number[] = [];
  const qty = (side: Side): number => {
    const levels = t.book.depth(side, t.book.levelCount(side), out);
    let q = 0;
    for (let j = 0; j < levels; j++) q += out[2 * j + 1] as number;
    return q;
  };
  const bid = t.book.bestBid();
  const ask = t.book.bestAsk();
  return {
    restingOrders: t.book.orderCount(),
    bidQty: qty(BUY),
    askQty: qty(SELL),
    bestBid: Number.isNaN(bid) ? null : bid,
    bestAsk: Number.isNaN(ask) ? null : ask,
    fills: t.sink.fills,
    filledLots: t.sink.filledLots,
  };
}

export const bookAdapter: Adapter<BookUnderTest, BookPrepared> = {
  name: 'book',
  engine: 'src/core/book OrderBook (bare book, no engine)',
  prepare,
  newBook: () => ({ book: new OrderBook(), sink: new CountingSink() }),
  apply,
  replay,
  endState,
};
