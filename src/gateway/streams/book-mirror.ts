/**
 * The resting book of one market as the published (durable) events say it is. The journal is
 * written while the core goes on applying commands, so the core's live book can hold orders a
 * crash would take back; streams read this mirror instead, which changes only when the sequencer
 * publishes `order` events after their batch is durable.
 *
 * An order rests iff its latest record has status `open`, type `limit`, a price and remaining
 * quantity; each order contributes its remaining lots to its price level, and the levels of each
 * side are kept with their prices in book order (bids descending, asks ascending) by binary
 * search, so `depth` walks the best levels without sorting, like `OrderBook.depth`.
 *
 * Seeded from the core's book when the service starts (right after journal recovery, when the live
 * state is exactly the durable state). Shared by every group of the market. Tested by
 * test/streams/sse.test.ts (against the order book) and book-stream.test.ts (against REST).
 */
import { BUY, SELL, type Side } from '../../core/book/order-book.ts';
import type { MarketUnits } from '../../core/markets.ts';
import type { OrderRecord } from '../../core/records.ts';

interface Resting {
  readonly side: Side;
  readonly ticks: number;
  readonly lots: number;
}

export class BookMirror {
  private readonly orders = new Map<string, Resting>();
  private readonly lots: [Map<number, number>, Map<number, number>] = [new Map(), new Map()];
  private readonly prices: [number[], number[]] = [[], []];

  constructor(readonly units: MarketUnits) {}

  /** Adds an order resting at startup. */
  seed(id: string, side: Side, ticks: number, lots: number): void {
    this.orders.set(id, { side, ticks, lots });
    this.change(side, ticks, lots);
  }

  /** Applies an order's latest record; returns whether any level changed. */
  apply(order: OrderRecord): boolean {
    const before = this.orders.get(order.id);
    const live = order.status === 'open' && order.type === 'limit';
    const rests = live && order.price !== null && order.remainingQuantity > 0n;
    if (!rests) {
      if (before === undefined) return false;
      this.orders.delete(order.id);
      this.change(before.side, before.ticks, -before.lots);
      return true;
    }
    const side: Side = order.side === 'buy' ? BUY : SELL;
    const ticks = this.units.ticks(order.price!);
    const lots = this.units.lots(order.remainingQuantity);
    if (before !== undefined) {
      if (before.side === side && before.ticks === ticks && before.lots === lots) return false;
      this.change(before.side, before.ticks, -before.lots);
    }
    this.orders.set(order.id, { side, ticks, lots });
    this.change(side, ticks, lots);
    return true;
  }

  /** Like OrderBook.depth: up to maxLevels of `side`, best first, as [ticks, lots, ...]. */
  depth(side: Side, maxLevels: number, out: number[]): number {
    const prices = this.prices[side];
    const lots = this.lots[side];
    const n = Math.min(maxLevels, prices.length);
    for (let i = 0; i < n; i++) {
      const p = prices[i]!;
      out[2 * i] = p;
      out[2 * i + 1] = lots.get(p)!;
    }
    return n;
  }

  levelCount(side: Side): number {
    return this.prices[side].length;
  }

  private change(side: Side, ticks: number, delta: number): void {
    const map = this.lots[side];
    const now = (map.get(ticks) ?? 0) + delta;
    const prices = this.prices[side];
    if (now === 0) {
      map.delete(ticks);
      prices.splice(this.position(side, ticks), 1);
      return;
    }
    if (!map.has(ticks)) prices.splice(this.position(side, ticks), 0, ticks);
    map.set(ticks, now);
  }

  /** Index of the first price not better than `ticks` (where it is or would be). */
  private position(side: Side, ticks: number): number {
    const prices = this.prices[side];
    let lo = 0;
    let hi = prices.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const better = side === BUY ? prices[mid]! > ticks : prices[mid]! < ticks;
      if (better) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
