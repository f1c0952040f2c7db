/**
 * Order-book views for the perp streams. BookViews keeps the linear engine's BookMirrors (the
 * durable books, rebuilt from published `order` events; spot pairs read the CLOB engine's) and one BookGroup per (market, depth,
 * intervalMs). Every interval, and only when the market's mirror changed since the last one, a
 * group diffs the top `depth` levels against the levels it last sent (BookLevels, book-levels.ts,
 * which also defines the level format and the "0" removal) and serializes the frame once for
 * every member. No work per client, none in the core.
 *
 * Members are public book-stream connections (the whole frame is shared) and BookListeners (the
 * private events stream, which embeds the same serialized diff in its own frame). engineTs is the
 * engine time of the latest book event the frame reflects; sourceTs equals it (the engine is the
 * source of book data). Book-stream members may resume after a reconnect (the group keeps its
 * shared update frames: hub.ts Group); listeners never do, their frames are their own.
 * Tested by test/streams/book-stream.test.ts.
 */
import { BookLevels } from './book-levels.ts';
import { BookMirrors, type BookMarket, type BookMirror, type BookWatcher } from './book-mirror.ts';
import { Group, type StreamHub } from './hub.ts';
import type { StreamConnection, StreamErrorCode } from './sse.ts';

/** A member that composes its own frames around the group's book diff. */
export interface BookListener {
  /** Every tick: the changed levels as `"bids":[...],"asks":[...]`, or null when nothing moved. */
  onBookTick(diff: string | null, engineTs: number): void;
  fail(code: StreamErrorCode, message: string, retryable: boolean): void;
}

export class BookGroup extends Group implements BookWatcher {
  private readonly publics = new Set<StreamConnection>();
  private readonly listeners = new Set<BookListener>();
  private readonly levels: BookLevels;
  private snapshotChunk: Buffer | null = null;
  private dirty = false;
  private closing = false;
  /** Engine time of the latest book change in the mirror (moves on every published change). */
  private engineTs: number;
  /** Engine time of the levels members hold (set when the group reads the mirror). */
  private heldTs: number;

  constructor(
    hub: StreamHub,
    readonly market: BookMarket,
    book: BookMirror,
    readonly depth: number,
    intervalMs: number,
    engineTs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
    this.engineTs = engineTs;
    this.heldTs = engineTs;
    this.levels = new BookLevels(book, market.units, depth);
  }

  onBookChange(at: number): void {
    this.dirty = true;
    if (at > this.engineTs) this.engineTs = at;
  }

  /**
   * Adds a book-stream connection: its snapshot now (or, resuming after `resumeAfter`, the updates
   * it missed: Group.resumeFrom), then every update of the group.
   */
  addPublic(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.publics.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.publics.delete(conn)) this.release();
    });
    if (!this.resumeFrom(conn, resumeAfter)) conn.write(this.publicSnapshot());
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
    return this.levels.snapshot();
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.publics]) conn.fail(code, message, retryable);
    for (const l of [...this.listeners]) l.fail(code, message, retryable);
  }

  protected tick(): void {
    if (this.market.status !== 'open') {
      this.close();
      return;
    }
    const diff = this.dirty ? this.levels.refresh() : null;
    this.dirty = false;
    this.heldTs = this.engineTs;
    if (diff !== null) {
      this.advance();
      this.snapshotChunk = null;
    }
    // one job for the shared frame (book-stream members) and the listeners' own frames
    const publics = diff === null ? [] : [...this.publics];
    const listeners = [...this.listeners];
    if (publics.length + listeners.length === 0) return;
    // kept for resuming book-stream members; a seq with listeners only has no shared frame (no resume across it)
    const frame = publics.length === 0 ? null : this.bookFrame('update', 'BookUpdate', diff!);
    if (frame !== null) this.keep(frame);
    const ts = this.heldTs;
    this.sendEach(publics.length + listeners.length, (i) => {
      if (i < publics.length) publics[i]!.write(frame!);
      else listeners[i - publics.length]!.onBookTick(diff, ts);
    });
  }

  /**
   * The market stopped trading (a dated future expired): once what the core did until now is
   * durable and published, the listeners get a last frame with what they still hold (the expiry's
   * cancellations, and the settlement's fills and positions when it settled at once), then every
   * member's stream ends. Settled later, those reach the account on /perps/stream/user.
   */
  private close(): void {
    if (this.closing) return;
    this.closing = true;
    const end = () => this.failAll('INVALID_PARAMS', `market ${this.market.spec.id} is no longer trading`, false);
    this.hub.ctx.sequencer.barrier().then(() => {
      const diff = this.dirty ? this.levels.refresh() : null;
      for (const listener of [...this.listeners]) listener.onBookTick(diff, this.engineTs);
      end();
    }, end);
  }

  private publicSnapshot(): Buffer {
    this.snapshotChunk ??= this.bookFrame('snapshot', 'BookSnapshot', this.snapshotLevels());
    return this.snapshotChunk;
  }

  private bookFrame(event: string, eventType: string, levels: string): Buffer {
    const payload = `{"marketId":${JSON.stringify(this.market.spec.id)},${levels}}`;
    return this.frame(event, eventType, this.heldTs, payload);
  }
}

/**
 * The linear book mirrors and the registry of book groups. The book stream also serves the spot
 * pairs `/perps/markets` lists, from the CLOB engine's mirrors (shared with the options streams).
 */
export class BookViews {
  private readonly linear: BookMirrors;
  private readonly groups = new Map<string, BookGroup>();

  /** The mirrors start from the recovered books (BookMirrors.seed). */
  constructor(private readonly hub: StreamHub, private readonly clob: BookMirrors) {
    this.linear = new BookMirrors(hub, 'linear', () => hub.ctx.core.linearMarkets());
  }

  /** The group for (market, depth, interval), made now if new. */
  group(market: BookMarket, depth: number, intervalMs: number): BookGroup {
    const id = market.spec.id;
    const key = `${id}|${depth}|${intervalMs}`;
    let group = this.groups.get(key);
    if (group === undefined) {
      const mirrors = this.hub.ctx.core.linearMarkets().has(id) ? this.linear : this.clob;
      const engineTs = mirrors.changedAt(id, this.hub.ctx.core.now());
      const mirror = mirrors.mirror(id)!;
      let unwatch = (): void => undefined;
      const forget = () => {
        this.groups.delete(key);
        unwatch();
      };
      group = new BookGroup(this.hub, market, mirror, depth, intervalMs, engineTs, forget);
      unwatch = mirrors.watch(id, group);
      this.groups.set(key, group);
    }
    return group;
  }
}
