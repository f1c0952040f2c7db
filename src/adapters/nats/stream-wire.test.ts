/**
 * The stream relay's frames message (stream-wire.ts): what is written reads back, a damaged
 * message is refused whole, and the bytes read do not alias the message's buffer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeFrames, encodeFrames, ENTRY_FAIL, ENTRY_WRITE, type RelayEntry } from './stream-wire.ts';

test('a frames message reads back as written: epoch, seq, entries with their ids and bytes', () => {
  const entries: RelayEntry[] = [
    { kind: ENTRY_WRITE, ids: [1, 2, 0xffff_fffe], data: Buffer.from('id: 7\ndata: {}\n\n') },
    { kind: ENTRY_WRITE, ids: [3], data: Buffer.alloc(0) },
    { kind: ENTRY_FAIL, ids: [4], data: Buffer.from('{"code":"INTERNAL","message":"x","retryable":true}') },
  ];
  const back = decodeFrames(encodeFrames(0xdead_beef, 42, entries));
  assert.equal(back.epoch, 0xdead_beef);
  assert.equal(back.seq, 42);
  assert.deepEqual(back.entries.map((e) => ({ kind: e.kind, ids: e.ids, data: e.data.toString() })),
    entries.map((e) => ({ kind: e.kind, ids: e.ids, data: e.data.toString() })));
});

test('a message cut short or of an unknown kind is refused, not half read', () => {
  const whole = encodeFrames(1, 1, [{ kind: ENTRY_WRITE, ids: [1], data: Buffer.from('hello') }]);
  assert.throws(() => decodeFrames(whole.subarray(0, whole.length - 2)), /runs past the end/);
  assert.throws(() => decodeFrames(whole.subarray(0, 5)), /shorter than its header/);
  const odd = Buffer.from(whole);
  odd[8] = 9;
  assert.throws(() => decodeFrames(odd), /unknown entry kind 9/);
});

test('the bytes read are a copy: the message buffer may be reused at once', () => {
  const message = encodeFrames(1, 1, [{ kind: ENTRY_WRITE, ids: [1], data: Buffer.from('frame') }]);
  const entry = decodeFrames(message).entries[0]!;
  message.fill(0);
  assert.equal(entry.data.toString(), 'frame');
});
