/**
 * The journal worker thread: owns a write connection to the service database and appends each batch
 * it receives (commands to the journal, events to every history projection) in one transaction,
 * then acknowledges it. Runs batches strictly one after another, in arrival order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from './database.ts';
import { Journal, type CommittedCommand } from './journal.ts';
import { historyProjectors } from './projections/index.ts';

const db = openDatabase((workerData as { dbPath: string }).dbPath);
const journal = new Journal(db, historyProjectors(db));

parentPort!.on('message', (message: { type: 'append'; id: number; batch: CommittedCommand[] }) => {
  try {
    journal.append(message.batch);
    parentPort!.postMessage({ id: message.id, ok: true });
  } catch (error) {
    parentPort!.postMessage({ id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
