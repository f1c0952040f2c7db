/**
 * The journal worker thread: owns a write connection to the service database and makes batches
 * durable (commands to the journal, events to every history projection), strictly in arrival order.
 *
 * Group commit happens here, where the disk is: when a transaction ends, every batch that queued up
 * behind it (at most `maxCoalesced`) joins the next transaction, and one acknowledgement answers
 * them all. A commit costs about 200 us of fixed work (the WAL write and its fsync) against about
 * 30 us per command, so the slower the disk, the larger the transactions, without the event loop
 * having to guess when to send (measured: bench/gateway/orders.ts, docs/performance.md).
 */
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { openDatabase } from './database.ts';
import { Journal } from './journal.ts';
import { unpackCommitted, type PackedCommand } from './journal-message.ts';
import { historyProjectors } from './projections/index.ts';

export interface AppendMessage {
  readonly id: number;
  readonly batch: readonly PackedCommand[];
}

/** Every batch with an id up to `upTo` is durable (ok) or was not written (the worker failed). */
export interface AppendAck {
  readonly upTo: number;
  readonly ok: boolean;
  readonly error?: string;
}

export interface JournalWorkerData {
  readonly dbPath: string;
  readonly maxCoalesced: number;
}

const { dbPath, maxCoalesced } = workerData as JournalWorkerData;
const port: MessagePort = parentPort!;
const db = openDatabase(dbPath);
const journal = new Journal(db, historyProjectors(db));

port.on('message', (first: AppendMessage) => {
  const batches = [first.batch];
  let last = first.id;
  while (batches.length < maxCoalesced) {
    const queued = receiveMessageOnPort(port) as { message: AppendMessage } | undefined;
    if (queued === undefined) break;
    batches.push(queued.message.batch);
    last = queued.message.id;
  }
  let ack: AppendAck;
  try {
    // Unpacked inside the try: a malformed message fails its batches like a disk error would.
    journal.append(batches.flat().map(unpackCommitted));
    ack = { upTo: last, ok: true };
  } catch (error) {
    ack = { upTo: last, ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(ack);
});
