/**
 * BookSide: the levels of one side of the book. Three views of the same set of levels, kept in step:
 *   - byPrice: Map<priceTicks, Level> for O(1) lookup of an existing level,
 *   - a doubly linked list in priority order (best first) with `best` cached, for O(1) best access
 *     and O(depth) traversal,
 *   - a red-black tree keyed by Level.key (CLRS, sentinel NIL), for O(log L) placement of a new
 *     level: the parent reached by the insert descent is the new level's list neighbour.
 * The tree's shape depends only on the sequence of inserts and removes (no randomness).
 *
 * Assumes the caller inserts only levels whose price is not yet present and removes only levels
 * that are present. Tested via OrderBook.checkInvariants() (which calls checkTree()) in
 * order-book.test.ts and order-book.property.test.ts.
 */

import { assert, fail } from '../assert.ts';
import { Level, NIL } from './level.ts';
import type { Side } from './types.ts';

export class BookSide {
  readonly side: Side;
  readonly byPrice = new Map<number, Level>();
  best: Level | null = null;
  root: Level = NIL;

  constructor(side: Side) {
    this.side = side;
  }

  /** Adds a new level (key and priceTicks set, not yet present): O(log L). */
  insert(z: Level): void {
    let y = NIL;
    let x = this.root;
    const k = z.key;
    while (x !== NIL) {
      y = x;
      x = k < x.key ? x.left : x.right;
    }
    z.parent = y;
    z.left = NIL;
    z.right = NIL;
    z.red = true;
    if (y === NIL) {
      this.root = z;
      z.prev = null;
      z.next = null;
    } else if (k < y.key) {
      // z is y's left leaf, so y is z's in-order successor: z goes just before y in the list.
      y.left = z;
      const p = y.prev;
      z.prev = p;
      z.next = y;
      y.prev = z;
      if (p !== null) p.next = z;
    } else {
      // z is y's right leaf, so y is z's in-order predecessor: z goes just after y.
      y.right = z;
      const n = y.next;
      z.prev = y;
      z.next = n;
      y.next = z;
      if (n !== null) n.prev = z;
    }
    if (z.prev === null) this.best = z;
    this.byPrice.set(z.priceTicks, z);
    this.insertFixup(z);
  }

  /** Removes a present level from all three views: O(log L) (amortised O(1) rotations). */
  remove(z: Level): void {
    this.byPrice.delete(z.priceTicks);
    const p = z.prev;
    const n = z.next;
    if (p === null) this.best = n;
    else p.next = n;
    if (n !== null) n.prev = p;
    this.treeDelete(z, n);
    z.prev = null;
    z.next = null;
  }

  private insertFixup(z: Level): void {
    while (z.parent.red) {
      const p = z.parent;
      const g = p.parent;
      if (p === g.left) {
        const u = g.right;
        if (u.red) {
          p.red = false;
          u.red = false;
          g.red = true;
          z = g;
        } else {
          if (z === p.right) {
            z = p;
            this.rotateLeft(z);
          }
          z.parent.red = false;
          z.parent.parent.red = true;
          this.rotateRight(z.parent.parent);
        }
      } else {
        const u = g.left;
        if (u.red) {
          p.red = false;
          u.red = false;
          g.red = true;
          z = g;
        } else {
          if (z === p.left) {
            z = p;
            this.rotateRight(z);
          }
          z.parent.red = false;
          z.parent.parent.red = true;
          this.rotateLeft(z.parent.parent);
        }
      }
    }
    this.root.red = false;
  }

  /** CLRS RB-DELETE; `succ` is z's in-order successor (its list `next`), saving a tree walk. */
  private treeDelete(z: Level, succ: Level | null): void {
    let y = z;
    let yWasRed = y.red;
    let x: Level;
    if (z.left === NIL) {
      x = z.right;
      this.transplant(z, z.right);
    } else if (z.right === NIL) {
      x = z.left;
      this.transplant(z, z.left);
    } else {
      assert(succ !== null, 'level with two children has a successor');
      y = succ;
      yWasRed = y.red;
      x = y.right;
      if (y.parent === z) {
        x.parent = y; // x may be NIL: fixup reads NIL.parent
      } else {
        this.transplant(y, y.right);
        y.right = z.right;
        y.right.parent = y;
      }
      this.transplant(z, y);
      y.left = z.left;
      y.left.parent = y;
      y.red = z.red;
    }
    if (!yWasRed) this.deleteFixup(x);
    z.left = NIL;
    z.right = NIL;
    z.parent = NIL;
  }

  private deleteFixup(x: Level): void {
    while (x !== this.root && !x.red) {
      const p = x.parent;
      if (x === p.left) {
        let w = p.right;
        if (w.red) {
          w.red = false;
          p.red = true;
          this.rotateLeft(p);
          w = p.right;
        }
        if (!w.left.red && !w.right.red) {
          w.red = true;
          x = p;
        } else {
          if (!w.right.red) {
            w.left.red = false;
            w.red = true;
            this.rotateRight(w);
            w = p.right;
          }
          w.red = p.red;
          p.red = false;
          w.right.red = false;
          this.rotateLeft(p);
          x = this.root;
        }
      } else {
        let w = p.left;
        if (w.red) {
          w.red = false;
          p.red = true;
          this.rotateRight(p);
          w = p.left;
        }
        if (!w.right.red && !w.left.red) {
          w.red = true;
          x = p;
        } else {
          if (!w.left.red) {
            w.right.red = false;
            w.red = true;
            this.rotateLeft(w);
            w = p.left;
          }
          w.red = p.red;
          p.red = false;
          w.left.red = false;
          this.rotateRight(p);
          x = this.root;
        }
      }
    }
    x.red = false;
  }

  private transplant(u: Level, v: Level): void {
    const p = u.parent;
    if (p === NIL) this.root = v;
    else if (u === p.left) p.left = v;
    else p.right = v;
    v.parent = p;
  }

  private rotateLeft(x: Level): void {
    const y = x.right;
    x.right = y.left;
    if (y.left !== NIL) y.left.parent = x;
    this.transplant(x, y);
    y.left = x;
    x.parent = y;
  }

  private rotateRight(x: Level): void {
    const y = x.left;
    x.left = y.right;
    if (y.right !== NIL) y.right.parent = x;
    this.transplant(x, y);
    y.right = x;
    x.parent = y;
  }

  /**
   * Checks the tree against the list: in-order traversal visits exactly the listed levels in list
   * order, parent links are consistent, the root is black, no red node has a red child and every
   * root-to-leaf path has the same number of black nodes. Returns the number of levels. O(L).
   */
  checkTree(): number {
    assert(NIL.left === NIL && NIL.right === NIL && !NIL.red, 'tree sentinel is intact');
    assert(!this.root.red, 'tree root is black');
    assert(this.root === NIL || this.root.parent === NIL, 'tree root has no parent');
    const cursor = { next: this.best, count: 0 };
    this.checkSubtree(this.root, cursor);
    assert(cursor.next === null, 'every listed level is in the tree');
    return cursor.count;
  }

  /** In-order walk that consumes the list in step; returns the subtree's black height. */
  private checkSubtree(n: Level, cursor: { next: Level | null; count: number }): number {
    if (n === NIL) return 1;
    if (n.left !== NIL) assert(n.left.parent === n, 'left child points back at its parent');
    if (n.right !== NIL) assert(n.right.parent === n, 'right child points back at its parent');
    if (n.red) assert(!n.left.red && !n.right.red, 'no red node has a red child');
    const hl = this.checkSubtree(n.left, cursor);
    if (cursor.next !== n) fail(`tree in-order matches the level list at price ${n.priceTicks}`);
    cursor.next = n.next;
    cursor.count++;
    const hr = this.checkSubtree(n.right, cursor);
    if (hl !== hr) fail(`equal black heights under price ${n.priceTicks}`);
    return hl + (n.red ? 0 : 1);
  }
}
