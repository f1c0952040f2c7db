/**
 * The worker journal writer on a real SQLite file: batches sent faster than the worker commits
 * share transactions, every batch is answered, and the journal holds them all in sending order.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { fx } from '../../core/money.ts';
import { openDatabase } from './database.ts';
import { Journal } from './journal.ts';
import { WorkerJournalWriter } from './journal-writer.ts';
import { historyProjectors } from './projections/index.ts';
import type { AppendAck, AppendMessage } from './journal-worker.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'journal-writer-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('batches that queue behind a commit share the next transaction, in order, each answered', async () => {
  const path = join(dir, 'exchange.sqlite');
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db)); // creates the schema the worker writes
  const maxCoalesced = 8;
  const writer = new WorkerJournalWriter(path, journal.projectedTypes(), maxCoalesced);
  try {
    const hashes = Array.from({ length: 50 }, (_, i) => `0x${i.toString(16).padStart(64, '0')}`);
    const answered: number[] = [];
    await Promise.all(hashes.map((txHash, i) => {
      const command = { type: 'chain.deposit_observed' as const, txHash, account: `0x${'b'.repeat(40)}`, amount: fx('1'), confirmations: 1 };
      return writer.append([{ ts: 1_000 + i, command, events: [] }]).then(() => answered.push(i));
    }));
    assert.deepEqual(answered, hashes.map((_, i) => i), 'every batch answered, in sending order');
    assert.ok(writer.transactions < 50, `50 batches sent at once took ${writer.transactions} transactions`);
    assert.ok(writer.transactions >= Math.ceil(50 / maxCoalesced), 'no transaction holds more than maxCoalesced batches');
    const stored = [...journal.replay()];
    assert.deepEqual(stored.map((r) => r.seq), hashes.map((_, i) => i + 1));
    assert.deepEqual(stored.map((r) => (r.command as { txHash: string }).txHash), hashes);
  } finally {
    await writer.close();
    db.close();
  }
});

test('a malformed message fails its batch with an error acknowledgement and writes nothing', async () => {
  const path = join(dir, 'malformed.sqlite');
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  const entry = new URL('./journal-worker.ts', import.meta.url).href;
  const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: { entry, dbPath: path, maxCoalesced: 8 } });
  try {
    const command = { type: 'clock.tick' };
    const message: AppendMessage = { id: 1, batch: [[1_000, command], [1_001, command, 9, 'not an event']] };
    worker.postMessage(message);
    const [ack] = (await once(worker, 'message')) as [AppendAck];
    assert.equal(ack.upTo, 1);
    assert.equal(ack.ok, false);
    assert.match(ack.error ?? '', /unknown event tag 9/);
    assert.equal([...journal.replay()].length, 0, 'no command of the failed batch was journaled');
  } finally {
    await worker.terminate();
    db.close();
  }
});
