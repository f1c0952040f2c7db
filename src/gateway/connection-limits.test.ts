/**
 * ConnectionLimiter on stand-in sockets (the per-address cap, the fair share past 80 % of the total,
 * the total, TRUST_PROXY peers counted only in the total, IPv6 per /64, a slot freed once on close,
 * refusals logged at most once a minute) and proxyMatcher (the forms Fastify's trustProxy takes).
 * Over real sockets: test/api/connection-limits.test.ts.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { ConnectionLimiter, proxyMatcher } from './connection-limits.ts';

class FakeSocket extends EventEmitter {
  destroyed = false;
  reset = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  resetAndDestroy(): this {
    this.reset = true;
    this.destroyed = true;
    return this;
  }
  close(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

function limiter(maxTotal: number, maxPerAddress: number, trustProxy: string[] = []) {
  const logs: Record<string, unknown>[] = [];
  const l = new ConnectionLimiter({ maxTotal, maxPerAddress }, trustProxy, (_m, detail) => logs.push(detail));
  const connect = (address: string) => {
    const s = new FakeSocket(address);
    l.accept(s as unknown as Socket);
    return s;
  };
  return { l, connect, logs };
}

test('per-address cap: the next connection is reset at once; a closed one frees its slot once', () => {
  const { l, connect, logs } = limiter(1000, 3);
  const held = [1, 2, 3].map(() => connect('203.0.113.5'));
  assert.ok(held.every((s) => !s.reset));
  const over = connect('203.0.113.5');
  assert.ok(over.reset);
  assert.ok(!connect('203.0.113.6').reset, 'another address is not affected');
  held[0]!.close();
  held[0]!.close();
  assert.equal(l.stats().open, 3);
  assert.ok(!connect('::ffff:203.0.113.5').reset, 'a freed slot is taken again (IPv4-mapped is the same address)');
  assert.ok(connect('203.0.113.5').reset);
  assert.deepEqual(l.stats().refused, { perAddress: 2, fairShare: 0, total: 0 });
  assert.equal(logs.length, 1, 'refusals are logged at most once a minute');
  assert.equal(logs[0]!.refused, 1);
});

test('IPv6 peers count per /64', () => {
  const { connect } = limiter(1000, 2);
  assert.ok(!connect('2001:db8:1:2::1').reset);
  assert.ok(!connect('2001:db8:1:2::ffff').reset);
  assert.ok(connect('2001:db8:1:2:aaaa::9').reset, 'same /64');
  assert.ok(!connect('2001:db8:1:3::1').reset, 'another /64');
});

test('past 80 % of the total an address holding many is refused while a new one gets in, until the total', () => {
  const { l, connect } = limiter(100, 40);
  for (let i = 0; i < 40; i++) assert.ok(!connect('198.51.100.1').reset);
  for (let i = 0; i < 40; i++) assert.ok(!connect('198.51.100.2').reset);
  // 80 open: ceil(40 * (free / 20)^2) for the third address
  let third = 0;
  while (!connect('198.51.100.3').reset) third++;
  assert.equal(third, 10, 'refused at 10 held with 90 open: ceil(40 * (10 / 20)^2) = 10');
  assert.equal(l.stats().refused.fairShare, 1);
  let others = 0;
  for (let a = 10; l.stats().open < 100; a++) if (!connect(`198.51.100.${a}`).reset) others++;
  assert.ok(others > 5);
  assert.equal(l.stats().open, 100);
  assert.ok(connect('198.51.100.250').reset, 'full');
  assert.equal(l.stats().refused.total, 1);
});

test('a TRUST_PROXY peer is counted in the total only', () => {
  const { l, connect } = limiter(10, 2, ['10.0.0.0/8']);
  for (let i = 0; i < 10; i++) assert.ok(!connect('10.1.2.3').reset, `proxy connection ${i}`);
  assert.equal(l.stats().open, 10);
  assert.ok(connect('10.1.2.3').reset, 'the total still applies');
  assert.ok(connect('203.0.113.1').reset);
});

test('proxyMatcher reads addresses, prefixes, netmasks and range names as Fastify does', () => {
  const m = proxyMatcher(['192.0.2.7', '198.51.100.0/24', '203.0.113.0/255.255.255.128', '2001:db8::/32', 'loopback']);
  assert.ok(m('192.0.2.7'));
  assert.ok(m('::ffff:192.0.2.7'));
  assert.ok(!m('192.0.2.8'));
  assert.ok(m('198.51.100.200'));
  assert.ok(m('203.0.113.127') && !m('203.0.113.128'));
  assert.ok(m('2001:db8:ffff::1') && !m('2001:db9::1'));
  assert.ok(m('127.5.6.7') && m('::1'));
  assert.ok(!proxyMatcher([])('127.0.0.1'));
  assert.ok(!proxyMatcher(['not-an-address', '10.0.0.0/99'])('10.0.0.1'));
});
