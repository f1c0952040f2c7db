/**
 * CommandChanges: one record per touched order and position per command, emitted in the order they
 * were touched; an ended order's early record (a cancel's result) is the same object its event
 * carries, built once; nothing carries over to the next command.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommandChanges } from './command-changes.ts';
import type { ExchangeEvent } from './events.ts';
import type { FillRecord, OrderRecord, PositionRecord } from './records.ts';

interface FakeOrder { id: string; status: string; takerFills: FillRecord[] | null }

function harness() {
  const built: string[] = [];
  const events: ExchangeEvent[] = [];
  const changes = new CommandChanges<FakeOrder, string>({
    orderRecord: (o) => {
      built.push(o.id);
      return { id: o.id, status: o.status } as unknown as OrderRecord;
    },
    positionRecord: (p) => ({ id: p }) as unknown as PositionRecord,
    emit: (e) => events.push(e),
    afterPosition: () => {},
  });
  const orderEvents = () => events.filter((e) => e.type === 'order').map((e) => (e as { order: OrderRecord }).order);
  return { changes, built, events, orderEvents };
}

test('an ended order\'s early record is its snapshot: built once, the same object in the event', () => {
  const { changes, built, orderEvents } = harness();
  const a: FakeOrder = { id: '1', status: 'open', takerFills: null };
  const b: FakeOrder = { id: '2', status: 'cancelled', takerFills: null };
  changes.orders.add(a);
  changes.orders.add(b);
  const early = changes.recordOfEnded(b);
  changes.snapshot();
  changes.finish();
  assert.deepEqual(built, ['2', '1'], 'the ended order is built once, early; the other at the snapshot');
  const emitted = orderEvents();
  assert.deepEqual(emitted.map((r) => r.id), ['1', '2'], 'events keep the order of touching');
  assert.equal(emitted[1], early, 'the event carries the record the result holds');
});

test('the early record does not carry over: the next command snapshots the order afresh', () => {
  const { changes, built } = harness();
  const b: FakeOrder = { id: '2', status: 'cancelled', takerFills: null };
  changes.orders.add(b);
  changes.recordOfEnded(b);
  changes.snapshot();
  changes.finish();
  changes.orders.add(b);
  changes.snapshot();
  changes.finish();
  assert.deepEqual(built, ['2', '2'], 'the second command built its own record');
});

test('an early record is refused for an order the command did not touch, and twice in one command', () => {
  const { changes } = harness();
  const a: FakeOrder = { id: '1', status: 'cancelled', takerFills: null };
  const b: FakeOrder = { id: '2', status: 'cancelled', takerFills: null };
  assert.throws(() => changes.recordOfEnded(a), /touched/, 'untouched');
  changes.orders.add(a);
  changes.orders.add(b);
  changes.recordOfEnded(a);
  assert.throws(() => changes.recordOfEnded(b), /one ended order/, 'a second early record');
});
