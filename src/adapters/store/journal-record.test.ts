/**
 * A journal record's stored form, without SQLite: `decodeRecord` inverts `encodeRecord` for every
 * command type, checks the link over exactly the stored bytes (or, for a record an older build
 * wrote, its JSON text as that build linked it), and names the seq of a record that fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { encode } from './codec.ts';
import { commandOfEachType, seededRandom } from './command-samples.ts';
import type { JournalRecord } from '../../runtime/journal-port.ts';
import { decodeRecord, encodeRecord, GENESIS, link } from './journal-record.ts';

test('decodeRecord(encodeRecord(r, link), link) is r, for a chain of records of every command type', () => {
  fc.assert(fc.property(fc.integer(), fc.integer({ min: 1, max: 1e9 }), (seed, firstSeq) => {
    let previous = GENESIS;
    commandOfEachType(seededRandom(seed)).forEach((command, i) => {
      const record: JournalRecord = { seq: firstSeq + i, ts: 1_795_780_800_000 + i, command };
      const stored = encodeRecord(record, previous);
      assert.ok(stored.command instanceof Uint8Array);
      assert.equal(stored.chain, link(previous, record.seq, record.ts, stored.command));
      assert.deepStrictEqual(decodeRecord(stored, previous), record);
      // A segment file hands back plain bytes, not a Buffer.
      assert.deepStrictEqual(decodeRecord({ ...stored, command: new Uint8Array(stored.command) }, previous), record);
      previous = stored.chain!;
    });
  }), { numRuns: 200 });
});

test('a record an older build wrote (JSON text, linked over the text) decodes as it is', () => {
  const command = commandOfEachType(seededRandom(7))[0]!;
  const text = encode(command);
  const chain = crc32(text, crc32('12:1000:', 99));
  assert.deepStrictEqual(decodeRecord({ seq: 12, ts: 1000, command: text, chain }, 99), { seq: 12, ts: 1000, command });
});

test('a wrong previous link, a missing link or a changed time is refused, naming the seq', () => {
  const stored = encodeRecord({ seq: 5, ts: 1000, command: { type: 'clock.tick' } }, 42);
  assert.throws(() => decodeRecord(stored, 43), /seq 5 does not match its checksum/);
  assert.throws(() => decodeRecord({ ...stored, chain: null }, 42), /seq 5 does not match its checksum/);
  assert.throws(() => decodeRecord({ ...stored, ts: 1001 }, 42), /seq 5 does not match its checksum/);
  const garbage = Buffer.from([9, 9]);
  assert.throws(() => decodeRecord({ seq: 6, ts: 1, command: garbage, chain: link(0, 6, 1, garbage) }, 0), /seq 6 does not decode \(journal record format 9 is unknown/);
});
