/**
 * Order-book views for the perp streams. BookViews keeps one BookMirror per linear market (the
 * durable book, rebuilt from published `order` events) and one BookGroup per (market, depth,
 * intervalMs). Every interval, and only when the market's mirror changed since the last one, a
 * group reads the top `depth` levels of each side (`depth`, no allocation), diffs them against
 * the levels it last sent (a merge walk over two price-ordered lists), formats only the changed
 * levels and serializes the frame once for every member. No work per client, none in the core.
 *
 * Levels are `{ price, size, total }`, best first; `total` is the cumulative size from the top of
 * the book to that level. A level is sent in an update when its size changed, it entered the
 * depth window, or it left it (then with size "0" and total "0"). The `total` of a sent level is
 * current; totals of levels not sent may have moved with a change above them, so clients that
 * show totals recompute them from the sizes (they are running sums).
 *
 * Members are public book-stream connections (the whole frame is shared) and BookListeners (the
 * private events stream, which embeds the same serialized diff in its own frame). engineTs is the
 * engine time of the latest book event the frame reflects; sourceTs equals it (the engine is the
 * source of book data). Tested by test/streams/book-stream.test.ts.
 */
import { BUY, SELL } from '../../core/book/order-book.ts';
import type { ExchangeEvent } from '../../core/events.ts';
import type { LinearMarket } from '../../core/linear/market.ts';
import { dec } from '../format.ts';
import { BookMirror } from './book-mirror.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import type { SseConnection, StreamErrorCode } from './sse.ts';

/** A member that composes its own frames around the group's book diff. */
export interface BookListener {
  /** Every tick: the changed levels as `"bids":[...],"asks":[...]`, or null when nothing moved. */
  onBookTick(diff: string | null, engineTs: number): void;
  fail(code: StreamErrorCode, message: string, retryable: boolean): void;
}

interface Levels {
  readonly px: number[];
  readonly lots: number[];
  n: number;
}

export class BookGroup extends Group {
  private readonly publics = new Set<SseConnection>();
  private readonly listeners = new Set<BookListener>();
  private readonly bids: Levels = { px: [], lots: [], n: 0 };
  private readonly asks: Levels = { px: [], lots: [], n: 0 };
  private readonly scratch: number[] = [];
  private snapshotText: string | null = null;
  private snapshotChunk: Buffer | null = null;
  dirty = false;
  /** Engine time of the latest book change in the mirror (moves on every published change). */
  engineTs: number;
  /** Engine time of the levels members hold (set when the group reads the mirror). */
  private heldTs: number;

  constructor(
    hub: StreamHub,
    readonly market: LinearMarket,
    private readonly book: BookMirror,
    readonly depth: number,
    intervalMs: number,
    engineTs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
    this.engineTs = engineTs;
    this.heldTs = engineTs;
    this.refresh();
  }

  /** Adds a book-stream connection: its snapshot now, then every update of the group. */
  addPublic(conn: SseConnection): void {
    this.publics.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.publics.delete(conn)) this.release();
    });
    conn.write(this.publicSnapshot());
  }

  /** Adds a listener; returns its removal. The listener's snapshot comes from `snapshotLevels`. */
  addListener(listener: BookListener): () => void {
    this.listeners.add(listener);
    this.retain();
    return () => {
      if (this.listeners.delete(listener)) this.release();
    };
  }

  /** The levels members hold now, as `"bids":[...],"asks":[...]` (cached per seq). */
  snapshotLevels(): string {
    this.snapshotText ??= `"bids":[${this.allLevels(this.bids)}],"asks":[${this.allLevels(this.asks)}]`;
    return this.snapshotText;
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.publics]) conn.fail(code, message, retryable);
    for (const l of [...this.listeners]) l.fail(code, message, retryable);
  }

  protected tick(): void {
    if (this.market.status !== 'open') {
      this.failAll('INVALID_PARAMS', `market ${this.market.spec.id} is no longer trading`, false);
      return;
    }
    const diff = this.dirty ? this.refresh() : null;
    this.dirty = false;
    this.heldTs = this.engineTs;
    if (diff !== null) {
      this.seq++;
      this.snapshotText = null;
      this.snapshotChunk = null;
    }
    // one job for the shared frame (book-stream members) and the listeners' own frames
    const publics = diff === null ? [] : [...this.publics];
    const listeners = [...this.listeners];
    if (publics.length + listeners.length === 0) return;
    const frame = publics.length === 0 ? null : this.bookFrame('update', 'BookUpdate', diff!);
    const ts = this.heldTs;
    this.sendEach(publics.length + listeners.length, (i) => {
      if (i < publics.length) publics[i]!.write(frame!);
      else listeners[i - publics.length]!.onBookTick(diff, ts);
    });
  }

  private publicSnapshot(): Buffer {
    this.snapshotChunk ??= this.bookFrame('snapshot', 'BookSnapshot', this.snapshotLevels());
    return this.snapshotChunk;
  }

  private bookFrame(event: string, eventType: string, levels: string): Buffer {
    const payload = `{"marketId":${JSON.stringify(this.market.spec.id)},${levels}}`;
    return this.frame(event, eventType, this.heldTs, payload);
  }

  /** Reads the book; returns the changed levels, or null when none changed. */
  private refresh(): string | null {
    const n = this.book.depth(BUY, this.depth, this.scratch);
    const bids = this.diffSide(this.bids, n, BUY);
    const m = this.book.depth(SELL, this.depth, this.scratch);
    const asks = this.diffSide(this.asks, m, SELL);
    if (bids === '' && asks === '') return null;
    return `"bids":[${bids}],"asks":[${asks}]`;
  }

  /** Merge walk of the sent levels and the scratch levels (both in book order); updates `prev`. */
  private diffSide(prev: Levels, n: number, side: 0 | 1): string {
    const cur = this.scratch;
    const out: string[] = [];
    let i = 0;
    let j = 0;
    let total = 0;
    while (i < prev.n || j < n) {
      const p = prev.px[i]!;
      const c = cur[2 * j]!;
      // < 0: the sent level comes first (it left); > 0: the new level comes first (it entered)
      const order = j >= n ? -1 : i >= prev.n ? 1 : side === BUY ? c - p : p - c;
      if (order < 0) {
        out.push(this.level(p, 0, 0));
        i++;
        continue;
      }
      const lots = cur[2 * j + 1]!;
      total += lots;
      if (order > 0 || prev.lots[i] !== lots) out.push(this.level(c, lots, total));
      if (order === 0) i++;
      j++;
    }
    for (let k = 0; k < n; k++) {
      prev.px[k] = cur[2 * k]!;
      prev.lots[k] = cur[2 * k + 1]!;
    }
    prev.n = n;
    return out.join(',');
  }

  private allLevels(levels: Levels): string {
    const out: string[] = [];
    let total = 0;
    for (let k = 0; k < levels.n; k++) {
      total += levels.lots[k]!;
      out.push(this.level(levels.px[k]!, levels.lots[k]!, total));
    }
    return out.join(',');
  }

  private level(priceTicks: number, lots: number, totalLots: number): string {
    const u = this.market.units;
    const price = dec(u.price(priceTicks));
    return `{"price":"${price}","size":"${dec(u.size(lots))}","total":"${dec(u.size(totalLots))}"}`;
  }
}

/** The book mirrors, the registry of book groups, and the sink that keeps both current. */
export class BookViews implements EventSink {
  private readonly mirrors = new Map<string, BookMirror>();
  private readonly groups = new Map<string, BookGroup>();
  private readonly byMarket = new Map<string, Set<BookGroup>>();
  /** Engine time of the latest book change per market (a new group's engineTs). */
  private readonly lastEventAt = new Map<string, number>();

  /** Construct before the service takes commands: the mirrors start from the recovered books. */
  constructor(private readonly hub: StreamHub) {
    for (const [id, market] of hub.ctx.exchange.linear.markets) {
      const mirror = new BookMirror(market.units);
      market.book.forEachResting((o) => mirror.seed(String(o.id), o.side, o.priceTicks, o.remainingLots));
      this.mirrors.set(id, mirror);
    }
    hub.addSink(this);
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    for (const e of events) {
      if (e.type !== 'order' || e.order.engine !== 'linear') continue;
      const mirror = this.mirror(e.order.marketId);
      if (mirror !== undefined && mirror.apply(e.order)) this.touch(e.order.marketId, e.order.updatedAt);
    }
  }

  /** The group for (market, depth, interval), made now if new. */
  group(market: LinearMarket, depth: number, intervalMs: number): BookGroup {
    const key = `${market.spec.id}|${depth}|${intervalMs}`;
    let group = this.groups.get(key);
    if (group === undefined) {
      const id = market.spec.id;
      const engineTs = this.lastEventAt.get(id) ?? this.hub.ctx.exchange.now();
      const forget = () => {
        this.groups.delete(key);
        const set = this.byMarket.get(id);
        set?.delete(created);
        if (set?.size === 0) this.byMarket.delete(id);
      };
      const mirror = this.mirror(id)!;
      const created: BookGroup = new BookGroup(this.hub, market, mirror, depth, intervalMs, engineTs, forget);
      group = created;
      this.groups.set(key, group);
      let set = this.byMarket.get(id);
      if (set === undefined) this.byMarket.set(id, (set = new Set()));
      set.add(group);
    }
    return group;
  }

  /** The market's mirror; a market listed after start begins with an empty book. */
  mirror(marketId: string): BookMirror | undefined {
    let mirror = this.mirrors.get(marketId);
    if (mirror === undefined) {
      const market = this.hub.ctx.exchange.linear.markets.get(marketId);
      if (market === undefined) return undefined;
      mirror = new BookMirror(market.units);
      this.mirrors.set(marketId, mirror);
    }
    return mirror;
  }

  private touch(marketId: string, at: number): void {
    this.lastEventAt.set(marketId, at);
    const set = this.byMarket.get(marketId);
    if (set === undefined) return;
    for (const g of set) {
      g.dirty = true;
      if (at > g.engineTs) g.engineTs = at;
    }
  }
}
