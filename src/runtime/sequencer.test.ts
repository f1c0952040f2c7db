/**
 * Group commit of the sequencer on a real journal (SQLite file, projections included): when
 * batches go to the writer, how many may be in flight, and that replies come back in submission
 * order and only once their batch is durable.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from '../adapters/store/database.ts';
import { Journal, type CommittedCommand } from '../adapters/store/journal.ts';
import { InlineJournalWriter, type JournalWriter } from '../adapters/store/journal-writer.ts';
import { historyProjectors } from '../adapters/store/projections/index.ts';
import { coreConfig } from '../config/core.ts';
import { Exchange } from '../core/exchange.ts';
import { fx } from '../core/money.ts';
import { Sequencer, type SequencerOptions } from './sequencer.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'sequencer-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A real journal writer whose commits wait until the test releases them, one batch at a time. */
class GatedWriter implements JournalWriter {
  readonly sent: number[] = [];
  private readonly gates: (() => void)[] = [];
  constructor(private readonly inner: JournalWriter) {}

  append(batch: readonly CommittedCommand[]): Promise<void> {
    this.sent.push(batch.length);
    return new Promise<void>((resolve) => this.gates.push(resolve)).then(() => this.inner.append(batch));
  }

  /** Lets the oldest waiting batch commit. */
  release(): void {
    this.gates.shift()?.();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

let files = 0;
function setUp(options: Omit<SequencerOptions, 'onFatal'>) {
  const db = openDatabase(join(dir, `exchange-${++files}.sqlite`));
  const journal = new Journal(db, historyProjectors(db));
  const writer = new GatedWriter(new InlineJournalWriter(journal));
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const sequencer = new Sequencer(exchange, journal, writer, { now: () => Date.UTC(2026, 10, 22) }, { ...options, onFatal: () => {} });
  return { journal, writer, sequencer };
}

const deposit = (i: number) => ({
  type: 'chain.deposit_observed' as const,
  txHash: `0x${i.toString(16).padStart(64, '0')}`,
  account: `0x${'a'.repeat(40)}`,
  amount: fx('1'),
  confirmations: 1,
});

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A few event-loop turns: a commit's acknowledgement and the flush it schedules take more than one. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
}

test('a burst is sent in slices of earlyFlushAt while it is being applied, the rest at the end of the turn', async () => {
  const { writer, sequencer, journal } = setUp({ earlyFlushAt: 2, maxInFlight: 4 });
  const order: number[] = [];
  const replies = [0, 1, 2, 3, 4].map((i) => sequencer.submit(deposit(i)).then((o) => (assert.ok(o.ok), order.push(i))));
  assert.deepEqual(writer.sent, [2, 2], 'two slices left during the burst itself');
  await tick();
  assert.deepEqual(writer.sent, [2, 2, 1], 'the remainder left at the end of the turn');
  assert.equal(journal.head(), 0, 'nothing is durable before the writer commits');
  for (let i = 0; i < 3; i++) writer.release();
  await Promise.all(replies);
  assert.deepEqual(order, [0, 1, 2, 3, 4], 'replies in submission order');
  assert.equal(journal.head(), 5);
});

test('with maxInFlight batches in flight, commands collect and the next batch takes all of them', async () => {
  const { writer, sequencer, journal } = setUp({ earlyFlushAt: 2, maxInFlight: 1 });
  let answered = 0;
  const replies = [0, 1, 2, 3, 4, 5, 6].map((i) => sequencer.submit(deposit(i)).then(() => answered++));
  await tick();
  assert.deepEqual(writer.sent, [2], 'one batch in flight; the other five wait');
  assert.equal(answered, 0);
  writer.release();
  await settle();
  assert.equal(answered, 2, 'the first batch is answered once durable');
  assert.deepEqual(writer.sent, [2, 5], 'the commit sent everything that waited as one batch');
  writer.release();
  await Promise.all(replies);
  assert.equal(journal.head(), 7);
});
