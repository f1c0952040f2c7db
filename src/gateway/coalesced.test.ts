/**
 * The coalesced read behind the gateways' read barriers (src/gateway/replica-door.ts) and session
 * revocation reads (src/roles/gateway.ts): shown with reads answered by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coalesced } from './coalesced.ts';

/** A read whose every call is answered by hand, numbered in the order the calls were sent. */
function manualReads() {
  const pending: ((value: number) => void)[] = [];
  const read = () => new Promise<number>((resolve) => pending.push(resolve));
  const answer = async (index: number) => {
    pending[index]!(index);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { read, answer, sent: () => pending.length };
}

test('a caller arriving while a read is in flight is answered by a read sent after it arrived', async () => {
  const reads = manualReads();
  const current = coalesced(reads.read);
  const first = current();
  const late = current();
  assert.equal(reads.sent(), 1, 'the late caller does not send a read of its own while one is in flight');
  await reads.answer(0);
  assert.equal(await first, 0);
  assert.equal(reads.sent(), 2, 'the late caller\'s read goes out once the one in flight returns');
  await reads.answer(1);
  assert.equal(await late, 1, 'not the answer of the read that began before it arrived');
});

test('every caller arriving before the next read is sent shares it', async () => {
  const reads = manualReads();
  const current = coalesced(reads.read);
  void current();
  const waiting = [current(), current(), current()];
  await reads.answer(0);
  await reads.answer(1);
  assert.deepEqual(await Promise.all(waiting), [1, 1, 1]);
  assert.equal(reads.sent(), 2);
});

test('a failed read fails its callers only; the next read still goes out', async () => {
  let calls = 0;
  const current = coalesced(async () => {
    calls++;
    if (calls === 1) throw new Error('database away');
    return calls;
  });
  const first = current();
  const late = current();
  await assert.rejects(first, /database away/);
  assert.equal(await late, 2);
  assert.equal(await current(), 3, 'idle again: a new caller sends a read at once');
});
