/**
 * The command bus's messages: a request carries its command id and a command of any type
 * exactly (bigints included); a malformed request is refused with a reason rather than misread;
 * a reply reads back as it was sent, and a malformed one reads as INTERNAL rather than throwing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reject } from '../../core/errors.ts';
import { encodeCommand } from '../store/command-codec.ts';
import { commandOfEachType, seededRandom } from '../store/command-samples.ts';
import { decodeReply, decodeRequest, encodeReply, encodeRequest } from './command-wire.ts';

test('a request carries the command id and the command exactly', () => {
  for (const command of commandOfEachType(seededRandom(3))) {
    const commandId = `3f0c2f6e-6a1d-4f7e-9d1c-${command.type.length.toString().padStart(12, '0')}`;
    assert.deepEqual(decodeRequest(encodeRequest(commandId, command)), { commandId, command });
  }
  const order = commandOfEachType(seededRandom(3))[8]!;
  assert.equal(decodeRequest(encodeRequest('é'.repeat(127), order)).commandId, 'é'.repeat(127));
  assert.throws(() => encodeRequest('', order), /1 to 255 bytes/);
  assert.throws(() => encodeRequest('x'.repeat(256), order), /1 to 255 bytes/);
});

test('a malformed request is refused with its reason', () => {
  const order = encodeCommand({ type: 'clock.tick' });
  const request = (...parts: (number[] | Buffer)[]) => Buffer.concat(parts.map((p) => Buffer.from(p)));
  assert.throws(() => decodeRequest(request([1, 1])), /too short/);
  assert.throws(() => decodeRequest(request([2, 1, 65], order)), /version 2 is unknown/);
  assert.throws(() => decodeRequest(request([1, 0], order)), /without a command id/);
  assert.throws(() => decodeRequest(request([1, 9, 65, 66])), /without a command id and a command/);
  assert.throws(() => decodeRequest(request([1, 1, 0xff], order)), /encoded data was not valid/);
  assert.throws(() => decodeRequest(request([1, 1, 65], order.subarray(0, order.length - 1))), /journal record/);
  assert.throws(() => decodeRequest(request([1, 1, 65], encodeCommand([1, 2]))), /has no type/);
});

test('a reply reads back as sent; a malformed one reads as INTERNAL', () => {
  for (const reply of [{ ok: true as const, seq: 1 }, { ok: true as const, seq: 2 ** 40 }, reject('POST_ONLY_WOULD_CROSS', 'would cross at 97,100.5')]) {
    assert.deepEqual(decodeReply(encodeReply(reply)), reply);
  }
  for (const garbage of ['', '{', 'null', '{"seq":0}', '{"seq":1.5}', '{"code":"NOPE","message":"x"}', '{"code":"INTERNAL"}']) {
    const reply = decodeReply(Buffer.from(garbage));
    assert.equal(!reply.ok && reply.code, 'INTERNAL', garbage);
  }
});
