/**
 * The journal's checksum chain on a real SQLite file: records replay as appended; a record altered
 * after it was written (its command, its time) stops the replay at its seq, from the start or from
 * a later seq; a journal written before the chain is linked once when it is opened, as it is.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Command } from '../../core/commands.ts';
import { fx } from '../../core/money.ts';
import { encode } from './codec.ts';
import { migrate, openDatabase } from './database.ts';
import { Journal, type CommittedCommand } from './journal.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'journal-chain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const transfer = (n: number): Command => ({
  type: 'wallet.transfer', account: `0x${'1'.repeat(40)}`, from: 'wallet', to: 'perps', amount: fx(String(n)),
});
const batch = (from: number, count: number): CommittedCommand[] =>
  Array.from({ length: count }, (_, i) => ({ ts: 1_000 + from + i, command: transfer(from + i), events: [] }));
const replayAll = (journal: Journal, fromSeq = 1) => [...journal.replay(fromSeq)].map((r) => r.seq);

test('records replay as appended; an altered command or time stops the replay at its seq', () => {
  const db = openDatabase(join(dir, 'altered.sqlite'));
  const journal = new Journal(db, []);
  journal.append(batch(1, 3));
  journal.append(batch(4, 4));
  assert.deepEqual(replayAll(journal), [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(replayAll(new Journal(db, []), 5), [5, 6, 7], 'a reopened journal, from a later seq');

  const command = (db.prepare('SELECT command FROM journal WHERE seq = 5').get() as { command: string }).command;
  db.prepare('UPDATE journal SET command = ? WHERE seq = 5').run(command.replace('"5000000000000000000"', '"9000000000000000000"'));
  assert.notEqual((db.prepare('SELECT command FROM journal WHERE seq = 5').get() as { command: string }).command, command);
  assert.throws(() => replayAll(journal), /seq 5 does not match its checksum/);
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
  db.prepare("UPDATE journal SET command = replace(command, 'perps', 'spot') WHERE seq = 3").run();
  assert.throws(() => replayAll(journal), /seq 3 does not match/);
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
