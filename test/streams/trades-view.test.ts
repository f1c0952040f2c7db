/**
 * The trades group's start against the order of history and events (gateway/streams/trades-view.ts).
 *
 * The journal writer projects a batch into the history before the hub is handed that batch's
 * events, so a group can read its start from a history that already holds trades it is then
 * published. A CI run caught a stream sending such trades twice (in its snapshot, then again in
 * its first update). The window is a few microseconds between a worker thread and the event loop,
 * which the real service cannot be made to hit on purpose; so this test drives a real StreamHub and
 * TradeViews over a minimal context whose history and publication it orders itself. The
 * end-to-end behaviour is test/streams/trades-stream.test.ts.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ExchangeEvent } from '../../src/core/events.ts';
import { fx } from '../../src/core/money.ts';
import type { FillRecord } from '../../src/core/records.ts';
import type { GatewayContext } from '../../src/gateway/context.ts';
import type { PublicTrade } from '../../src/gateway/history-port.ts';
import { StreamHub } from '../../src/gateway/streams/hub.ts';
import type { StreamConnection } from '../../src/gateway/streams/sse.ts';
import { TradeViews } from '../../src/gateway/streams/trades-view.ts';

const MARKET = 'BTC-PERP';
const INTERVAL_MS = 20;

const row = (id: number): PublicTrade =>
  ({ tradeId: String(id), marketId: MARKET, price: fx('100000'), quantity: fx('0.001'), takerSide: 'buy', createdAt: 1_000 + id });

const fill = (id: number): ExchangeEvent => {
  const side = { accountId: 1, orderId: String(id), fee: 0n } as unknown as FillRecord['maker'];
  const record: FillRecord = { ...row(id), engine: 'clob', maker: side, taker: side, at: 1_000 + id };
  return { type: 'fill', fill: record };
};

interface Venue {
  readonly views: TradeViews;
  /** The history's trades, oldest first (what `publicTrades` answers from). */
  readonly history: PublicTrade[];
  /** Hands the hub a batch's events, as the sequencer does once it is durable. */
  publish(ids: number[]): void;
  /** Lets the next history read finish. */
  releaseRead(): void;
  close(): void;
}

function venue(): Venue {
  let listener: (events: readonly ExchangeEvent[]) => void = () => undefined;
  let releaseRead: () => void = () => undefined;
  const readGate = new Promise<void>((resolve) => (releaseRead = resolve));
  const history: PublicTrade[] = [];
  const ctx = {
    core: { now: () => 1_000 },
    sequencer: {
      subscribe: (l: typeof listener) => {
        listener = l;
        return () => undefined;
      },
      historyBarrier: () => Promise.resolve(),
      isHealthy: () => true,
    },
    history: {
      trading: {
        publicTrades: async (_market: string, limit: number) => {
          await readGate;
          return history.slice(-limit).reverse();
        },
      },
    },
  } as unknown as GatewayContext;
  const settings = {
    heartbeatMs: 60_000, maxConnections: 10, maxPerIp: 10, maxPerAccount: 10,
    maxOptionStreamsPerAccount: 10, maxBufferBytes: 1 << 20, authRecheckMs: 60_000,
  };
  const hub = new StreamHub(ctx, settings, (error) => assert.fail(String(error)));
  return {
    views: new TradeViews(hub),
    history,
    publish: (ids) => listener(ids.map(fill)),
    releaseRead: () => releaseRead(),
    close: () => hub.close(),
  };
}

/** Every member's leave, run after each test so that no group timer outlives it. */
const joined: (() => void)[] = [];
afterEach(() => joined.splice(0).forEach((leave) => leave()));

/** A member that keeps the trade ids of each frame it is written. */
function member(): { conn: StreamConnection; frames: string[][]; leave(): void } {
  const frames: string[][] = [];
  const closers: (() => void)[] = [];
  const conn = {
    write: (chunk: Buffer) => {
      const data = /^data: (.*)$/m.exec(chunk.toString())![1]!;
      const message = JSON.parse(data) as { payload: { trades: { tradeId: string }[] } };
      frames.push(message.payload.trades.map((t) => t.tradeId));
    },
    onClose: (closer: () => void) => closers.push(closer),
    fail: () => undefined,
  } as unknown as StreamConnection;
  const leave = () => closers.splice(0).forEach((c) => c());
  joined.push(leave);
  return { conn, frames, leave };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 4));

test('trades the start read from a history ahead of the events are not sent again', async () => {
  const v = venue();
  try {
    for (const id of [1, 2, 3]) v.history.push(row(id));
    v.publish([1, 2, 3]);
    const opening = v.views.group(MARKET, INTERVAL_MS, () => true);
    v.history.push(row(4), row(5)); // projected by the writer, not yet handed to the hub
    v.releaseRead();
    const group = await opening;
    const m = member();
    group.join(m.conn);
    v.publish([4, 5]); // now handed to the hub
    v.publish([6]);
    await settle();
    m.leave();
    assert.deepEqual(m.frames, [['1', '2', '3', '4', '5'], ['6']]);
  } finally {
    v.close();
  }
});

test('trades published while the start is read, beyond the history, are kept once', async () => {
  const v = venue();
  try {
    for (const id of [1, 2]) v.history.push(row(id));
    const opening = v.views.group(MARKET, INTERVAL_MS, () => true);
    v.history.push(row(3));
    v.publish([3, 4]); // 3 is in the history the read returns, 4 is not
    v.releaseRead();
    const group = await opening;
    const m = member();
    group.join(m.conn);
    v.publish([5]);
    await settle();
    m.leave();
    assert.deepEqual(m.frames, [['1', '2', '3', '4'], ['5']]);
  } finally {
    v.close();
  }
});
