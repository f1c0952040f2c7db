/**
 * GET /markets/{marketId}/trades/stream: one market's public trade tape, live (trades-streams.ts
 * has the route). Any kind of market: perpetual, dated future, spot pair or option.
 *
 *   snapshot  TradesSnapshot  { marketId, trades: [the newest TAPE_SNAPSHOT_TRADES, oldest first] }
 *   update    TradesUpdate    { marketId, trades: [every trade since the previous frame, oldest first] }
 *
 * A trade is the REST tape's `{ tradeId, marketId, price, quantity, takerSide, createdAt }`
 * (routes/trade-tape.ts), taker side, no account, order or fee. Only durable trades: the group's
 * start is read from the history (`histories(ctx)`, which waits until it holds every command
 * published so far), and every later trade comes from the `fill` events the hub hands its sinks
 * once their batch is durable. The two meet without a gap or a repeat: the group takes events from
 * before it asks the history until it has read it, and from then on keeps only trades above the
 * newest id it holds (trade ids increase in commit order). The history can be ahead of the events
 * as well as behind: the journal writer projects a batch before the hub is handed it, so a trade
 * the start read may still be published afterwards, and is then dropped, not sent twice.
 *
 * One TradesGroup per (market, intervalMs), shared by all its members: trades published in an
 * interval are serialized once (one JSON text per trade) and written in one frame to every member
 * through the hub's sliced fan-out; an interval without trades sends nothing (the heartbeat keeps
 * the connection). A joiner's snapshot is what members hold (the newest trades up to the last
 * frame, at the group's seq); trades published since then come in the next update, so each
 * connection sees every trade once, in order, with a strictly increasing eventSeq. A member that
 * reconnects with `resume=true` and Last-Event-ID gets the updates it missed instead, while the
 * group still keeps them (hub.ts Group: the last seconds of frames). engineTs is the
 * time of the newest trade the message reflects (the core's time when the tape is empty). At
 * MAX_PENDING_TAPE_TRADES waiting, a frame goes out early. When the market stops trading (a future
 * or option expires), the trades it made until then go out, then the stream ends with
 * INVALID_PARAMS (not retryable). Tested by test/streams/trades-stream.test.ts.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import type { FillRecord } from '../../core/records.ts';
import { histories } from '../context.ts';
import type { PublicTrade } from '../history-port.ts';
import { dec, iso } from '../format.ts';
import { publicTradeView } from '../routes/trade-tape.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import type { StreamConnection, StreamErrorCode } from './sse.ts';

/** Trades a snapshot carries: the newest of the market. */
export const TAPE_SNAPSHOT_TRADES = 100;
/** Trades waiting in one interval before a frame is sent early. */
export const MAX_PENDING_TAPE_TRADES = 2000;

/** A trade as the stream writes it: its id and time, and its JSON (the REST tape's shape). */
interface TapeEntry {
  readonly id: number;
  readonly at: number;
  readonly json: string;
}

const entryOfRow = (t: PublicTrade): TapeEntry => ({
  id: Number(t.tradeId),
  at: t.createdAt,
  json: JSON.stringify(publicTradeView(t)),
});

/** The same JSON as `entryOfRow` writes, straight from the event (`marketJson`: the id as JSON). */
function entryOfFill(f: FillRecord, marketJson: string): TapeEntry {
  return {
    id: Number(f.tradeId),
    at: f.at,
    json: `{"tradeId":"${f.tradeId}","marketId":${marketJson},"price":"${dec(f.price)}","quantity":"${dec(f.quantity)}",`
      + `"takerSide":"${f.takerSide}","createdAt":"${iso(f.at)}"}`,
  };
}

const joinJson = (entries: readonly TapeEntry[]): string => {
  let out = '';
  for (let i = 0; i < entries.length; i++) out += i === 0 ? entries[i]!.json : `,${entries[i]!.json}`;
  return out;
};

export class TradesGroup extends Group {
  readonly marketJson: string;
  /** Resolves once the group's start is read from the history (members join only then). */
  readonly ready: Promise<void>;
  private readonly members = new Set<StreamConnection>();
  /** The newest trades members hold, oldest first (at most TAPE_SNAPSHOT_TRADES). */
  private held: TapeEntry[] = [];
  /** Trades published since the last frame. */
  private pending: TapeEntry[] = [];
  /** Trades published while the start is being read (null once it is). */
  private early: TapeEntry[] | null = [];
  /** Id of the newest trade held or pending: a published trade at or below it is already there. */
  private newestId = 0;
  private snapshotChunk: Buffer | null = null;
  /** Engine time of what members hold. */
  private heldTs: number;
  private closing = false;

  constructor(
    hub: StreamHub,
    readonly marketId: string,
    private readonly trading: () => boolean,
    intervalMs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
    this.marketJson = JSON.stringify(marketId);
    this.heldTs = hub.ctx.core.now();
    this.ready = this.start();
  }

  /**
   * Adds a connection (after `ready`): its snapshot now (or, resuming after `resumeAfter`, the
   * updates it missed: Group.resumeFrom), then every update of the group.
   */
  join(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.members.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.members.delete(conn)) this.release();
    });
    if (this.resumeFrom(conn, resumeAfter)) return;
    this.snapshotChunk ??= this.frame('snapshot', 'TradesSnapshot', this.heldTs, this.payload(joinJson(this.held)));
    conn.write(this.snapshotChunk);
  }

  onTrade(entry: TapeEntry): void {
    if (this.early !== null) {
      this.early.push(entry);
      // only the newest can end up in the start
      if (this.early.length > 2 * TAPE_SNAPSHOT_TRADES) this.early.splice(0, this.early.length - TAPE_SNAPSHOT_TRADES);
      return;
    }
    if (entry.id <= this.newestId) return;
    this.newestId = entry.id;
    this.pending.push(entry);
    if (this.pending.length >= MAX_PENDING_TAPE_TRADES) this.flushSoon();
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    if (!this.trading()) {
      this.close();
      return;
    }
    const frame = this.update();
    if (frame !== null) this.send(frame, this.members);
  }

  /** The history's newest trades, then those published meanwhile that it did not hold yet. */
  private async start(): Promise<void> {
    const rows = await (await histories(this.hub.ctx)).trading.publicTrades(this.marketId, TAPE_SNAPSHOT_TRADES);
    const start: TapeEntry[] = [];
    for (let i = rows.length - 1; i >= 0; i--) start.push(entryOfRow(rows[i]!));
    const newest = start.length === 0 ? 0 : start[start.length - 1]!.id;
    for (const e of this.early ?? []) if (e.id > newest) start.push(e);
    this.early = null;
    if (start.length > 0) this.newestId = start[start.length - 1]!.id;
    this.held = start.length > TAPE_SNAPSHOT_TRADES ? start.slice(-TAPE_SNAPSHOT_TRADES) : start;
    // The newest trade's time, not the core's: a replica (the stream producer's) may have applied
    // later commands than that trade by now.
    if (this.held.length > 0) this.heldTs = this.held[this.held.length - 1]!.at;
  }

  /** Moves the pending trades to what members hold and returns their frame (null: none). */
  private update(): Buffer | null {
    if (this.pending.length === 0) return null;
    const trades = this.pending;
    this.pending = [];
    this.advance();
    this.snapshotChunk = null;
    for (const e of trades) this.held.push(e);
    if (this.held.length > TAPE_SNAPSHOT_TRADES) this.held.splice(0, this.held.length - TAPE_SNAPSHOT_TRADES);
    this.heldTs = Math.max(this.heldTs, trades[trades.length - 1]!.at);
    return this.frame('update', 'TradesUpdate', this.heldTs, this.payload(joinJson(trades)));
  }

  /**
   * The market stopped trading: once what the core did until now is durable and published, the
   * members get its last trades, then the stream ends.
   */
  private close(): void {
    if (this.closing) return;
    this.closing = true;
    const end = () => this.failAll('INVALID_PARAMS', `market ${this.marketId} is no longer trading`, false);
    this.hub.ctx.sequencer.barrier().then(() => {
      const frame = this.update();
      if (frame !== null) for (const conn of this.members) conn.write(frame);
      end();
    }, end);
  }

  private payload(trades: string): string {
    return `{"marketId":${this.marketJson},"trades":[${trades}]}`;
  }
}

/** The registry of trades groups, and the sink feeding them the published fills. */
export class TradeViews implements EventSink {
  private readonly groups = new Map<string, TradesGroup>();
  private readonly byMarket = new Map<string, Set<TradesGroup>>();

  constructor(private readonly hub: StreamHub) {
    hub.addSink(this);
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    if (this.byMarket.size === 0) return;
    for (const e of events) {
      if (e.type !== 'fill') continue;
      const set = this.byMarket.get(e.fill.marketId);
      if (set === undefined) continue;
      let entry: TapeEntry | null = null;
      for (const g of set) g.onTrade((entry ??= entryOfFill(e.fill, g.marketJson)));
    }
  }

  /**
   * The group of (market, interval), its start read: made now when new. A group made for a stream
   * that was then refused is dropped (`dropIfIdle`), so the caller may find it gone: it then asks
   * again. Rejects (503) when the history cannot be read.
   */
  async group(marketId: string, intervalMs: number, trading: () => boolean): Promise<TradesGroup> {
    const key = `${marketId}|${intervalMs}`;
    for (;;) {
      const group = this.groups.get(key) ?? this.create(key, marketId, intervalMs, trading);
      await group.ready;
      if (this.groups.get(key) === group) return group;
    }
  }

  /** Forgets a group no stream joined (its opener was refused after the start was read). */
  dropIfIdle(group: TradesGroup): void {
    if (group.memberCount === 0) this.forget(`${group.marketId}|${group.intervalMs}`, group);
  }

  private create(key: string, marketId: string, intervalMs: number, trading: () => boolean): TradesGroup {
    const group: TradesGroup = new TradesGroup(this.hub, marketId, trading, intervalMs, () => this.forget(key, group));
    this.groups.set(key, group);
    let set = this.byMarket.get(marketId);
    if (set === undefined) this.byMarket.set(marketId, (set = new Set()));
    set.add(group);
    group.ready.catch(() => this.forget(key, group));
    return group;
  }

  private forget(key: string, group: TradesGroup): void {
    if (this.groups.get(key) === group) this.groups.delete(key);
    const set = this.byMarket.get(group.marketId);
    set?.delete(group);
    if (set?.size === 0) this.byMarket.delete(group.marketId);
  }
}
