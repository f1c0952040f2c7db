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
 * interval old), then every later one; eventSeq is strictly increasing per connection.
 *
 * engineTs is the core's time when the board was read; sourceTs the source time of the index the
 * board shows (engineTs when there is no fresh index). The reference figures (marks, Greeks, DVOL)
 * are the board the core computed on its last clock tick; the top of book comes from the CLOB
 * engine's book mirrors, which only published (durable) order events move, so the stream never
 * shows a quote a crash could take back. Tested by test/streams/board-stream.test.ts.
 */
import { BUY, SELL, type Side } from '../../core/book/order-book.ts';
import type { Fixed } from '../../core/money.ts';
import type { GatewayContext } from '../context.ts';
import { boardView, type TopOfBook } from '../routes/options-board.ts';
import type { BookMirrors } from './book-mirror.ts';
import { Group, type StreamHub } from './hub.ts';
import type { SseConnection, StreamErrorCode } from './sse.ts';

/** Board stream cadence. */
export const BOARD_INTERVAL_MS = 1000;

export class BoardGroup extends Group {
  private readonly members = new Set<SseConnection>();
  private current: Buffer | null = null;

  constructor(
    hub: StreamHub,
    readonly underlying: string,
    private readonly topOfBook: TopOfBook,
    intervalMs: number,
    onEmpty: () => void,
  ) {
    super(hub, intervalMs, onEmpty);
  }

  /** Adds a connection: the latest board now (built now for a new group), then every tick's. */
  join(conn: SseConnection): void {
    this.members.add(conn);
    this.retain();
    conn.onClose(() => {
      if (this.members.delete(conn)) this.release();
    });
    this.current ??= this.build();
    conn.write(this.current);
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    this.seq++;
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
    const payload = JSON.stringify(boardView(ctx, this.underlying, now, this.topOfBook));
    const engineTs = ctx.exchange.now();
    const sourceTs = ctx.exchange.index.index(this.underlying, now)?.sourceTs ?? engineTs;
    return this.dataFrame('OptionsBoardSnapshot', engineTs, sourceTs, payload);
  }
}

/** The registry of board groups, one per underlying. */
export class BoardViews {
  private readonly groups = new Map<string, BoardGroup>();
  /** The best bid and ask of an instrument from the durable book mirrors. */
  private readonly topOfBook: TopOfBook;

  constructor(
    private readonly hub: StreamHub,
    clobBooks: BookMirrors,
    private readonly intervalMs: number = BOARD_INTERVAL_MS,
  ) {
    this.topOfBook = (id) => {
      const mirror = clobBooks.mirror(id);
      if (mirror === undefined) return undefined;
      const price = (side: Side): Fixed | null => {
        const ticks = mirror.best(side);
        return Number.isNaN(ticks) ? null : mirror.units.price(ticks);
      };
      return { bestBid: () => price(BUY), bestAsk: () => price(SELL) };
    };
  }

  join(conn: SseConnection, underlying: string): void {
    let group = this.groups.get(underlying);
    if (group === undefined) {
      group = new BoardGroup(this.hub, underlying, this.topOfBook, this.intervalMs, () => this.groups.delete(underlying));
      this.groups.set(underlying, group);
    }
    group.join(conn);
  }
}
