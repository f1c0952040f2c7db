/**
 * Unit tests of the stream plumbing, without a server: the SSE connection's byte budget and
 * stall check against a socket that stops taking bytes (memory stays bounded, the client gets
 * SLOW_CONSUMER, everything is freed once, the socket is destroyed after the grace period), the
 * frame and chunk formats, the connection caps, the book mirror against a naive model of the
 * resting book (fast-check: any sequence of order records gives the same levels), and BookMirrors
 * (only its own engine's order events, watchers told of changes, delisted mirrors swept).
 */
import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import { MarketUnits } from '../../src/core/markets.ts';
import type { OrderRecord } from '../../src/core/records.ts';
import { ConnectionCaps } from '../../src/gateway/streams/admission.ts';
import { BookMirror, BookMirrors, type BookMarket } from '../../src/gateway/streams/book-mirror.ts';
import type { StreamHub } from '../../src/gateway/streams/hub.ts';
import type { ExchangeEvent } from '../../src/core/events.ts';
import { chunk, CLOSE_GRACE_MS, envelope, sseMessage, SseConnection } from '../../src/gateway/streams/sse.ts';
import type { SinkSocket } from '../../src/gateway/streams/sse.ts';
import { ApiError } from '../../src/gateway/errors.ts';

/** A socket whose kernel takes `accept` bytes and then nothing until `drain()`. */
class StalledSocket {
  writableLength = 0;
  destroyed = false;
  ended = false;
  readonly chunks: Buffer[] = [];
  private onClose: (() => void) | null = null;
  constructor(private accept: number) {}
  write(data: Buffer | string): boolean {
    const b = typeof data === 'string' ? Buffer.from(data) : data;
    this.chunks.push(b);
    const taken = Math.min(this.accept, b.length);
    this.accept -= taken;
    this.writableLength += b.length - taken;
    return this.writableLength === 0;
  }
  end(data?: Buffer): this {
    if (data !== undefined) this.write(data);
    this.ended = true;
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    this.onClose?.();
    return this;
  }
  once(_event: 'close', listener: () => void): this {
    this.onClose = listener;
    return this;
  }
  drain(bytes: number): void {
    this.writableLength = Math.max(0, this.writableLength - bytes);
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function connection(socket: StalledSocket, budget: number) {
  const counts = { slow: 0, peak: 0, closed: 0 };
  const conn = new SseConnection(socket as unknown as SinkSocket, budget, {
    onSlowConsumer: () => counts.slow++,
    onBuffered: (b) => (counts.peak = Math.max(counts.peak, b)),
  });
  conn.onClose(() => counts.closed++);
  return { conn, counts };
}

describe('SseConnection backpressure', () => {
  test('past the budget the frame is not written; SLOW_CONSUMER, close, destroy after the grace', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const socket = new StalledSocket(1000);
      const { conn, counts } = connection(socket, 4096);
      const frame = chunk(sseMessage('update', 1, JSON.stringify({ pad: 'x'.repeat(900) })));
      let written = 0;
      while (conn.write(frame)) written++;
      assert.ok(written >= 4, String(written));
      assert.ok(socket.writableLength <= 4096 + 200, `buffered ${socket.writableLength}`);
      assert.ok(counts.peak <= 4096);
      assert.equal(counts.slow, 1);
      assert.equal(counts.closed, 1);
      assert.equal(conn.isOpen, false);
      assert.ok(socket.ended);
      const text = socket.text();
      const error = 'event: error\ndata: \\{"code":"SLOW_CONSUMER","message":"[^"]+","retryable":true\\}\n\n';
      assert.match(text, new RegExp(`${error}\r\n0\r\n\r\n$`));
      assert.equal(conn.write(frame), false);
      conn.fail('INTERNAL', 'again', true);
      assert.equal(counts.closed, 1, 'cleanups run once');
      assert.equal(socket.destroyed, false);
      mock.timers.tick(CLOSE_GRACE_MS);
      assert.equal(socket.destroyed, true);
    } finally {
      mock.timers.reset();
    }
  });

  test('a frame larger than the budget goes out when nothing is waiting', () => {
    const socket = new StalledSocket(1_000_000);
    const { conn, counts } = connection(socket, 1024);
    assert.equal(conn.write(chunk('x'.repeat(50_000))), true);
    assert.equal(counts.slow, 0);
  });

  test('the stall check drops a client that took no byte for a heartbeat period while data waited', () => {
    const socket = new StalledSocket(0);
    const { conn, counts } = connection(socket, 1 << 20);
    conn.write(chunk('data: 1\n\n'));
    conn.heartbeat();
    socket.drain(5);
    conn.heartbeat(); // progress: still open
    assert.equal(conn.isOpen, true);
    conn.heartbeat(); // no progress since the last beat
    assert.equal(conn.isOpen, false);
    assert.equal(counts.slow, 1);
    assert.match(socket.text(), /"code":"SLOW_CONSUMER"/);
  });

  test('a client closing its side frees everything once', () => {
    const socket = new StalledSocket(1 << 20);
    const { conn, counts } = connection(socket, 1024);
    socket.destroy();
    assert.equal(conn.isOpen, false);
    assert.equal(counts.closed, 1);
    let late = 0;
    conn.onClose(() => late++);
    assert.equal(late, 1, 'a cleanup added after close runs at once');
  });
});

describe('frames', () => {
  test('a chunk is the byte length in hex, CRLF, the bytes, CRLF', () => {
    const text = sseMessage('delta', 7, '{"s":"é"}');
    assert.equal(text, 'id: 7\nevent: delta\ndata: {"s":"é"}\n\n');
    const c = chunk(text);
    const size = Buffer.byteLength(text);
    assert.equal(c.toString('utf8'), `${size.toString(16)}\r\n${text}\r\n`);
  });

  test('the envelope is JSON with the payload embedded as is', () => {
    const fields = { eventId: 'g.1', eventType: 'T', eventSeq: 3, engineTs: 10, sourceTs: 9 };
    const e = envelope({ ...fields, payload: '{"a":[1]}' });
    assert.deepEqual(JSON.parse(e), { ...fields, payload: { a: [1] } });
    const typed = JSON.parse(envelope({ ...fields, type: 'update', payload: '{}' }));
    assert.equal(typed.type, 'update');
  });
});

describe('ConnectionCaps', () => {
  test('global, per IP and per account caps; a release counts once', () => {
    const caps = new ConnectionCaps({ maxConnections: 4, maxPerIp: 2, maxPerAccount: 1, maxOptionStreamsPerAccount: 1 });
    const a = caps.admit('1.1.1.1', 'acct');
    assert.ok(!(a instanceof ApiError));
    const b = caps.admit('2.2.2.2', 'acct');
    assert.ok(b instanceof ApiError && b.code === 'RATE_LIMITED' && b.status === 429);
    assert.ok(!(caps.admit('1.1.1.1', null) instanceof ApiError));
    const c = caps.admit('1.1.1.1', null);
    assert.ok(c instanceof ApiError && c.status === 429);
    assert.ok(!(caps.admit('3.3.3.3', null) instanceof ApiError));
    assert.ok(!(caps.admit('4.4.4.4', null) instanceof ApiError));
    const full = caps.admit('5.5.5.5', null);
    assert.ok(full instanceof ApiError && full.code === 'UNAVAILABLE' && full.status === 503);
    a.release();
    a.release();
    assert.equal(caps.count(), 3);
    assert.ok(!(caps.admit('2.2.2.2', 'acct') instanceof ApiError));
  });

  test('option instrument streams count against a budget of their own, not the private streams\'', () => {
    const caps = new ConnectionCaps({ maxConnections: 100, maxPerIp: 100, maxPerAccount: 2, maxOptionStreamsPerAccount: 3 });
    for (let i = 0; i < 2; i++) assert.ok(!(caps.admit('1.1.1.1', 'mm') instanceof ApiError));
    assert.ok(caps.admit('1.1.1.1', 'mm') instanceof ApiError, 'private budget spent');
    // Before: one budget of SSE_MAX_PER_ACCOUNT for both, so a market maker followed at most ~17 option books.
    const books = Array.from({ length: 3 }, () => caps.admit('1.1.1.1', 'mm', 'options'));
    assert.ok(books.every((b) => !(b instanceof ApiError)));
    const fourth = caps.admit('1.1.1.1', 'mm', 'options');
    assert.ok(fourth instanceof ApiError && fourth.status === 429 && /option instrument streams/.test(fourth.message));
    (books[0] as { release(): void }).release();
    assert.ok(!(caps.admit('1.1.1.1', 'mm', 'options') instanceof ApiError), 'a released slot is back in its own budget');
    assert.ok(caps.admit('1.1.1.1', 'mm') instanceof ApiError, 'and not in the other');
  });
});

describe('BookMirror', () => {
  const units = new MarketUnits({ priceDecimals: 1, sizeDecimals: 4 });
  type Status = 'open' | 'cancelled' | 'untriggered';
  const record = (id: number, side: 0 | 1, ticks: number, lots: number, status: Status): OrderRecord =>
    ({
      id: String(id),
      side: side === BUY ? 'buy' : 'sell',
      type: 'limit',
      price: units.price(ticks),
      remainingQuantity: units.size(lots),
      status,
    }) as OrderRecord;

  test('any sequence of order records gives the levels of the orders resting after it', () => {
    const op = fc.record({
      id: fc.integer({ min: 1, max: 25 }),
      side: fc.constantFrom<0 | 1>(BUY, SELL),
      ticks: fc.integer({ min: 1, max: 40 }),
      lots: fc.integer({ min: 0, max: 5 }),
      status: fc.constantFrom<Status>('open', 'open', 'open', 'cancelled', 'untriggered'),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), fc.integer({ min: 1, max: 50 }), (ops, depth) => {
        const mirror = new BookMirror(units);
        const model = new Map<number, { side: 0 | 1; ticks: number; lots: number; status: string }>();
        for (const o of ops) {
          mirror.apply(record(o.id, o.side, o.ticks, o.lots, o.status));
          model.set(o.id, o);
        }
        for (const side of [BUY, SELL] as const) {
          const levels = new Map<number, number>();
          for (const o of model.values()) {
            if (o.side !== side || o.status !== 'open' || o.lots === 0) continue;
            levels.set(o.ticks, (levels.get(o.ticks) ?? 0) + o.lots);
          }
          type Lvl = [number, number];
          const bookOrder = (x: Lvl, y: Lvl) => (side === BUY ? y[0] - x[0] : x[0] - y[0]);
          const expected = [...levels.entries()].sort(bookOrder).slice(0, depth);
          const out: number[] = [];
          const n = mirror.depth(side, depth, out);
          const got = Array.from({ length: n }, (_, i) => [out[2 * i]!, out[2 * i + 1]!]);
          assert.deepEqual(got, expected);
          assert.equal(mirror.levelCount(side), levels.size);
        }
      }),
      { seed: 20_260_101, numRuns: 300 },
    );
  });
});

describe('BookMirrors', () => {
  const units = new MarketUnits({ priceDecimals: 1, sizeDecimals: 2 });
  const market = (id: string): BookMarket => ({
    spec: { id },
    units,
    status: 'open',
    book: { forEachResting() {} },
  });
  const hub = { addSink() {} } as unknown as StreamHub;
  type Engine = 'linear' | 'clob';
  const order = (id: string, marketId: string, engine: Engine, status: string, at = 1): ExchangeEvent => ({
    type: 'order',
    order: {
      id, engine, marketId, side: 'buy', type: 'limit', status, updatedAt: at,
      price: units.price(10), remainingQuantity: units.size(3),
    } as OrderRecord,
  });

  test('follows only its engine\'s order events and tells the market\'s watchers', () => {
    const markets = new Map([['A', market('A')]]);
    const mirrors = new BookMirrors(hub, 'clob', () => markets);
    const seen: number[] = [];
    const unwatch = mirrors.watch('A', { onBookChange: (at) => seen.push(at) });
    mirrors.onEvents([order('1', 'A', 'linear', 'open', 5), order('2', 'UNKNOWN', 'clob', 'open', 6)]);
    assert.equal(mirrors.mirror('A')!.levelCount(BUY), 0);
    assert.deepEqual(seen, []);
    mirrors.onEvents([order('3', 'A', 'clob', 'open', 7)]);
    assert.equal(mirrors.mirror('A')!.levelCount(BUY), 1);
    assert.deepEqual(seen, [7]);
    assert.equal(mirrors.changedAt('A', 0), 7);
    unwatch();
    mirrors.onEvents([order('3', 'A', 'clob', 'cancelled', 8)]);
    assert.deepEqual(seen, [7]);
    assert.equal(mirrors.mirror('A')!.levelCount(BUY), 0);
  });

  test('mirrors of delisted markets are swept once empty, as new listings pile up', () => {
    const ids = (prefix: string) => Array.from({ length: 300 }, (_, i) => `${prefix}${i}`);
    const markets = new Map(ids('old').map((id) => [id, market(id)]));
    const mirrors = new BookMirrors(hub, 'clob', () => markets);
    mirrors.onEvents(ids('old').map((id) => order(id, id, 'clob', 'open')));
    const watched = mirrors.watch('old0', { onBookChange() {} });
    markets.clear();
    mirrors.onEvents(ids('old').map((id) => order(id, id, 'clob', 'expired')));
    for (const id of ids('new')) markets.set(id, market(id));
    mirrors.onEvents(ids('new').map((id) => order(id, id, 'clob', 'open')));
    assert.equal(mirrors.mirror('old1'), undefined, 'swept');
    assert.ok(mirrors.mirror('old0') !== undefined, 'a watched mirror stays');
    assert.equal(mirrors.mirror('new1')!.levelCount(BUY), 1);
    watched();
  });
});
