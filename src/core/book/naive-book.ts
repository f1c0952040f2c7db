/**
 * NaiveBook: the deliberately simple oracle for OrderBook, kept for tests only. Each side is one
 * array of resting orders sorted by priority (best price first, then arrival), every operation is
 * a linear scan, and fillableLots() runs match() on a copy. Nothing here is fast; it is meant to be
 * obviously right, so the property test can run it side by side with OrderBook.
 *
 * Same semantics and public methods as OrderBook (rest/cancel/get/reduce/match/fillableLots/
 * wouldCross/bestBid/bestAsk/depth/levelLots/orderCount/levelCount/forEachResting/lastStopReason),
 * including the InvariantError thrown for a crossing rest(), a duplicate id or a bad reduce().
 * Assumes the caller gives it its own BookOrder objects (it mutates remainingLots and seq).
 * Tested by order-book.property.test.ts, which checks it and OrderBook agree after every command.
 */

import { assert } from '../assert.ts';
import { BookOrder } from './order.ts';
import { BUY } from './types.ts';
import type { MakerAdmission, MatchSink, SelfTradePrevention, Side, StopReason } from './types.ts';

const NULL_SINK: MatchSink = { onFill() {}, onMakerCancelled() {} };

export class NaiveBook {
  lastStopReason: StopReason = 'filled';
  /** [bids, asks], each sorted best price first, then by seq. */
  private sides: [BookOrder[], BookOrder[]] = [[], []];
  private nextSeq = 1;

  rest(order: BookOrder): void {
    assert(Number.isSafeInteger(order.priceTicks) && order.priceTicks > 0, 'naive rest: bad price');
    assert(Number.isSafeInteger(order.remainingLots) && order.remainingLots > 0, 'naive rest: bad lots');
    assert(this.get(order.id) === undefined, 'naive rest: duplicate id');
    assert(!this.wouldCross(order.side, order.priceTicks), 'naive rest: order would cross the book');
    order.seq = this.nextSeq++;
    const list = this.sides[order.side];
    let i = 0;
    while (i < list.length && !this.better(order, (list[i] as BookOrder).priceTicks)) i++;
    list.splice(i, 0, order);
  }

  cancel(id: number): BookOrder | undefined {
    for (const list of this.sides) {
      const i = list.findIndex((o) => o.id === id);
      if (i >= 0) return list.splice(i, 1)[0];
    }
    return undefined;
  }

  get(id: number): BookOrder | undefined {
    return this.sides[0].find((o) => o.id === id) ?? this.sides[1].find((o) => o.id === id);
  }

  reduce(id: number, newLots: number): void {
    const o = this.get(id);
    assert(o !== undefined, 'naive reduce: no such order');
    const ok = Number.isSafeInteger(newLots) && newLots > 0 && newLots < o.remainingLots;
    assert(ok, 'naive reduce: bad lots');
    o.remainingLots = newLots;
  }

  match(side: Side, limitTicks: number, lots: number, owner: number, stp: SelfTradePrevention,
    sink: MatchSink): number {
    const book = this.sides[side === BUY ? 1 : 0];
    let left = lots;
    let reason: StopReason = 'filled';
    while (left > 0) {
      const maker = book[0];
      if (maker === undefined) { reason = 'no_liquidity'; break; }
      const inLimit = side === BUY ? maker.priceTicks <= limitTicks : maker.priceTicks >= limitTicks;
      if (!inLimit) { reason = 'limit'; break; }
      if (maker.owner === owner) {
        if (stp === 'cancel_taker') { reason = 'self_trade'; break; }
        book.shift();
        sink.onMakerCancelled(maker, 'self_trade');
        if (stp === 'cancel_both') { reason = 'self_trade'; break; }
        continue;
      }
      if (sink.admits !== undefined && !sink.admits(maker)) {
        book.shift();
        sink.onMakerCancelled(maker, 'refused');
        continue;
      }
      const fill = Math.min(left, maker.remainingLots);
      maker.remainingLots -= fill;
      left -= fill;
      if (maker.remainingLots === 0) book.shift();
      sink.onFill(maker, fill, maker.priceTicks);
    }
    this.lastStopReason = reason;
    return lots - left;
  }

  fillableLots(side: Side, limitTicks: number, lots: number, owner: number,
    stp: SelfTradePrevention, admits?: MakerAdmission): number {
    const copy = new NaiveBook();
    copy.sides = [this.sides[0].map(clone), this.sides[1].map(clone)];
    // The copies keep the originals' ids, owners and prices: the question is asked of those.
    return copy.match(side, limitTicks, lots, owner, stp, admits === undefined ? NULL_SINK : { ...NULL_SINK, admits });
  }

  wouldCross(side: Side, priceTicks: number): boolean {
    const best = this.sides[side === BUY ? 1 : 0][0];
    if (best === undefined) return false;
    return side === BUY ? priceTicks >= best.priceTicks : priceTicks <= best.priceTicks;
  }

  bestBid(): number {
    return this.sides[0][0]?.priceTicks ?? NaN;
  }

  bestAsk(): number {
    return this.sides[1][0]?.priceTicks ?? NaN;
  }

  depth(side: Side, maxLevels: number, out: number[]): number {
    let n = 0;
    for (const o of this.sides[side]) {
      if (n > 0 && out[2 * (n - 1)] === o.priceTicks) {
        out[2 * n - 1] = (out[2 * n - 1] as number) + o.remainingLots;
      } else {
        if (n === maxLevels) break;
        out[2 * n] = o.priceTicks;
        out[2 * n + 1] = o.remainingLots;
        n++;
      }
    }
    return n;
  }

  levelLots(side: Side, priceTicks: number): number {
    let sum = 0;
    for (const o of this.sides[side]) if (o.priceTicks === priceTicks) sum += o.remainingLots;
    return sum;
  }

  orderCount(): number {
    return this.sides[0].length + this.sides[1].length;
  }

  levelCount(side: Side): number {
    return new Set(this.sides[side].map((o) => o.priceTicks)).size;
  }

  forEachResting(fn: (o: BookOrder) => void): void {
    for (const list of this.sides) for (const o of list) fn(o);
  }

  /** True when an order priced `price` on the order's side has strictly better price priority. */
  private better(order: BookOrder, price: number): boolean {
    return order.side === BUY ? order.priceTicks > price : order.priceTicks < price;
  }
}

function clone(o: BookOrder): BookOrder {
  const c = new BookOrder(o.id, o.owner, o.side, o.priceTicks, o.remainingLots);
  c.seq = o.seq;
  return c;
}
