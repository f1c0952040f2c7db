/**
 * Connection limits over real sockets on loopback, against the real service (gateway/app.ts
 * SERVER_LIMITS, gateway/connection-limits.ts).
 *
 * Timeouts: sockets that send nothing, part of a request line, or headers a byte at a time are
 * answered 408 and closed within the header timeout plus Node's checking interval (seconds, where
 * Node's defaults held them 36 s), and a request whose body never completes within the request
 * timeout; meanwhile another client's requests succeed, an open stream (whose request is complete)
 * runs on past both timeouts, and a keep-alive connection idle between requests for longer than the
 * header timeout still serves its next request.
 *
 * Per-address cap: with MAX_CONNECTIONS_PER_IP=20, the 21st connection from 127.0.0.1 is reset at
 * once while the 20 it holds keep working; 127.0.0.2, another address, is unaffected; 127.0.0.3, a
 * TRUST_PROXY peer, is not capped per address; a closed connection frees its slot. Linux routes all
 * of 127.0.0.0/8 to loopback, so a socket bound to 127.0.0.2 is another client address.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SERVER_LIMITS } from '../../src/gateway/app.ts';
import { startService, waitFor, type TestService } from '../support/harness.ts';

const HIGH_RATE = { RATE_LIMIT_ANONYMOUS: '1000000', RATE_LIMIT_ACCOUNT: '1000000' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw TCP connection to the service from `localAddress`, recording what it receives and when it closes. */
class RawConnection {
  readonly socket: Socket;
  readonly openedAt = performance.now();
  closedAt: number | null = null;
  received = '';
  private readonly connected: Promise<void>;

  constructor(url: string, localAddress = '127.0.0.1') {
    const { port } = new URL(url);
    this.socket = connect({ host: '127.0.0.1', port: Number(port), localAddress });
    this.socket.setEncoding('utf8');
    this.socket.on('data', (d: string) => (this.received += d));
    this.socket.on('error', () => undefined); // a reset shows as the close below
    this.socket.on('close', () => (this.closedAt = performance.now()));
    this.connected = new Promise((resolve) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('close', () => resolve());
    });
  }

  get closed(): boolean {
    return this.closedAt !== null;
  }

  /** Milliseconds from opening to close. */
  get heldMs(): number {
    return (this.closedAt ?? performance.now()) - this.openedAt;
  }

  async write(text: string): Promise<void> {
    await this.connected;
    this.socket.write(text);
  }

  /** Sends a GET on this (keep-alive) connection and resolves with the status of its response. */
  async get(path: string, timeoutMs = 3000): Promise<number> {
    const from = this.received.length;
    await this.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    let status = 0;
    await waitFor(() => {
      const text = this.received.slice(from);
      const head = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n/.exec(text);
      if (head === null) return this.closed;
      const length = Number(/content-length: (\d+)/i.exec(head[2]!)?.[1] ?? 0);
      if (text.length - head[0].length < length) return false;
      status = Number(head[1]);
      return true;
    }, timeoutMs, 5);
    return status;
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('header and request timeouts', () => {
  let ts: TestService;
  before(async () => {
    ts = await startService({ ...HIGH_RATE, SSE_HEARTBEAT_MS: '100' });
  });
  after(async () => {
    await ts.close();
  });

  test('slow clients are closed within seconds; other clients, streams and idle keep-alives are not', async (t) => {
    const { headersTimeoutMs, requestTimeoutMs, connectionsCheckingIntervalMs: interval } = SERVER_LIMITS;
    const slack = 1500;
    const stream = new RawConnection(ts.url);
    await stream.write('GET /perps/book-stream?marketId=BTC-PERP HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const keepAlive = new RawConnection(ts.url);
    assert.equal(await keepAlive.get('/health'), 200);

    const silent = Array.from({ length: 20 }, () => new RawConnection(ts.url));
    const partialLine = Array.from({ length: 20 }, () => new RawConnection(ts.url));
    const partialHeaders = Array.from({ length: 20 }, () => new RawConnection(ts.url));
    await Promise.all(partialLine.map((c) => c.write('GET /health HT')));
    await Promise.all(partialHeaders.map((c) => c.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')));
    // a slowloris: a header byte every 200 ms, never the blank line that ends the headers
    const dribbler = new RawConnection(ts.url);
    await dribbler.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const dribble = setInterval(() => dribbler.closed || dribbler.socket.write('a'), 200);
    // a complete head, a body that never completes
    const slowBody = new RawConnection(ts.url);
    await slowBody.write('POST /auth/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"wal');
    const slowHeaders = [...silent, ...partialLine, ...partialHeaders, dribbler];

    // another client (another address, its own keep-alive agent) asks every 100 ms meanwhile
    const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' });
    const statuses: number[] = [];
    let asking = true;
    const other = (async () => {
      while (asking) {
        statuses.push(await statusOf(ts.url, '/health', agent));
        await sleep(100);
      }
    })();

    try {
      await waitFor(() => slowHeaders.every((c) => c.closed), headersTimeoutMs + interval + slack, 50);
      clearInterval(dribble);
      const held = slowHeaders.map((c) => c.heldMs);
      t.diagnostic(`slow-header sockets held ${Math.round(Math.min(...held))}–${Math.round(Math.max(...held))} ms`);
      assert.ok(Math.min(...held) >= headersTimeoutMs - 100, `closed after ${Math.min(...held)} ms, before the header timeout`);
      for (const c of [...partialLine, ...partialHeaders, dribbler]) {
        assert.match(c.received, /^HTTP\/1\.1 408 /, 'answered 408');
        assert.match(c.received, /"error":"VALIDATION_ERROR"/);
      }
      assert.ok(!slowBody.closed, 'the request timeout is longer than the header timeout');

      await waitFor(() => slowBody.closed, requestTimeoutMs + interval + slack, 50);
      t.diagnostic(`slow-body socket held ${Math.round(slowBody.heldMs)} ms`);
      assert.ok(slowBody.heldMs >= requestTimeoutMs - 100, `closed after ${slowBody.heldMs} ms`);
      assert.match(slowBody.received, /^HTTP\/1\.1 408 /);

      // the stream's request completed long ago: it outlives both timeouts and keeps receiving
      assert.ok(!stream.closed, 'the stream was closed');
      assert.ok(stream.heldMs > requestTimeoutMs);
      assert.match(stream.received, /^HTTP\/1\.1 200 [\s\S]*event: snapshot/);
      const before = stream.received.length;
      await waitFor(() => stream.received.length > before, 2000);
      // idle between requests for longer than the header timeout, the keep-alive connection serves on
      assert.ok(!keepAlive.closed);
      assert.ok(keepAlive.heldMs > headersTimeoutMs);
      assert.equal(await keepAlive.get('/health'), 200);
    } finally {
      clearInterval(dribble);
      asking = false;
      await other;
      agent.destroy();
      for (const c of [stream, keepAlive, slowBody, ...slowHeaders]) c.close();
    }
    assert.ok(statuses.length >= 20, `${statuses.length} requests`);
    assert.deepEqual(new Set(statuses), new Set([200]), 'every request of the other client succeeded');
  });
});

describe('per-address connection cap', () => {
  let ts: TestService;
  before(async () => {
    ts = await startService({ ...HIGH_RATE, MAX_CONNECTIONS_PER_IP: '20', SSE_MAX_PER_IP: '10', TRUST_PROXY: '127.0.0.3' });
  });
  after(async () => {
    await ts.close();
  });

  test('the connection over MAX_CONNECTIONS_PER_IP is reset at once; held ones, other addresses and proxies are served', async () => {
    const held = Array.from({ length: 20 }, () => new RawConnection(ts.url, '127.0.0.1'));
    const extra: RawConnection[] = [];
    try {
      // each asks once, so the server has accepted and counted all 20
      assert.deepEqual(await Promise.all(held.map((c) => c.get('/health'))), Array(20).fill(200));

      const over = new RawConnection(ts.url, '127.0.0.1');
      extra.push(over);
      await over.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await waitFor(() => over.closed, 1000, 5);
      assert.equal(over.received, '', 'reset without an answer');

      // the 20 held connections still work
      assert.deepEqual(await Promise.all(held.map((c) => c.get('/health'))), Array(20).fill(200));

      // another address has its own count
      const neighbours = Array.from({ length: 5 }, () => new RawConnection(ts.url, '127.0.0.2'));
      extra.push(...neighbours);
      assert.deepEqual(await Promise.all(neighbours.map((c) => c.get('/health'))), Array(5).fill(200));

      // a TRUST_PROXY peer carries many clients: no per-address cap
      const proxied = Array.from({ length: 25 }, () => new RawConnection(ts.url, '127.0.0.3'));
      extra.push(...proxied);
      assert.deepEqual(await Promise.all(proxied.map((c) => c.get('/health'))), Array(25).fill(200));

      // a closed connection frees its slot
      held[0]!.close();
      let again: RawConnection | null = null;
      await waitFor(async () => {
        const c = new RawConnection(ts.url, '127.0.0.1');
        extra.push(c);
        const status = await c.get('/health', 500).catch(() => 0);
        if (status === 200) again = c;
        return again !== null;
      }, 3000, 50);
      const refused = new RawConnection(ts.url, '127.0.0.1');
      extra.push(refused);
      await waitFor(() => refused.closed, 1000, 5);
      assert.equal(refused.received, '');
    } finally {
      for (const c of [...held, ...extra]) c.close();
    }
  });
});

/** The status of a GET through `agent` (node:http, so the source address can be chosen). */
function statusOf(url: string, path: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a clean stop', () => {
  test('answers the request in flight, then closes its keep-alive connection at once, not after the keep-alive timeout', async () => {
    const svc = await startService(HIGH_RATE);
    const conn = new RawConnection(svc.url);
    try {
      assert.equal(await conn.get('/health'), 200, 'a keep-alive connection that has served a request');
      // The next request's head arrives, its body not yet: it is in flight when the stop begins.
      const body = JSON.stringify({ walletAddress: `0x${'ab'.repeat(20)}` });
      await conn.write(`POST /auth/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      await sleep(100);
      const started = performance.now();
      const stopped = svc.close().then(() => performance.now() - started);
      await sleep(200);
      await conn.write(body);
      await waitFor(() => /^HTTP\/1\.1 \d{3}/m.test(conn.received.split('\r\n\r\n').slice(2).join('')) || conn.closed, 3_000, 5);
      assert.match(conn.received, /HTTP\/1\.1 200 OK[\s\S]*HTTP\/1\.1 (200|201)/, 'the request in flight was answered');
      const ms = await Promise.race([stopped, sleep(5_000).then(() => Number.POSITIVE_INFINITY)]);
      assert.ok(ms < 5_000, `the stop took ${ms.toFixed(0)} ms (the keep-alive timeout is ${SERVER_LIMITS.keepAliveTimeoutMs} ms)`);
      await waitFor(() => conn.closed, 1_000, 5);
    } finally {
      conn.close();
    }
  });
});
