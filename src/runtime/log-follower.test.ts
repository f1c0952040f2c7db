/**
 * The follower's own logic (order, waiters, expected ids, divergence) over an in-memory log that
 * implements the port; the PostgreSQL log is followed for real in test/cluster.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coreConfig } from '../config/core.ts';
import type { Command } from '../core/commands.ts';
import { Exchange } from '../core/exchange.ts';
import { fx } from '../core/money.ts';
import type { CommandLogTail, LinkedRecord } from './command-log-tail.ts';
import { LogFollower } from './log-follower.ts';

const T0 = Date.UTC(2026, 10, 27);

class MemoryLog implements CommandLogTail {
  readonly records: LinkedRecord[] = [];
  private listeners: ((head: number) => void)[] = [];
  reads = 0;

  append(command: Command, commandId: string | null = null): number {
    const seq = this.records.length + 1;
    this.records.push({ seq, ts: T0 + seq, command, link: seq * 7, commandId });
    for (const l of this.listeners) l(seq);
    return seq;
  }

  async readAfter(afterSeq: number, previousLink: number, limit: number): Promise<LinkedRecord[]> {
    this.reads++;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(previousLink, afterSeq * 7, 'the follower goes on from the link of the last record it applied');
    return this.records.slice(afterSeq, afterSeq + limit);
  }

  async head(): Promise<number> {
    return this.records.length;
  }

  async onAppended(listener: (head: number) => void): Promise<() => Promise<void>> {
    this.listeners.push(listener);
    return async () => void (this.listeners = this.listeners.filter((l) => l !== listener));
  }
}

const deposit = (i: number): Command => ({
  type: 'chain.deposit_observed',
  txHash: `0x${i.toString(16).padStart(64, '0')}`,
  account: `0x${'b'.repeat(40)}`,
  amount: fx('5'),
  confirmations: 1,
});

function follower(log: MemoryLog, onFatal: (e: Error) => void = (e) => assert.fail(e)) {
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  return { exchange, follower: new LogFollower(exchange, log, { pageSize: 3, pollMs: 1_000, onFatal }) };
}

test('catches up in pages, then applies what the leader appends, with the leader\'s times', async () => {
  const log = new MemoryLog();
  for (let i = 0; i < 7; i++) log.append(deposit(i));
  const { exchange, follower: f } = follower(log);
  const seen: string[] = [];
  f.subscribe((events) => seen.push(...events.map((e) => e.type)));
  await f.start();
  assert.equal(f.appliedSeq, 7);
  assert.ok(log.reads >= 3, 'seven records in pages of three');
  assert.equal(exchange.now(), T0 + 7, 'applied at the leader\'s stamped time');
  log.append(deposit(7));
  await f.whenApplied(8);
  assert.equal(f.appliedSeq, 8);
  assert.ok(seen.length >= 8, 'events of every record published');
  await f.stop();
});

test('an expected command id is answered with the replica\'s own outcome, and remembered', async () => {
  const log = new MemoryLog();
  const { follower: f } = follower(log);
  await f.start();
  const outcome = new Promise<{ ok: boolean; seq: number }>((resolve) => f.expect('id-1', (o, seq) => resolve({ ok: o.ok, seq })));
  log.append(deposit(1), 'id-0');
  log.append(deposit(2), 'id-1');
  assert.deepEqual(await outcome, { ok: true, seq: 2 });
  assert.equal(f.seqOf('id-0'), 1);
  assert.equal(f.seqOf('nope'), undefined);
  await f.stop();
});

test('waiters resolve in seq order as the replica passes them', async () => {
  const log = new MemoryLog();
  const { follower: f } = follower(log);
  await f.start();
  const order: number[] = [];
  const waits = [3, 1, 2].map((s) => f.whenApplied(s).then(() => order.push(s)));
  for (let i = 0; i < 3; i++) log.append(deposit(i));
  await Promise.all(waits);
  assert.deepEqual(order, [1, 2, 3]);
  await f.stop();
});

test('a record the replica cannot apply stops it loudly and rejects its waiters', async () => {
  const log = new MemoryLog();
  let fatal: Error | null = null;
  const { follower: f } = follower(log, (e) => (fatal = e));
  await f.start();
  const waiting = f.whenApplied(2);
  log.append(deposit(1));
  log.append({ type: 'treasury.grant', account: `0x${'c'.repeat(40)}`, asset: 'NOPE', amount: fx('1') } as Command);
  await assert.rejects(waiting, /could not apply seq 2/);
  assert.match(String(fatal), /could not apply seq 2/);
  assert.equal(f.isHealthy(), false);
  await f.stop();
});
