/**
 * The journal on a real SQLite file: records are stored compact (BLOBs) and replay as appended; a
 * record altered after it was written (a flipped byte of its command, its time) stops the replay at
 * its seq, from the start or from a later seq, and so does one that does not decode; a journal of
 * JSON text written by an older build (linked or from before the chain) still replays, with the
 * compact records appended after it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { crc32 } from 'node:zlib';
import type { Command } from '../../core/commands.ts';
import { fx } from '../../core/money.ts';
import { encode } from './codec.ts';
import { migrate, openDatabase, type Db } from './database.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { Journal } from './journal.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'journal-chain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const transfer = (n: number): Command => ({
  type: 'wallet.transfer', account: `0x${'1'.repeat(40)}`, from: 'wallet', to: 'perps', amount: fx(String(n)),
});
const batch = (from: number, count: number): CommittedCommand[] =>
  Array.from({ length: count }, (_, i) => ({ ts: 1_000 + from + i, command: transfer(from + i), events: [] }));
const replayAll = (journal: Journal, fromSeq = 1) => [...journal.replay(fromSeq)].map((r) => r.seq);
const stored = (db: Db, seq: number) => db.prepare('SELECT command, typeof(command) AS type FROM journal WHERE seq = ?').get(seq) as { command: Buffer | string; type: string };

/** Rows as a build before the compact encoding wrote them: JSON text, linked by CRC-32 over the text. */
function writeTextJournal(db: Db, items: readonly CommittedCommand[]): void {
  const insert = db.prepare('INSERT INTO journal (seq, ts, command, chain) VALUES (?, ?, ?, ?)');
  let previous = 0;
  for (const [i, item] of items.entries()) {
    const text = encode(item.command);
    previous = crc32(text, crc32(`${i + 1}:${item.ts}:`, previous));
    insert.run(i + 1, item.ts, text, previous);
  }
}

test('records are stored compact and replay as appended; a flipped byte or an altered time stops the replay at its seq', () => {
  const db = openDatabase(join(dir, 'altered.sqlite'));
  const journal = new Journal(db, []);
  journal.append(batch(1, 3));
  journal.append(batch(4, 4));
  assert.deepEqual(replayAll(journal), [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(replayAll(new Journal(db, []), 5), [5, 6, 7], 'a reopened journal, from a later seq');
  assert.deepEqual([...journal.replay()].map((r) => r.command), batch(1, 7).map((c) => c.command));

  const { command, type } = stored(db, 5);
  assert.equal(type, 'blob');
  assert.ok(Buffer.isBuffer(command) && command.length < Buffer.byteLength(encode(transfer(5))) / 2);
  for (let i = 0; i < command.length; i++) {
    const flipped = Buffer.from(command);
    flipped[i]! ^= 1 << (i % 8);
    db.prepare('UPDATE journal SET command = ? WHERE seq = 5').run(flipped);
    assert.throws(() => replayAll(journal), /seq 5 does not match its checksum/, `byte ${i} flipped`);
  }
  assert.throws(() => replayAll(journal, 3), /seq 5 does not match/);
  db.prepare('UPDATE journal SET command = ? WHERE seq = 5').run(command);
  assert.deepEqual(replayAll(journal), [1, 2, 3, 4, 5, 6, 7], 'restored, it replays again');

  db.prepare('UPDATE journal SET ts = ts + 1 WHERE seq = 2').run();
  assert.throws(() => replayAll(journal), /seq 2 does not match/);
  db.close();
});

test('a journal written before the chain is linked when opened and replays; later changes are caught', () => {
  const db = openDatabase(join(dir, 'old.sqlite'));
  migrate(db, [{ id: '0001_journal', sql: 'CREATE TABLE journal (seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, command TEXT NOT NULL);' }]);
  const insert = db.prepare('INSERT INTO journal (seq, ts, command) VALUES (?, ?, ?)');
  for (const [i, item] of batch(1, 5).entries()) insert.run(i + 1, item.ts, encode(item.command));

  const journal = new Journal(db, []);
  assert.equal((db.prepare('SELECT COUNT(*) AS n FROM journal WHERE chain IS NULL').get() as { n: number }).n, 0);
  assert.deepEqual(replayAll(journal), [1, 2, 3, 4, 5]);
  journal.append(batch(6, 2));
  assert.deepEqual(replayAll(new Journal(db, [])), [1, 2, 3, 4, 5, 6, 7], 'new records link on to the old ones');
  assert.deepEqual([stored(db, 5).type, stored(db, 6).type], ['text', 'blob']);
  db.prepare("UPDATE journal SET command = replace(command, 'perps', 'spot') WHERE seq = 3").run();
  assert.throws(() => replayAll(journal), /seq 3 does not match/);
  db.close();
});

test('a JSON journal an older build linked replays as it is; compact records follow it, and both are checked', () => {
  const db = openDatabase(join(dir, 'mixed.sqlite'));
  new Journal(db, []); // the schema
  writeTextJournal(db, batch(1, 4));
  const reopened = new Journal(db, []);
  assert.deepEqual([...reopened.replay()].map((r) => r.command), batch(1, 4).map((c) => c.command), 'the old records, as they were');
  reopened.append(batch(5, 3));
  assert.deepEqual([1, 4, 5, 7].map((seq) => stored(db, seq).type), ['text', 'text', 'blob', 'blob']);
  const mixed = new Journal(db, []);
  assert.deepEqual([...mixed.replay()].map((r) => r.command), batch(1, 7).map((c) => c.command));
  assert.deepEqual(replayAll(mixed, 4), [4, 5, 6, 7], 'from the last text record');
  assert.deepEqual(replayAll(mixed, 6), [6, 7], 'from a compact record');

  const old = stored(db, 2).command as string;
  db.prepare('UPDATE journal SET command = ? WHERE seq = 2').run(old.replace('"2000000000000000000"', '"9000000000000000000"'));
  assert.throws(() => replayAll(mixed), /seq 2 does not match its checksum/);
  db.prepare('UPDATE journal SET command = ? WHERE seq = 2').run(old);
  const compact = Buffer.from(stored(db, 6).command as Buffer);
  compact[compact.length - 1]! ^= 0x10;
  db.prepare('UPDATE journal SET command = ? WHERE seq = 6').run(compact);
  assert.throws(() => replayAll(mixed), /seq 6 does not match its checksum/);
  db.close();
});

test('a record whose link holds but whose command does not decode stops the replay at its seq', () => {
  const db = openDatabase(join(dir, 'undecodable.sqlite'));
  const journal = new Journal(db, []);
  journal.append(batch(1, 4));
  const good = stored(db, 3).command as Buffer;
  // Cut short, then relinked as a journal from before the chain would be: only decoding can tell.
  db.prepare('UPDATE journal SET command = ?, chain = NULL WHERE seq = 3').run(good.subarray(0, good.length - 2));
  db.prepare('UPDATE journal SET chain = NULL WHERE seq > 3').run();
  assert.throws(() => replayAll(new Journal(db, [])), /seq 3 does not decode \(journal record truncated\)/);
  // The same bytes as TEXT are read as JSON, which they are not.
  db.prepare('UPDATE journal SET command = ?, chain = NULL WHERE seq >= 3').run(good);
  db.prepare('UPDATE journal SET command = CAST(command AS TEXT) WHERE seq = 3').run();
  assert.throws(() => replayAll(new Journal(db, [])), /seq 3 (does not decode|does not match its checksum)/);
  db.close();
});

test('a link removed in the middle is not restored on open: the replay refuses the record', () => {
  const db = openDatabase(join(dir, 'unlinked.sqlite'));
  const journal = new Journal(db, []);
  journal.append(batch(1, 4));
  db.prepare('UPDATE journal SET chain = NULL WHERE seq = 2').run();
  assert.throws(() => replayAll(new Journal(db, [])), /seq 2 does not match/);
  db.close();
});
