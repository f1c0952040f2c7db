/**
 * The caller's fills and positions for the private perp streams.
 *
 * AccountViews is the event sink: for every published linear `fill` it formats the Fill once per
 * side (maker, taker) and hands it to the sinks attached to that side's address; for every
 * `position` of a linear market it formats the Position once and hands it on. Nothing about an
 * account ever reaches another account's sinks: routing is by the account ids the engine wrote
 * into the records.
 *
 *   Fill      { tradeId, orderId, marketId, side, price, quantity, liquidity, fee, createdAt }
 *   Position  { id, marketId, marginMode, side, quantity, entryPrice, realizedPnl, status }
 *   (the contract's Fill and Position plus identifiers; fee is the caller's own, negative = rebate)
 *
 * Positions: snapshots list the open positions from an event-sourced mirror (seeded from the core
 * at start, then kept by published `position` events), so they show only durable state, like the
 * deltas; the engine forgets a position once it is flat.
 * Deltas carry `{ upserts, removedIds }`: with openOnly=false a position that closes is sent once
 * more as an upsert with status closed or liquidated (its final realizedPnl); with openOnly=true
 * it is listed in removedIds instead. A fill therefore reaches its owner as a trade plus a
 * position upsert in the same or the next frame.
 *
 * /perps/stream/user: one UserGroup per (address, intervalMs, openOnly); the delta is serialized
 * once for the group's connections. A joiner first flushes what the group holds, so its snapshot
 * (read from the mirror) and the later deltas neither overlap nor leave a gap; the group keeps its
 * last seconds of deltas, so a client reconnecting with `resume=true` and Last-Event-ID gets those
 * it missed instead of the snapshot (hub.ts Group).
 * /perps/stream/events: an EventsSubscriber per connection rides on the market's BookGroup (its
 * timer and the shared serialized book diff) and adds the caller's fills and positions in that
 * market; its eventSeq is its own, strictly increasing from the hub's `firstSeq`. Its frames are
 * composed per connection and kept nowhere, so it never resumes: a reconnect gets a snapshot.
 *
 * Snapshots carry no past fills (GET /perps/trades has the history). Trades pending in one
 * interval are bounded: at MAX_PENDING_TRADES a frame goes out early. Tested by
 * test/streams/perps-private.test.ts.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import type { FillRecord, FillSide, PositionRecord } from '../../core/records.ts';
import type { LinearMarketView } from '../../core/queries.ts';
import { dec, decOrNull, iso } from '../format.ts';
import type { BookListener, BookViews } from './book-view.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import { eventChunk, type StreamConnection, type StreamErrorCode } from './sse.ts';

export interface EventsQuery {
  readonly market: LinearMarketView;
  readonly depth: number;
  readonly intervalMs: number;
  readonly openOnly: boolean;
}

/** Fills waiting in one interval before a frame is sent early. */
export const MAX_PENDING_TRADES = 2000;

export interface AccountSink {
  onFill(fill: FillRecord, json: string): void;
  onPosition(position: PositionRecord, json: string): void;
}

export function fillJson(fill: FillRecord, side: FillSide): string {
  return JSON.stringify({
    tradeId: fill.tradeId,
    orderId: side.orderId,
    marketId: fill.marketId,
    side: side.side,
    price: dec(fill.price),
    quantity: dec(fill.quantity),
    liquidity: side.liquidity,
    fee: dec(side.fee),
    createdAt: iso(fill.at),
  });
}

export function positionJson(p: PositionRecord): string {
  return JSON.stringify({
    id: p.id,
    marketId: p.marketId,
    marginMode: p.marginMode,
    side: p.side,
    quantity: dec(p.size),
    entryPrice: decOrNull(p.entryPrice),
    realizedPnl: dec(p.realizedPnl),
    status: p.status,
  });
}

/** What changed for an account between two frames: fills in order, the latest of each position. */
class Pending {
  private trades: string[] = [];
  private upserts = new Map<string, string>();
  private removed = new Set<string>();
  engineTs = 0;

  constructor(private readonly openOnly: boolean) {}

  get empty(): boolean {
    return this.trades.length === 0 && this.upserts.size === 0 && this.removed.size === 0;
  }

  get tradeCount(): number {
    return this.trades.length;
  }

  addFill(json: string, at: number): void {
    this.trades.push(json);
    if (at > this.engineTs) this.engineTs = at;
  }

  addPosition(p: PositionRecord, json: string): void {
    if (this.openOnly && p.status !== 'open') {
      this.upserts.delete(p.id);
      this.removed.add(p.id);
    } else {
      this.removed.delete(p.id);
      this.upserts.set(p.id, json);
    }
    if (p.updatedAt > this.engineTs) this.engineTs = p.updatedAt;
  }

  /** `"trades":[...],"positions":{"upserts":[...],"removedIds":[...]}`, then empties itself. */
  take(): string {
    const removed = [...this.removed].map((id) => JSON.stringify(id)).join(',');
    const upserts = [...this.upserts.values()].join(',');
    const positions = `{"upserts":[${upserts}],"removedIds":[${removed}]}`;
    const text = `"trades":[${this.trades.join(',')}],"positions":${positions}`;
    this.trades = [];
    this.upserts = new Map();
    this.removed = new Set();
    this.engineTs = 0;
    return text;
  }
}

/** /perps/stream/user: one group per (address, intervalMs, openOnly). */
export class UserGroup extends Group implements AccountSink {
  private readonly members = new Set<StreamConnection>();
  private readonly pending: Pending;
  private readonly detach: () => void;

  constructor(
    hub: StreamHub,
    private readonly views: AccountViews,
    readonly address: string,
    intervalMs: number,
    openOnly: boolean,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
    this.pending = new Pending(openOnly);
    this.detach = views.attach(address, this);
  }

  /**
   * Flushes what the group holds to its members, then the joiner's snapshot (or, resuming after
   * `resumeAfter`, the deltas it missed: Group.resumeFrom; after the flush they include everything
   * the position mirror holds).
   */
  join(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.run(true);
    this.members.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.members.delete(conn)) this.release();
    });
    if (this.resumeFrom(conn, resumeAfter)) return;
    const ts = this.hub.ctx.core.now();
    const payload = `{"trades":[],"positions":[${this.views.openPositions(this.address, null).join(',')}]}`;
    conn.write(this.frame('snapshot', 'PerpsUserSnapshot', ts, payload));
  }

  onFill(fill: FillRecord, json: string): void {
    this.pending.addFill(json, fill.at);
    if (this.pending.tradeCount >= MAX_PENDING_TRADES) this.flushSoon();
  }

  onPosition(position: PositionRecord, json: string): void {
    this.pending.addPosition(position, json);
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    if (this.pending.empty) return;
    this.advance();
    const ts = this.pending.engineTs;
    const payload = `{${this.pending.take()}}`;
    const frame = this.frame('delta', 'PerpsUserDelta', ts, payload);
    this.send(frame, this.members);
  }

  protected override stopped(): void {
    this.detach();
  }
}

/** /perps/stream/events: one per connection, riding on its market's BookGroup. */
export class EventsSubscriber implements AccountSink, BookListener {
  private seq: number;
  private readonly pending: Pending;
  private readonly marketId: string;
  private readonly id: string;
  private earlyFlush = false;

  constructor(
    private readonly hub: StreamHub,
    private readonly conn: StreamConnection,
    private readonly address: string,
    private readonly market: LinearMarketView,
    openOnly: boolean,
  ) {
    this.pending = new Pending(openOnly);
    this.marketId = market.spec.id;
    this.id = hub.nextGroupId();
    this.seq = hub.firstSeq();
  }

  /** The snapshot, then deltas on every tick of the market's book group. */
  start(views: AccountViews, books: BookViews, depth: number, intervalMs: number): void {
    const book = books.group(this.market, depth, intervalMs);
    const removeBook = book.addListener(this);
    const detach = views.attach(this.address, this);
    this.conn.onClose(() => {
      removeBook();
      detach();
    });
    const positions = views.openPositions(this.address, this.marketId).join(',');
    const market = JSON.stringify(this.marketId);
    const orderbook = book.snapshotLevels();
    const rest = `"trades":[],"positions":[${positions}]`;
    const payload = `{"marketId":${market},"orderbook":{${orderbook}},${rest}}`;
    const engineTs = this.hub.ctx.core.now();
    this.send('snapshot', 'PerpsStreamSnapshot', engineTs, payload);
  }

  onBookTick(diff: string | null, engineTs: number): void {
    if (diff === null && this.pending.empty) return;
    this.seq++;
    this.hub.noteSeq(this.seq);
    const ts = Math.max(engineTs, this.pending.engineTs);
    const book = diff ?? '"bids":[],"asks":[]';
    const market = JSON.stringify(this.marketId);
    const payload = `{"marketId":${market},"orderbook":{${book}},${this.pending.take()}}`;
    this.send('delta', 'PerpsStreamDelta', ts, payload);
  }

  onFill(fill: FillRecord, json: string): void {
    if (fill.marketId !== this.marketId) return;
    this.pending.addFill(json, fill.at);
    if (this.pending.tradeCount >= MAX_PENDING_TRADES && !this.earlyFlush) {
      this.earlyFlush = true;
      setImmediate(() => {
        this.earlyFlush = false;
        if (this.conn.isOpen) this.onBookTick(null, 0);
      });
    }
  }

  onPosition(position: PositionRecord, json: string): void {
    if (position.marketId === this.marketId) this.pending.addPosition(position, json);
  }

  fail(code: StreamErrorCode, message: string, retryable: boolean): void {
    this.conn.fail(code, message, retryable);
  }

  private send(event: string, eventType: string, ts: number, payload: string): void {
    const seq = this.seq;
    const eventId = `${this.id}.${seq}`;
    const fields = { eventId, eventType, eventSeq: seq, engineTs: ts, sourceTs: ts, payload };
    this.conn.write(eventChunk(event, fields));
  }
}

/** The sink routing fills and positions to the sinks attached per address; the position mirror. */
export class AccountViews implements EventSink {
  private readonly feeds = new Map<string, Set<AccountSink>>();
  private readonly userGroups = new Map<string, UserGroup>();
  /** Open linear positions per account id, as the published events say. */
  private readonly open = new Map<number, Map<string, PositionRecord>>();

  /** The mirror starts from the recovered core (`seed`, called by the hub once recovery is done). */
  constructor(
    private readonly hub: StreamHub,
    private readonly books: BookViews,
  ) {
    hub.addSink(this);
  }

  seed(): void {
    this.open.clear();
    for (const p of this.hub.ctx.core.openPerpPositions()) this.remember(p);
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    for (const e of events) {
      if (e.type === 'position') {
        if (!this.hub.ctx.core.linearMarkets().has(e.position.marketId)) continue;
        this.remember(e.position);
        const sinks = this.sinksOf(e.position.accountId);
        if (sinks === undefined) continue;
        const json = positionJson(e.position);
        for (const s of sinks) s.onPosition(e.position, json);
      } else if (e.type === 'fill' && e.fill.engine === 'linear' && this.feeds.size > 0) {
        this.deliverFill(e.fill, e.fill.maker);
        this.deliverFill(e.fill, e.fill.taker);
      }
    }
  }

  /** Attaches a sink to an address's fills and positions; returns the detach. */
  attach(address: string, sink: AccountSink): () => void {
    let set = this.feeds.get(address);
    if (set === undefined) this.feeds.set(address, (set = new Set()));
    set.add(sink);
    return () => {
      set.delete(sink);
      if (set.size === 0 && this.feeds.get(address) === set) this.feeds.delete(address);
    };
  }

  /** The account's open positions (one market, or all) from the mirror, as Position JSON. */
  openPositions(address: string, marketId: string | null): string[] {
    const accountId = this.hub.ctx.core.accountId(address);
    const positions = accountId === undefined ? undefined : this.open.get(accountId);
    if (positions === undefined) return [];
    const out = [...positions.values()].filter((p) => marketId === null || p.marketId === marketId);
    out.sort((a, b) => (a.marketId < b.marketId ? -1 : a.marketId > b.marketId ? 1 : a.id < b.id ? -1 : 1));
    return out.map(positionJson);
  }

  /** /perps/stream/user: joins (or makes) the group; `resumeAfter`: see UserGroup.join. */
  joinUser(conn: StreamConnection, address: string, intervalMs: number, openOnly: boolean, resumeAfter: number | null = null): void {
    const key = `${address}|${intervalMs}|${openOnly}`;
    let group = this.userGroups.get(key);
    if (group === undefined) {
      group = new UserGroup(this.hub, this, address, intervalMs, openOnly, () => this.userGroups.delete(key));
      this.userGroups.set(key, group);
    }
    group.join(conn, resumeAfter);
  }

  /** /perps/stream/events: a subscriber for this connection. */
  openEvents(conn: StreamConnection, address: string, q: EventsQuery): void {
    const subscriber = new EventsSubscriber(this.hub, conn, address, q.market, q.openOnly);
    subscriber.start(this, this.books, q.depth, q.intervalMs);
  }

  private remember(p: PositionRecord): void {
    let positions = this.open.get(p.accountId);
    if (p.status === 'open' && p.size !== 0n) {
      if (positions === undefined) this.open.set(p.accountId, (positions = new Map()));
      positions.set(p.id, p);
    } else if (positions !== undefined) {
      positions.delete(p.id);
      if (positions.size === 0) this.open.delete(p.accountId);
    }
  }

  private deliverFill(fill: FillRecord, side: FillSide): void {
    const sinks = this.sinksOf(side.accountId);
    if (sinks === undefined) return;
    const json = fillJson(fill, side);
    for (const s of sinks) s.onFill(fill, json);
  }

  private sinksOf(accountId: number): Set<AccountSink> | undefined {
    const address = this.hub.ctx.core.accountAddress(accountId);
    return address === undefined ? undefined : this.feeds.get(address);
  }
}
