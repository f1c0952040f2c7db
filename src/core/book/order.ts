/**
 * BookOrder: one resting (or about to rest) order as the book sees it. Engines subclass it to carry
 * their own fields (account, client id, flags); the book reads only the fields declared here.
 *
 * Assumes id is unique among resting orders of one book, priceTicks a positive safe integer and
 * lots a positive safe integer; OrderBook.rest() asserts all three. The intrusive links (prev,
 * next, level) belong to the book: they are null whenever the order is not resting, and engines
 * must not write them. Tested through order-book.test.ts and order-book.property.test.ts.
 */

import type { Level } from './level.ts';
import type { Side } from './types.ts';

export class BookOrder {
  readonly id: number;
  readonly owner: number;
  readonly side: Side;
  /** Changed by an engine only while the order is not resting (an amend that re-queues it). */
  priceTicks: number;
  /** Lots still open. The book lowers it on fills and reduce(); it is > 0 while resting. */
  remainingLots: number;
  /** Time priority, assigned by the book on rest (strictly increasing per book); 0 until rested. */
  seq: number;
  /** Earlier order at the same level (closer to the head), or null. Book-owned. */
  prev: BookOrder | null;
  /** Later order at the same level (closer to the tail), or null. Book-owned. */
  next: BookOrder | null;
  /** The level this order rests in, or null when it is not resting. Book-owned. */
  level: Level | null;

  constructor(id: number, owner: number, side: Side, priceTicks: number, lots: number) {
    // Every field is assigned here, in one fixed order, so all BookOrders (and the subclasses'
    // base part) share one hidden class and the book's property accesses stay monomorphic.
    this.id = id;
    this.owner = owner;
    this.side = side;
    this.priceTicks = priceTicks;
    this.remainingLots = lots;
    this.seq = 0;
    this.prev = null;
    this.next = null;
    this.level = null;
  }
}
