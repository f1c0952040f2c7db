/**
 * GET /markets/board/stream: the option board of one underlying, pushed about once a second.
 *
 * One BoardGroup per underlying with its own timer (BOARD_INTERVAL_MS, 1 s; the route module
 * takes another interval for tests). Each tick builds the board once with the REST board's own
 * builder (`boardView` of routes/options-board.ts: same shape and values as GET /markets/board,
 * including the volatility-index block `{ underlying, dvol, tenorDays, computedAt }`), serializes
 * it once and writes the same bytes to every member through the hub's sliced fan-out; a tick is
 * skipped while the previous frame is still going out. Every message is a full snapshot, so there
 * are no diffs and no named events: messages are data-only (no `event:` field; EventSource's
 * `message`), `id:` = eventSeq, data `{ eventId, eventType: "OptionsBoardSnapshot", eventSeq,
 * engineTs, sourceTs, payload }`. A joiner gets the group's latest frame at once (at most one
 * interval old), then every later one; eventSeq is strictly increasing per connection. With
 * `resume=true` and Last-Event-ID, a reconnecting client gets the boards after it instead, while the
 * group keeps them (hub.ts Group), so its eventSeq stays gap-free.
 *
 * engineTs is the core's time when the board was read; sourceTs the source time of the index the
 * board shows (engineTs when there is no fresh index). A frame is one clock tick of the core — the
 * top of book, forwards, slices, marks and Greeks the core computed together — and only a durable
 * one: `DurableBoards` keeps, per underlying, the board of the last clock tick whose events were
 * published (after the journal made that tick durable), so the stream never shows a quote a crash
 * could take back. Tested by test/streams/board-stream.test.ts.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import type { UnderlyingBoard } from '../../core/options/board.ts';
import type { GatewayContext } from '../context.ts';
import { boardView } from '../routes/options-board.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import type { StreamConnection, StreamErrorCode } from './sse.ts';

/** Board stream cadence. */
export const BOARD_INTERVAL_MS = 1000;

export class BoardGroup extends Group {
  private readonly members = new Set<StreamConnection>();
  private current: Buffer | null = null;

  constructor(
    hub: StreamHub,
    readonly underlying: string,
    private readonly boards: DurableBoards,
    intervalMs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
  }

  /**
   * Adds a connection: the latest board now (built now for a new group), or, resuming after
   * `resumeAfter`, the boards it missed (Group.resumeFrom); then every tick's.
   */
  join(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.members.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.members.delete(conn)) this.release();
    });
    if (this.resumeFrom(conn, resumeAfter)) return;
    this.current ??= this.build();
    conn.write(this.current);
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    this.advance();
    this.current = this.build();
    this.send(this.current, this.members);
  }

  protected override stopped(): void {
    this.current = null;
  }

  /** The board at the group's current seq, serialized once. */
  private build(): Buffer {
    const ctx: GatewayContext = this.hub.ctx;
    const now = ctx.now();
    const payload = JSON.stringify(boardView(ctx, this.underlying, now, this.boards.board(this.underlying)));
    const engineTs = ctx.core.now();
    const sourceTs = ctx.core.index(this.underlying, now)?.sourceTs ?? engineTs;
    return this.dataFrame('OptionsBoardSnapshot', engineTs, sourceTs, payload);
  }
}

/**
 * The board of each underlying as of its last durable clock tick. A tick's `board` event is
 * published once the tick is durable; the core's board is then that tick's unless a later tick was
 * already applied (and is not durable yet), in which case the previous durable board stays until
 * the next publication.
 */
export class DurableBoards implements EventSink {
  private readonly boards = new Map<string, UnderlyingBoard>();

  constructor(private readonly ctx: GatewayContext) {}

  seed(): void {
    for (const p of this.ctx.core.config.linear.perps) {
      const b = this.ctx.core.optionBoard(p.underlying);
      if (b !== undefined) this.boards.set(p.underlying, b);
    }
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    for (const e of events) {
      if (e.type !== 'board') continue;
      const b = this.ctx.core.optionBoard(e.underlying);
      if (b !== undefined && b.computedAt === e.at) this.boards.set(e.underlying, b);
    }
  }

  board(underlying: string): UnderlyingBoard | undefined {
    return this.boards.get(underlying);
  }
}

/** The registry of board groups, one per underlying. */
export class BoardViews {
  private readonly groups = new Map<string, BoardGroup>();
  private readonly boards: DurableBoards;

  constructor(
    private readonly hub: StreamHub,
    private readonly intervalMs: number = BOARD_INTERVAL_MS,
  ) {
    this.boards = new DurableBoards(hub.ctx);
    hub.addSink(this.boards);
  }

  join(conn: StreamConnection, underlying: string, resumeAfter: number | null = null): void {
    let group = this.groups.get(underlying);
    if (group === undefined) {
      group = new BoardGroup(this.hub, underlying, this.boards, this.intervalMs, () => this.groups.delete(underlying));
      this.groups.set(underlying, group);
    }
    group.join(conn, resumeAfter);
  }
}
