/**
 * Journal writers: how the sequencer makes a batch durable. Both append the batch's commands to the
 * journal and its events to the history projections in one SQLite transaction (WAL,
 * synchronous=FULL) and resolve only after that transaction committed.
 *
 *   InlineJournalWriter   in the calling thread (tools, tests of the store);
 *   WorkerJournalWriter   in a worker thread with its own connection, so the event loop keeps
 *                         serving requests while a batch is being committed and fsynced. Batches
 *                         are committed strictly in the order they were sent; the batches that
 *                         queue up while one transaction commits share the next one
 *                         (journal-worker.ts); the commands and the events the projections
 *                         consume cross to the worker by structured clone, each command's
 *                         events flattened into one array of values (journal-message.ts).
 */
import { Worker } from 'node:worker_threads';
import type { ExchangeEvent } from '../../core/events.ts';
import type { CommittedCommand, Journal } from './journal.ts';
import type { AppendAck, AppendMessage, JournalWorkerData } from './journal-worker.ts';
import { packCommitted } from './journal-message.ts';

export interface JournalWriter {
  /** Resolves once the batch is durable; rejects if it could not be written (fail-stop). */
  append(batch: readonly CommittedCommand[]): Promise<void>;
  close(): Promise<void>;
}

export class InlineJournalWriter implements JournalWriter {
  constructor(private readonly journal: Journal) {}

  append(batch: readonly CommittedCommand[]): Promise<void> {
    try {
      this.journal.append(batch);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

export class WorkerJournalWriter implements JournalWriter {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failure: Error | null = null;
  private acknowledged = 0;

  /**
   * `projected`: the event types the projections consume. Only those cross to the worker: the
   * structured clone of a batch is paid on the event loop, per event. `maxCoalesced`: batches
   * that may share one transaction.
   */
  constructor(dbPath: string, private readonly projected: ReadonlySet<ExchangeEvent['type']>, maxCoalesced: number) {
    const data: JournalWorkerData & { entry: string } = {
      entry: new URL('./journal-worker.ts', import.meta.url).href,
      dbPath,
      maxCoalesced,
    };
    this.worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: data });
    this.worker.on('message', (ack: AppendAck) => this.settle(ack));
    this.worker.on('error', (error) => this.failAll(error));
    this.worker.on('exit', (code) => {
      if (this.waiting.size > 0 || code !== 0) this.failAll(new Error(`journal worker exited with code ${code}`));
    });
  }

  append(batch: readonly CommittedCommand[]): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const message: AppendMessage = { id, batch: batch.map((c) => packCommitted(c, this.projected)) };
      this.worker.postMessage(message);
    });
  }

  /** Transactions the worker has acknowledged (each may hold several batches). */
  get transactions(): number {
    return this.acknowledged;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }

  /** One acknowledgement answers every batch up to `upTo` (ids rise, and the map keeps their order). */
  private settle(ack: AppendAck): void {
    if (!ack.ok) return this.failAll(new Error(ack.error ?? 'journal write failed'));
    this.acknowledged++;
    for (const [id, w] of this.waiting) {
      if (id > ack.upTo) break;
      this.waiting.delete(id);
      w.resolve();
    }
  }

  private failAll(error: Error): void {
    this.failure ??= error;
    for (const w of this.waiting.values()) w.reject(this.failure);
    this.waiting.clear();
  }
}
