/**
 * Stream admission near the global cap (gateway/streams/admission.ts, gateway/fair-share.ts) against
 * the real service over real sockets, from several loopback addresses (Linux routes all of
 * 127.0.0.0/8 to loopback, so a socket bound to 127.0.0.2 is another client address).
 *
 * With SSE_MAX_CONNECTIONS=20 and SSE_MAX_PER_IP=8, three addresses opening every stream they can
 * used to fill the server (8 + 8 + 4) and every other client got 503. Past 80 % (16 streams) an
 * address's ceiling falls with the room left: the third address is refused 429 at 2 streams, a new
 * address opens one, new addresses keep getting one each until the true cap, and only then is a
 * stream refused 503; a slot that frees goes to an address holding none, not back to a heavy holder.
 */
import assert from 'node:assert/strict';
import { request, type IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startService, waitFor, type TestService } from '../support/harness.ts';
import { STREAM_ENV, stopService, type Json } from './support.ts';

interface Opened {
  readonly status: number;
  readonly body: Json;
  close(): void;
}

/** Opens the BTC-PERP book stream from `localAddress`: 200 once its snapshot arrived, else the refusal's body. */
function openStream(url: string, localAddress: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/perps/book-stream?marketId=BTC-PERP`, { localAddress, agent: false }, (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      const close = () => req.destroy();
      if (res.statusCode === 200) {
        res.on('data', (d: string) => {
          text += d;
          if (text.includes('event: snapshot')) resolve({ status: 200, body: null, close });
        });
        res.on('error', () => undefined);
        return;
      }
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), close }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('stream fair share near the global cap', () => {
  let ts: TestService;
  const open: Opened[] = [];
  before(async () => {
    ts = await startService({ ...STREAM_ENV, SSE_MAX_CONNECTIONS: '20', SSE_MAX_PER_IP: '8' });
  });
  after(async () => {
    for (const s of open) s.close();
    await stopService(ts);
  });

  /** Opens streams from `address` until one is refused; returns how many opened and the refusal. */
  async function greedy(address: string): Promise<{ opened: number; refusal: Opened }> {
    for (let opened = 0; ; opened++) {
      const s = await openStream(ts.url, address);
      if (s.status !== 200) return { opened, refusal: s };
      open.push(s);
    }
  }

  test('a few greedy addresses cannot lock a new address out; new addresses get in until the true cap', async () => {
    const streams = () => ts.service.streams.stats().connections;
    const first = await greedy('127.0.0.1');
    const second = await greedy('127.0.0.2');
    assert.deepEqual([first.opened, second.opened], [8, 8], 'below 80 % only the per-IP cap applies');
    assert.equal(first.refusal.status, 429);
    assert.match(first.refusal.body.message, /at most 8 open streams per IP/);

    const third = await greedy('127.0.0.3');
    assert.equal(third.opened, 2, 'at 18 of 20 an address may hold ceil(8 * (2/4)^2) = 2');
    assert.equal(third.refusal.status, 429);
    assert.deepEqual(Object.keys(third.refusal.body).sort(), ['error', 'message']);
    assert.equal(third.refusal.body.error, 'RATE_LIMITED');
    assert.match(third.refusal.body.message, /holds 18 of its 20 streams/);
    assert.equal(streams(), 18, 'the greedy addresses left room');

    // a new address opens a stream; while the server is this full it holds one
    const fourth = await greedy('127.0.0.4');
    assert.equal(fourth.opened, 1);
    assert.equal(fourth.refusal.status, 429);
    // the last slot goes to another new address, then the server is full for everyone
    const fifth = await openStream(ts.url, '127.0.0.5');
    assert.equal(fifth.status, 200);
    open.push(fifth);
    assert.equal(streams(), 20);
    const full = await openStream(ts.url, '127.0.0.6');
    assert.equal(full.status, 503);
    assert.equal(full.body.error, 'UNAVAILABLE');

    // a freed slot: the heavy holder that gave it up is refused it, an address holding none gets it
    open.shift()!.close();
    await waitFor(() => streams() === 19);
    const back = await openStream(ts.url, '127.0.0.1');
    assert.equal(back.status, 429, JSON.stringify(back.body));
    const newcomer = await openStream(ts.url, '127.0.0.6');
    assert.equal(newcomer.status, 200);
    open.push(newcomer);
  });
});
