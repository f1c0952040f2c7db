/**
 * GET /options/stream/events: one option instrument's tradable book, its public trade tape and,
 * on request, a reference overlay from the option board.
 *
 * Everything in this stream is public market data (the private tier only gates who may open it),
 * so a whole frame is shared: one OptionsGroup per (market, depth, intervalMs, includeReference)
 * diffs the book once per tick (BookLevels over the CLOB engine's BookMirrors, fed by published
 * `order` events with engine 'clob'), collects the trades published since its last frame,
 * serializes one frame and writes it to every member through the hub's sliced fan-out. A frame
 * goes out only when something changed: levels, trades, or the overlay.
 *
 *   snapshot  OptionsStreamSnapshot  { marketId, orderbook: { bids, asks }, trades: [], reference? }
 *   delta     OptionsStreamDelta     { marketId, orderbook: changed levels only, trades, reference? }
 *
 * Levels are `{ price, size, total }` (a removed level has size "0"). A tape entry is
 * `{ side, price, quantity, liquidity, createdAt }` from the aggressor's view: `side` is the
 * taker's side and `liquidity` is always "taker"; it names no account, order or counterparty (no
 * id of any kind). `reference` is present only with includeReference=true, in the snapshot and
 * every delta: `{ markPrice, source, tradable: false }`, where markPrice is the board's fresh mark
 * (the SVI fit of the instrument's expiry, `source` "svi-fit"), and both are null while the board
 * has no fresh mark for it. The reference is never tradable; orders route against the book.
 *
 * A joiner's snapshot is the state the group's members hold (the levels and overlay of the last
 * frame, at the group's seq); trades published before it but after that frame come in the next
 * delta together with the book change they caused, so the snapshot plus the deltas never
 * contradict the book. A member that reconnects with `resume=true` and Last-Event-ID gets the
 * deltas it missed (their trades included) instead of the snapshot while the group still keeps
 * them (hub.ts Group). Trades pending in one interval are bounded: at MAX_PENDING_TRADES a frame
 * goes out early. The group ends its members with INVALID_PARAMS (not retryable) when the
 * instrument stops trading (expiry). Tested by test/streams/options-events-stream.test.ts.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import type { FillRecord } from '../../core/records.ts';
import type { ClobMarketView } from '../../core/queries.ts';
import { dec, iso } from '../format.ts';
import { BookLevels } from './book-levels.ts';
import type { BookMirror, BookMirrors, BookWatcher } from './book-mirror.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import type { StreamConnection, StreamErrorCode } from './sse.ts';

export interface OptionsQuery {
  readonly market: ClobMarketView;
  readonly depth: number;
  readonly intervalMs: number;
  readonly includeReference: boolean;
}

/** Trades waiting in one interval before a frame is sent early. */
export const MAX_PENDING_TRADES = 2000;

/** The surface the reference mark comes from. */
export const REFERENCE_SOURCE = 'svi-fit';

/** A public tape entry: the aggressor's side, price and size; no ids of any kind. */
export function tapeJson(fill: FillRecord): string {
  return JSON.stringify({
    side: fill.takerSide,
    price: dec(fill.price),
    quantity: dec(fill.quantity),
    liquidity: 'taker',
    createdAt: iso(fill.at),
  });
}

export class OptionsGroup extends Group implements BookWatcher {
  private readonly members = new Set<StreamConnection>();
  private readonly levels: BookLevels;
  private readonly marketJson: string;
  private trades: string[] = [];
  /** The overlay members hold (JSON), or null when the group does not carry one. */
  private reference: string | null;
  private snapshotChunk: Buffer | null = null;
  private dirty = false;
  /** Engine time of the latest change the group has seen, and of the state members hold. */
  private latestTs: number;
  private heldTs: number;

  constructor(
    hub: StreamHub,
    readonly market: ClobMarketView,
    book: BookMirror,
    depth: number,
    intervalMs: number,
    readonly includeReference: boolean,
    engineTs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
    this.levels = new BookLevels(book, market.units, depth);
    this.marketJson = JSON.stringify(market.spec.id);
    this.latestTs = engineTs;
    this.heldTs = engineTs;
    this.reference = includeReference ? this.referenceJson() : null;
  }

  /**
   * Adds a connection: its snapshot now (or, resuming after `resumeAfter`, the deltas it missed:
   * Group.resumeFrom), then every delta of the group.
   */
  join(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.members.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.members.delete(conn)) this.release();
    });
    if (this.resumeFrom(conn, resumeAfter)) return;
    this.snapshotChunk ??= this.frame('snapshot', 'OptionsStreamSnapshot', this.heldTs, this.payload(
      this.levels.snapshot(),
      '',
    ));
    conn.write(this.snapshotChunk);
  }

  onBookChange(at: number): void {
    this.dirty = true;
    if (at > this.latestTs) this.latestTs = at;
  }

  onTrade(json: string, at: number): void {
    this.trades.push(json);
    if (at > this.latestTs) this.latestTs = at;
    if (this.trades.length >= MAX_PENDING_TRADES) this.flushSoon();
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    if (this.market.status !== 'open') {
      this.failAll('INVALID_PARAMS', `instrument ${this.market.spec.id} is no longer trading`, false);
      return;
    }
    const diff = this.dirty ? this.levels.refresh() : null;
    this.dirty = false;
    const reference = this.includeReference ? this.referenceJson() : null;
    const referenceMoved = reference !== this.reference;
    if (diff === null && this.trades.length === 0 && !referenceMoved) return;
    if (referenceMoved) {
      const computedAt = this.hub.ctx.core.optionBoard(this.market.underlying)?.computedAt ?? 0;
      if (computedAt > this.latestTs) this.latestTs = computedAt;
    }
    this.advance();
    this.snapshotChunk = null;
    this.reference = reference;
    this.heldTs = this.latestTs;
    const trades = this.trades.join(',');
    this.trades = [];
    const payload = this.payload(diff ?? '"bids":[],"asks":[]', trades);
    const frame = this.frame('delta', 'OptionsStreamDelta', this.heldTs, payload);
    this.send(frame, this.members);
  }

  private payload(levels: string, trades: string): string {
    const reference = this.reference === null ? '' : `,"reference":${this.reference}`;
    return `{"marketId":${this.marketJson},"orderbook":{${levels}},"trades":[${trades}]${reference}}`;
  }

  /**
   * `{ markPrice, source, tradable: false }` from the board's fresh mark of this instrument, shown
   * only while the index is fresh (as GET /markets/board: the board keeps the last tick's marks).
   */
  private referenceJson(): string {
    const ctx = this.hub.ctx;
    const now = ctx.now();
    const indexed = ctx.core.indexPrice(this.market.underlying, now) !== null;
    const mark = indexed ? ctx.core.optionMark(this.market.spec.id, now)?.mark ?? null : null;
    const markPrice = mark === null ? null : dec(mark);
    const source = markPrice === null ? null : REFERENCE_SOURCE;
    return JSON.stringify({ markPrice, source, tradable: false });
  }
}

/** The registry of options groups over the CLOB book mirrors, and the sink feeding them trades. */
export class OptionsViews implements EventSink {
  private readonly groups = new Map<string, OptionsGroup>();
  private readonly byMarket = new Map<string, Set<OptionsGroup>>();

  /** `mirrors`: the CLOB engine's, shared with the book stream's spot pairs and the board stream. */
  constructor(private readonly hub: StreamHub, readonly mirrors: BookMirrors) {
    hub.addSink(this);
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    if (this.byMarket.size === 0) return;
    for (const e of events) {
      if (e.type !== 'fill' || e.fill.engine !== 'clob') continue;
      const set = this.byMarket.get(e.fill.marketId);
      if (set === undefined) continue;
      const json = tapeJson(e.fill);
      for (const g of set) g.onTrade(json, e.fill.at);
    }
  }

  /** Joins (or makes) the group of the query; writes the snapshot (or resumes after `resumeAfter`). */
  join(conn: StreamConnection, q: OptionsQuery, resumeAfter: number | null = null): void {
    const id = q.market.spec.id;
    const key = `${id}|${q.depth}|${q.intervalMs}|${q.includeReference}`;
    let group = this.groups.get(key);
    if (group === undefined) group = this.create(key, q);
    group.join(conn, resumeAfter);
  }

  private create(key: string, q: OptionsQuery): OptionsGroup {
    const id = q.market.spec.id;
    const engineTs = this.mirrors.changedAt(id, this.hub.ctx.core.now());
    const mirror = this.mirrors.mirror(id)!;
    let unwatch = (): void => undefined;
    const forget = () => {
      this.groups.delete(key);
      const set = this.byMarket.get(id);
      set?.delete(group);
      if (set?.size === 0) this.byMarket.delete(id);
      unwatch();
    };
    const { market, depth, intervalMs, includeReference: withRef } = q;
    const group = new OptionsGroup(this.hub, market, mirror, depth, intervalMs, withRef, engineTs, forget);
    unwatch = this.mirrors.watch(id, group);
    this.groups.set(key, group);
    let set = this.byMarket.get(id);
    if (set === undefined) this.byMarket.set(id, (set = new Set()));
    set.add(group);
    return group;
  }
}
