/**
 * Per-command scratch collections the engines reuse on every command instead of a fresh or
 * cleared `Set`/`Map` (V8 allocates a new hash table on every `clear()`, and the hot path clears
 * several per order). A command usually touches a handful of objects, so a linear scan of a reused
 * array is both faster and allocation-free; past `INDEX_FROM` entries (a cancel-all, a liquidation
 * sweeping the book) an index map keeps lookups O(1).
 *
 * Both keep insertion order, which the engines rely on to emit events in a deterministic order.
 */

const INDEX_FROM = 16;

/** An insertion-ordered set of distinct objects, emptied by `reset()` without allocating. */
export class TouchedSet<T> {
  private items: (T | undefined)[] = [];
  private count = 0;
  /** Position of each item, built only once the set grows past INDEX_FROM. */
  private index: Map<T, number> | null = null;

  get size(): number {
    return this.count;
  }

  add(item: T): void {
    if (this.indexOf(item) >= 0) return;
    this.items[this.count] = item;
    if (this.index !== null) this.index.set(item, this.count);
    else if (this.count + 1 > INDEX_FROM) this.buildIndex(this.count + 1);
    this.count++;
  }

  /** Position of `item` in insertion order, or -1. */
  indexOf(item: T): number {
    if (this.index !== null) return this.index.get(item) ?? -1;
    const items = this.items;
    for (let i = 0; i < this.count; i++) if (items[i] === item) return i;
    return -1;
  }

  has(item: T): boolean {
    return this.indexOf(item) >= 0;
  }

  /** Removes `item`, keeping the others in order (rare: an amend detaching an order). */
  delete(item: T): void {
    const at = this.indexOf(item);
    if (at < 0) return;
    const items = this.items;
    for (let i = at; i < this.count - 1; i++) items[i] = items[i + 1];
    items[--this.count] = undefined;
    if (this.index !== null) this.buildIndex(this.count);
  }

  /** The item at `i` (0 <= i < size), in insertion order. */
  at(i: number): T {
    return this.items[i] as T;
  }

  /** Empties the set; references are dropped so touched objects can be collected. */
  reset(): void {
    const items = this.items;
    for (let i = 0; i < this.count; i++) items[i] = undefined;
    this.count = 0;
    this.index = null;
  }

  private buildIndex(upTo: number): void {
    const index = new Map<T, number>();
    for (let i = 0; i < upTo; i++) index.set(this.items[i] as T, i);
    this.index = upTo > INDEX_FROM ? index : null;
  }
}

/** Running bigint sums per key (realised PnL or fees per account within one execution). */
export class PendingSums<K> {
  private readonly keys = new TouchedSet<K>();
  private sums: bigint[] = [];

  get size(): number {
    return this.keys.size;
  }

  add(key: K, amount: bigint): void {
    let at = this.keys.indexOf(key);
    if (at < 0) {
      at = this.keys.size;
      this.keys.add(key);
      this.sums[at] = 0n;
    }
    this.sums[at]! += amount;
  }

  /** The running sum of `key` (0 when it has none). */
  sumOf(key: K): bigint {
    const at = this.keys.indexOf(key);
    return at < 0 ? 0n : this.sums[at]!;
  }

  keyAt(i: number): K {
    return this.keys.at(i);
  }

  sumAt(i: number): bigint {
    return this.sums[i]!;
  }

  reset(): void {
    this.keys.reset();
  }
}
