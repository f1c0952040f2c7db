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
 * state is exactly the durable state). Shared by every group of the market.
 *
 * BookMirrors keeps the mirrors of one engine's markets ('linear': perps and dated futures;
 * 'clob': options and spot), fed by that engine's published `order` events only, and tells the
 * watchers of a market (the stream groups that read its mirror) when it changed. A market listed
 * after the start begins with an empty mirror (its first order event comes after the listing);
 * mirrors of markets that left the engine (expired options: their orders expired first, so the
 * mirrors are empty) are swept once SWEEP_SLACK of them have piled up, when nothing watches them.
 * Tested by test/streams/sse.test.ts (against the order book), book-stream.test.ts (against REST)
 * and options-events-stream.test.ts (option books).
 */
import { BUY, SELL, type BookOrder, type Side } from '../../core/book/order-book.ts';
import type { ExchangeEvent } from '../../core/events.ts';
import type { MarketUnits } from '../../core/markets.ts';
import type { EngineName, OrderRecord } from '../../core/records.ts';
import type { EventSink, StreamHub } from './hub.ts';

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

  /** The best price of `side` in ticks; NaN when the side is empty. */
  best(side: Side): number {
    return this.prices[side][0] ?? Number.NaN;
  }

  levelCount(side: Side): number {
    return this.prices[side].length;
  }

  get isEmpty(): boolean {
    return this.orders.size === 0;
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

/** What a mirrored market offers the stream views (LinearMarket and ClobMarket both do). */
export interface BookMarket {
  readonly spec: { readonly id: string };
  readonly units: MarketUnits;
  readonly status: string;
  readonly book: { forEachResting(fn: (o: BookOrder) => void): void };
}

/** A reader of a market's mirror, told after each published change (it reads on its own timer). */
export interface BookWatcher {
  onBookChange(at: number): void;
}

/** Mirrors of delisted markets tolerated before a sweep drops the empty, unwatched ones. */
const SWEEP_SLACK = 256;

/** The mirrors of one engine's markets, kept current by that engine's published order events. */
export class BookMirrors implements EventSink {
  private readonly mirrors = new Map<string, BookMirror>();
  private readonly watchers = new Map<string, Set<BookWatcher>>();
  /** Engine time of the latest book change per market (a new group's engineTs). */
  private readonly lastEventAt = new Map<string, number>();
  private nextSweep: number;

  /** The mirrors start from the recovered books (`seed`, called by the hub once recovery is done). */
  constructor(
    hub: StreamHub,
    readonly engine: EngineName,
    private readonly markets: () => ReadonlyMap<string, BookMarket>,
  ) {
    this.nextSweep = SWEEP_SLACK;
    hub.addSink(this);
  }

  seed(): void {
    this.mirrors.clear();
    for (const [id, market] of this.markets()) {
      const mirror = new BookMirror(market.units);
      market.book.forEachResting((o) => mirror.seed(String(o.id), o.side, o.priceTicks, o.remainingLots));
      this.mirrors.set(id, mirror);
    }
    this.nextSweep = this.mirrors.size + SWEEP_SLACK;
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    for (const e of events) {
      if (e.type !== 'order' || e.order.engine !== this.engine) continue;
      const id = e.order.marketId;
      const mirror = this.mirror(id);
      if (mirror === undefined || !mirror.apply(e.order)) continue;
      this.lastEventAt.set(id, e.order.updatedAt);
      const set = this.watchers.get(id);
      if (set !== undefined) for (const w of set) w.onBookChange(e.order.updatedAt);
    }
    if (this.mirrors.size >= this.nextSweep) this.sweep();
  }

  /** The market's mirror; a market listed after start begins with an empty book. */
  mirror(marketId: string): BookMirror | undefined {
    let mirror = this.mirrors.get(marketId);
    if (mirror === undefined) {
      const market = this.markets().get(marketId);
      if (market === undefined) return undefined;
      mirror = new BookMirror(market.units);
      this.mirrors.set(marketId, mirror);
    }
    return mirror;
  }

  /** Engine time of the market's latest published book change, or `fallback`. */
  changedAt(marketId: string, fallback: number): number {
    return this.lastEventAt.get(marketId) ?? fallback;
  }

  /** Registers a watcher of the market's changes; returns its removal. */
  watch(marketId: string, watcher: BookWatcher): () => void {
    let set = this.watchers.get(marketId);
    if (set === undefined) this.watchers.set(marketId, (set = new Set()));
    set.add(watcher);
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(marketId) === set) this.watchers.delete(marketId);
    };
  }

  /** Drops the mirrors of markets that left the engine, once empty and unwatched. */
  private sweep(): void {
    const listed = this.markets();
    for (const [id, mirror] of this.mirrors) {
      if (mirror.isEmpty && !listed.has(id) && !this.watchers.has(id)) {
        this.mirrors.delete(id);
        this.lastEventAt.delete(id);
      }
    }
    this.nextSweep = this.mirrors.size + SWEEP_SLACK;
  }
}
