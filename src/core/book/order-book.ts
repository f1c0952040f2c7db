/**
 * OrderBook: the price-time-priority limit order book shared by both matching engines. It holds
 * resting orders, matches takers against them at the makers' prices and reports fills through a
 * MatchSink; it knows nothing about money, margin or events.
 *
 * Cost model (L = levels on a side): rest at a new price O(log L) (red-black tree placement),
 * rest at an existing price O(1) (Map lookup + FIFO append), cancel/get/reduce O(1), best price
 * O(1), each fill O(1) plus O(log L) when it empties a level. The hot paths allocate nothing of
 * their own: levels are pooled, orders are linked intrusively, stop reasons are constant strings.
 *
 * Assumes: prices are positive safe-integer ticks, sizes positive safe-integer lots, order ids
 * unique among resting orders; single-threaded use. Invariants that protect money (never crossed,
 * positive sizes, level totals = sum of orders, id index = resting set) are asserted on the hot
 * paths where cheap and all of them by checkInvariants(). Tested by order-book.test.ts (examples)
 * and order-book.property.test.ts (random command streams against NaiveBook).
 */

import { assert, fail } from '../assert.ts';
import { BookSide } from './book-side.ts';
import { Level } from './level.ts';
import { BookOrder } from './order.ts';
import { BUY, SELL } from './types.ts';
import type { MakerAdmission, MatchSink, SelfTradePrevention, Side, StopReason } from './types.ts';

export { BookOrder } from './order.ts';
export { Level } from './level.ts';
export { BUY, SELL, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT } from './types.ts';
export type { MakerAdmission, MakerCancel, MatchSink, SelfTradePrevention, Side, StopReason } from './types.ts';

/** Emptied levels kept for reuse; beyond this many they are left to the GC. */
const LEVEL_POOL_MAX = 4096;

export class OrderBook {
  /** Why the most recent match() stopped. */
  lastStopReason: StopReason = 'filled';
  /**
   * Sum of price x lots (in tick-lot units) of what the last fillableLots() call would take: the
   * exact cost of an immediate order, computed in the same walk. A safe integer for any order
   * within the markets' size limits (lots x ticks stays far below 2^53).
   */
  lastFillableCost = 0;
  private readonly bids = new BookSide(BUY);
  private readonly asks = new BookSide(SELL);
  private readonly orders = new Map<number, BookOrder>();
  private nextSeq = 1;
  /** Free list of pooled levels, chained through Level.next. */
  private freeLevels: Level | null = null;
  private freeCount = 0;
  /** True while match() runs sink callbacks: rest() and match() are refused then. */
  private matching = false;

  /** Rests the order at the tail of its price level; asserts it does not cross the opposite best. */
  rest(order: BookOrder): void {
    assert(!this.matching, 'rest() called from inside a MatchSink callback');
    const price = order.priceTicks;
    const lots = order.remainingLots;
    assert(Number.isSafeInteger(price) && price > 0, 'rest: price must be a positive safe integer');
    assert(Number.isSafeInteger(lots) && lots > 0, 'rest: lots must be a positive safe integer');
    assert(order.level === null, 'rest: order is already resting');
    assert(!this.orders.has(order.id), 'rest: an order with this id is already resting');
    const isBuy = order.side === BUY;
    assert(isBuy || order.side === SELL, 'rest: side must be BUY or SELL');
    const own = isBuy ? this.bids : this.asks;
    const opp = isBuy ? this.asks : this.bids;
    const oppBest = opp.best;
    if (oppBest !== null) {
      const clear = isBuy ? price < oppBest.priceTicks : price > oppBest.priceTicks;
      assert(clear, 'rest: order would cross the book');
    }
    let level = own.byPrice.get(price);
    if (level === undefined) {
      level = this.newLevel(order.side, price);
      own.insert(level);
    }
    order.seq = this.nextSeq++;
    order.level = level;
    order.next = null;
    const tail = level.tail;
    order.prev = tail;
    if (tail === null) level.head = order;
    else tail.next = order;
    level.tail = order;
    level.orderCount++;
    level.totalLots += lots;
    this.orders.set(order.id, order);
  }

  /** Removes a resting order by id in O(1); returns it, or undefined when no such order rests. */
  cancel(id: number): BookOrder | undefined {
    const order = this.orders.get(id);
    if (order === undefined) return undefined;
    this.unlink(order);
    return order;
  }

  /**
   * Puts back an order cancel() just took out, at its old place in its level's queue and with its
   * old time priority `seq` (an amend whose checks then refused it): `next` is the order that
   * followed it at its price (null: it was the last). Nothing else may have changed in the book in
   * between. O(1), plus O(log L) when its level had emptied.
   */
  reinstate(order: BookOrder, seq: number, next: BookOrder | null): void {
    assert(!this.matching, 'reinstate() called from inside a MatchSink callback');
    assert(order.level === null && !this.orders.has(order.id), 'reinstate: order is already resting');
    let level: Level;
    if (next === null) {
      const own = this.sideOf(order.side);
      let found = own.byPrice.get(order.priceTicks);
      if (found === undefined) {
        found = this.newLevel(order.side, order.priceTicks);
        own.insert(found);
      }
      level = found;
      order.prev = level.tail;
      if (level.tail === null) level.head = order;
      else level.tail.next = order;
      level.tail = order;
    } else {
      assert(next.level !== null && next.priceTicks === order.priceTicks && next.side === order.side, 'reinstate: next is not at its price');
      level = next.level;
      order.prev = next.prev;
      if (next.prev === null) level.head = order;
      else next.prev.next = order;
      next.prev = order;
    }
    order.next = next;
    order.level = level;
    order.seq = seq;
    level.orderCount++;
    level.totalLots += order.remainingLots;
    this.orders.set(order.id, order);
  }

  get(id: number): BookOrder | undefined {
    return this.orders.get(id);
  }

  /** Amends a resting order down to newLots (0 < newLots < remaining), keeping its time priority. */
  reduce(id: number, newLots: number): void {
    const order = this.orders.get(id);
    assert(order !== undefined, 'reduce: no such resting order');
    assert(Number.isSafeInteger(newLots) && newLots > 0, 'reduce: newLots must be a positive safe integer');
    assert(newLots < order.remainingLots, 'reduce: newLots must be below the remaining lots');
    const level = order.level as Level;
    level.totalLots -= order.remainingLots - newLots;
    order.remainingLots = newLots;
  }

  /**
   * Matches a taker of `side` against the opposite side, best price first and FIFO within a level,
   * at each maker's price, for at most `lots` and only at prices within `limitTicks` (buy: asks
   * <= limit, sell: bids >= limit; MARKET_BUY_LIMIT / MARKET_SELL_LIMIT for market orders).
   * A resting order of the same owner triggers `stp` (see SelfTradePrevention). Reports every fill
   * and STP cancel to `sink` in order and returns the lots filled; lastStopReason says why it stopped.
   */
  match(side: Side, limitTicks: number, lots: number, owner: number, stp: SelfTradePrevention,
    sink: MatchSink): number {
    assert(!this.matching, 'match() called from inside a MatchSink callback');
    assert(Number.isSafeInteger(lots) && lots > 0, 'match: lots must be a positive safe integer');
    // A NaN limit would compare false against every level and act as a market order.
    assert(Number.isSafeInteger(limitTicks) && limitTicks >= 0, 'match: limit must be a safe integer >= 0');
    const isBuy = side === BUY;
    const opp = isBuy ? this.asks : this.bids;
    // In key space (asks: price, bids: -price) "within the limit" is always key <= limitKey.
    // 0 - x rather than -x: a market sell's limit 0 must not become -0, which is not a Smi.
    const limitKey = isBuy ? limitTicks : 0 - limitTicks;
    const admits = sink.admits;
    let left = lots;
    let reason: StopReason = 'filled';
    this.matching = true;
    try {
      while (left > 0) {
        // Re-read every time: a callback may have cancelled or reduced resting orders.
        const level = opp.best;
        if (level === null) { reason = 'no_liquidity'; break; }
        if (level.key > limitKey) { reason = 'limit'; break; }
        const maker = level.head as BookOrder;
        if (maker.owner === owner) {
          if (stp === 'cancel_taker') { reason = 'self_trade'; break; }
          this.unlink(maker);
          sink.onMakerCancelled(maker, 'self_trade');
          if (stp === 'cancel_both') { reason = 'self_trade'; break; }
          continue;
        }
        if (admits !== undefined && !admits.call(sink, maker)) {
          this.unlink(maker);
          sink.onMakerCancelled(maker, 'refused');
          continue;
        }
        const rem = maker.remainingLots;
        const fill = rem < left ? rem : left;
        left -= fill;
        if (fill === rem) {
          this.unlink(maker);
          maker.remainingLots = 0;
        } else {
          maker.remainingLots = rem - fill;
          level.totalLots -= fill;
        }
        sink.onFill(maker, fill, maker.priceTicks);
      }
    } finally {
      this.matching = false;
    }
    this.lastStopReason = reason;
    return lots - left;
  }

  /**
   * The lots match() would fill with the same arguments, changing nothing (for fill-or-kill).
   * Mirrors match(): a same-owner maker is skipped under cancel_maker (match would remove it) and
   * stops the walk under cancel_taker and cancel_both; a maker `admits` refuses is skipped (pass
   * the sink's admits(), asked here before any fill: see MatchSink).
   */
  fillableLots(side: Side, limitTicks: number, lots: number, owner: number,
    stp: SelfTradePrevention, admits?: MakerAdmission): number {
    assert(Number.isSafeInteger(limitTicks) && limitTicks >= 0, 'fillableLots: limit must be a safe integer');
    const isBuy = side === BUY;
    const limitKey = isBuy ? limitTicks : 0 - limitTicks;
    let left = lots;
    let cost = 0;
    for (let level = (isBuy ? this.asks : this.bids).best; level !== null && left > 0; level = level.next) {
      if (level.key > limitKey) break;
      for (let o = level.head; o !== null && left > 0; o = o.next) {
        if (o.owner === owner) {
          if (stp === 'cancel_maker') continue;
          this.lastFillableCost = cost;
          return lots - left;
        }
        if (admits !== undefined && !admits(o)) continue;
        const take = o.remainingLots < left ? o.remainingLots : left;
        left -= take;
        cost += take * o.priceTicks;
      }
    }
    this.lastFillableCost = cost;
    return lots - left;
  }

  /** True when an order of `side` at priceTicks would trade on arrival (the post-only check). */
  wouldCross(side: Side, priceTicks: number): boolean {
    if (side === BUY) {
      const a = this.asks.best;
      return a !== null && priceTicks >= a.priceTicks;
    }
    const b = this.bids.best;
    return b !== null && priceTicks <= b.priceTicks;
  }

  /** Best bid in ticks, NaN when there are no bids. */
  bestBid(): number {
    const b = this.bids.best;
    return b === null ? NaN : b.priceTicks;
  }

  /** Best ask in ticks, NaN when there are no asks. */
  bestAsk(): number {
    const a = this.asks.best;
    return a === null ? NaN : a.priceTicks;
  }

  /**
   * Writes up to maxLevels levels of `side`, best first, as [price, lots, price, lots, ...] from
   * index 0 of `out` (the caller's reusable array; entries past 2 * result are left untouched).
   * Returns the number of levels written.
   */
  depth(side: Side, maxLevels: number, out: number[]): number {
    let n = 0;
    for (let l = this.sideOf(side).best; l !== null && n < maxLevels; l = l.next) {
      out[2 * n] = l.priceTicks;
      out[2 * n + 1] = l.totalLots;
      n++;
    }
    return n;
  }

  /** Total resting lots of `side` at priceTicks (0 when there is no such level). */
  levelLots(side: Side, priceTicks: number): number {
    const l = this.sideOf(side).byPrice.get(priceTicks);
    return l === undefined ? 0 : l.totalLots;
  }

  orderCount(): number {
    return this.orders.size;
  }

  levelCount(side: Side): number {
    return this.sideOf(side).byPrice.size;
  }

  /** Visits resting orders in priority order: bids best first, then asks best first. */
  forEachResting(fn: (o: BookOrder) => void): void {
    for (const s of [this.bids, this.asks]) {
      for (let l = s.best; l !== null; l = l.next) {
        for (let o = l.head; o !== null; o = o.next) fn(o);
      }
    }
  }

  /**
   * Walks the whole book and throws InvariantError on the first inconsistency: not crossed, levels
   * strictly in price order with consistent links, each level non-empty with totals equal to the
   * sum of its orders, orders FIFO by seq with positive safe-integer sizes and correct back links,
   * the price maps and the tree hold exactly the listed levels, the id index holds exactly the
   * resting orders. O(orders + levels).
   */
  checkInvariants(): void {
    let listed = 0;
    for (const s of [this.bids, this.asks]) listed += this.checkSide(s);
    if (listed !== this.orders.size) fail(`id index holds ${this.orders.size} orders, levels hold ${listed}`);
    const b = this.bids.best;
    const a = this.asks.best;
    if (b !== null && a !== null) {
      if (b.priceTicks >= a.priceTicks) fail(`book crossed: bid ${b.priceTicks} >= ask ${a.priceTicks}`);
    }
    assert(this.freeCount <= LEVEL_POOL_MAX, 'level pool within its cap');
  }

  private checkSide(s: BookSide): number {
    let orders = 0;
    let levels = 0;
    let prev: Level | null = null;
    for (let l = s.best; l !== null; prev = l, l = l.next) {
      levels++;
      const at = `side ${s.side} price ${l.priceTicks}`;
      if (l.prev !== prev) fail(`${at}: level prev link`);
      if (l.side !== s.side) fail(`${at}: level side`);
      if (l.key !== (s.side === BUY ? -l.priceTicks : l.priceTicks)) fail(`${at}: level key`);
      if (prev !== null && prev.key >= l.key) fail(`${at}: levels strictly in price order`);
      if (s.byPrice.get(l.priceTicks) !== l) fail(`${at}: price map entry`);
      if (!(l.orderCount > 0 && l.head !== null && l.tail !== null)) fail(`${at}: level is not empty`);
      let n = 0;
      let sum = 0;
      let po: BookOrder | null = null;
      for (let o: BookOrder | null = l.head; o !== null; po = o, o = o.next) {
        n++;
        sum += o.remainingLots;
        const oat = `${at} order ${o.id}`;
        if (o.prev !== po) fail(`${oat}: order prev link`);
        if (o.level !== l) fail(`${oat}: order level link`);
        if (o.side !== s.side || o.priceTicks !== l.priceTicks) fail(`${oat}: order side/price`);
        if (!(Number.isSafeInteger(o.remainingLots) && o.remainingLots > 0)) fail(`${oat}: positive size`);
        if (po !== null && po.seq >= o.seq) fail(`${oat}: FIFO by seq`);
        if (!(o.seq > 0 && o.seq < this.nextSeq)) fail(`${oat}: seq assigned`);
        if (this.orders.get(o.id) !== o) fail(`${oat}: id index entry`);
      }
      if (po !== l.tail) fail(`${at}: tail link`);
      if (n !== l.orderCount) fail(`${at}: orderCount ${l.orderCount} vs ${n} orders`);
      if (sum !== l.totalLots) fail(`${at}: totalLots ${l.totalLots} vs sum ${sum}`);
      orders += n;
    }
    if (levels !== s.byPrice.size) fail(`side ${s.side}: price map size ${s.byPrice.size} vs ${levels} levels`);
    if (s.checkTree() !== levels) fail(`side ${s.side}: tree size`);
    return orders;
  }

  private sideOf(side: Side): BookSide {
    return side === BUY ? this.bids : this.asks;
  }

  /** Takes an order out of its level and the id index; drops the level when it empties. */
  private unlink(order: BookOrder): void {
    const level = order.level as Level;
    const p = order.prev;
    const n = order.next;
    if (p === null) level.head = n;
    else p.next = n;
    if (n === null) level.tail = p;
    else n.prev = p;
    order.prev = null;
    order.next = null;
    order.level = null;
    this.orders.delete(order.id);
    level.totalLots -= order.remainingLots;
    if (--level.orderCount === 0) {
      (level.side === BUY ? this.bids : this.asks).remove(level);
      this.releaseLevel(level);
    }
  }

  private newLevel(side: Side, price: number): Level {
    let level = this.freeLevels;
    if (level === null) {
      level = new Level();
    } else {
      this.freeLevels = level.next;
      this.freeCount--;
    }
    level.side = side;
    level.priceTicks = price;
    level.key = side === BUY ? -price : price;
    level.totalLots = 0;
    level.orderCount = 0;
    level.head = null;
    level.tail = null;
    level.next = null;
    level.prev = null;
    return level;
  }

  private releaseLevel(level: Level): void {
    if (this.freeCount >= LEVEL_POOL_MAX) return;
    level.head = null;
    level.tail = null;
    level.next = this.freeLevels;
    this.freeLevels = level;
    this.freeCount++;
  }
}
