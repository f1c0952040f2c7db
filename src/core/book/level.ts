/**
 * Level: all resting orders of one side at one price, as an intrusive FIFO (head = oldest = first
 * to trade), plus the links that place the level in its side's price order (prev = better price,
 * next = worse price) and in that side's red-black tree (left, right, parent, red).
 *
 * Invariants while the level is in a book: orderCount >= 1, totalLots = sum of its orders'
 * remainingLots, head/tail are the ends of the FIFO. `key` orders levels by priority in one
 * direction for both sides: key = priceTicks for asks and -priceTicks for bids, so "better" is
 * always "smaller key". Level objects are pooled by OrderBook and reset on reuse. Tested through
 * OrderBook.checkInvariants() in order-book.test.ts and order-book.property.test.ts.
 */

import type { BookOrder } from './order.ts';
import type { Side } from './types.ts';

export class Level {
  key: number;
  priceTicks: number;
  side: Side;
  totalLots: number;
  orderCount: number;
  head: BookOrder | null;
  tail: BookOrder | null;
  /** Neighbour with the better price (smaller key), or null when this is the best level. */
  prev: Level | null;
  /** Neighbour with the worse price (larger key), or null when this is the worst level. */
  next: Level | null;
  // Red-black tree links; the tree's sentinel NIL stands for "no node" (never null).
  left: Level;
  right: Level;
  parent: Level;
  red: boolean;

  constructor() {
    this.key = 0;
    this.priceTicks = 0;
    this.side = 0;
    this.totalLots = 0;
    this.orderCount = 0;
    this.head = null;
    this.tail = null;
    this.prev = null;
    this.next = null;
    // Self-links until the tree sets them; this also lets NIL be built from this class.
    this.left = this;
    this.right = this;
    this.parent = this;
    this.red = false;
  }
}

/**
 * The red-black tree sentinel, shared by every tree: black, its left/right point at itself. Its
 * parent is scratch space used transiently inside one delete (CLRS), which is safe because the
 * book is single-threaded and no tree operation is re-entered.
 */
export const NIL = new Level();
