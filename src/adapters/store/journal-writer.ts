/**
 * Journal writers: how the sequencer makes a batch durable in SQLite, the write side of its journal
 * port (`JournalWriter`, runtime/journal-port.ts). Both append the batch's commands to the journal
 * in one SQLite transaction (WAL, synchronous=FULL) and resolve only after it committed; the
 * history projections of its events are written afterwards, in a transaction of their own
 * (journal.ts), and `whenProjected` tells when the history has caught up with a journal seq.
 *
 *   InlineJournalWriter   in the calling thread (tools, tests of the store): projects each batch
 *                         right after appending it;
 *   WorkerJournalWriter   in a worker thread with its own connection, so the event loop keeps
 *                         serving requests while a batch is being committed and fsynced. Batches
 *                         are committed strictly in the order they were sent; the batches that
 *                         queue up while one transaction commits share the next one, and their
 *                         projections wait while appends keep arriving (journal-worker.ts); the
 *                         commands and the events the projections consume cross to the worker by
 *                         structured clone, each command's events flattened into one array of
 *                         values (journal-message.ts).
 */
import type { Worker } from 'node:worker_threads';
import type { ExchangeEvent } from '../../core/events.ts';
import type { CommittedCommand, JournalWriter } from '../../runtime/journal-port.ts';
import type { Journal } from './journal.ts';
import type { AppendMessage, JournalWorkerData, WorkerReport } from './journal-worker.ts';
import { packCommitted } from './journal-message.ts';
import { spawnWorker } from '../worker-entry.ts';

export class InlineJournalWriter implements JournalWriter {
  constructor(private readonly journal: Journal) {}

  append(batch: readonly CommittedCommand[]): Promise<void> {
    try {
      this.journal.project(batch, this.journal.append(batch));
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  whenProjected(seq: number): Promise<void> {
    const projected = this.journal.projectedSeq();
    return seq <= projected ? Promise.resolve() : Promise.reject(new Error(`history at seq ${projected}, not ${seq}`));
  }

  onFailure(): void {
    // Every failure surfaces as the rejection of the append that met it.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
}

export interface WorkerJournalOptions {
  /** The event types the projections consume. Only those cross to the worker: the structured
   * clone of a batch is paid on the event loop, per event. */
  readonly projectedTypes: ReadonlySet<ExchangeEvent['type']>;
  /** Batches that may share one journal transaction. */
  readonly maxCoalesced: number;
  /** Appended commands whose projection may wait while appends keep arriving. */
  readonly maxProjectionLag: number;
  /** Where the history stands once the sequencer has recovered: the journal's head (recover() projects up to it). */
  readonly projectedSeq: number;
  /** Orders that ended without a fill leave the history after this (journal-worker.ts); absent: kept. */
  readonly retention?: JournalWorkerData['retention'];
  /** DATA_DIR: journal rows archived in its segments leave the database (journal-worker.ts); absent: kept. */
  readonly archiveDataDir?: string;
}

export class WorkerJournalWriter implements JournalWriter {
  private readonly worker: Worker;
  private readonly projectedTypes: ReadonlySet<ExchangeEvent['type']>;
  private readonly waiting = new Map<number, Waiter>();
  /** History reads waiting for a journal seq, in the order they asked (seqs never decrease). */
  private readonly readers: { seq: number; waiter: Waiter }[] = [];
  private readonly failureListeners: ((error: Error) => void)[] = [];
  private nextId = 1;
  private failure: Error | null = null;
  private acknowledged = 0;
  private projectedSeq: number;
  private closing = false;
  /** Resolves once the worker has loaded its modules (or exited). */
  private readonly ready: Promise<void>;

  constructor(dbPath: string, options: WorkerJournalOptions) {
    this.projectedTypes = options.projectedTypes;
    this.projectedSeq = options.projectedSeq;
    const data: JournalWorkerData = {
      dbPath,
      maxCoalesced: options.maxCoalesced,
      maxProjectionLag: options.maxProjectionLag,
      retention: options.retention,
      archiveDataDir: options.archiveDataDir,
    };
    // From source through tsx, from the build as dist/journal-worker.js (adapters/worker-entry.ts).
    this.worker = spawnWorker(new URL('./journal-worker.ts', import.meta.url), data);
    this.ready = new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.on('message', (report: WorkerReport) => {
        if (report.kind === 'ready') resolve();
        else if (report.kind === 'appended') this.settle(report);
        else this.projected(report);
      });
    });
    this.worker.on('error', (error) => this.failAll(error));
    this.worker.on('exit', (code) => {
      if (!this.closing && (this.waiting.size > 0 || code !== 0)) this.failAll(new Error(`journal worker exited with code ${code}`));
    });
  }

  append(batch: readonly CommittedCommand[]): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const message: AppendMessage = { id, batch: batch.map((c) => packCommitted(c, this.projectedTypes)) };
      this.worker.postMessage(message);
    });
  }

  whenProjected(seq: number): Promise<void> {
    if (seq <= this.projectedSeq) return Promise.resolve();
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.readers.push({ seq, waiter: { resolve, reject } }));
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  /** Transactions the worker has acknowledged (each may hold several batches). */
  get transactions(): number {
    return this.acknowledged;
  }

  async close(): Promise<void> {
    this.closing = true;
    // Terminating a worker while it still evaluates its modules can abort the whole process in
    // V8 (a fatal "location_ != nullptr" check, nodejs/node#53238): wait until it is loaded.
    await this.ready;
    await this.worker.terminate();
  }

  /** One acknowledgement answers every batch up to `upTo` (ids rise, and the map keeps their order). */
  private settle(ack: WorkerReport): void {
    if (!ack.ok) return this.failAll(new Error(ack.error ?? 'journal write failed'));
    this.acknowledged++;
    for (const [id, w] of this.waiting) {
      if (id > ack.upTo) break;
      this.waiting.delete(id);
      w.resolve();
    }
  }

  private projected(report: WorkerReport): void {
    if (!report.ok) return this.failAll(new Error(`history projection failed: ${report.error ?? 'unknown error'}`));
    this.projectedSeq = report.upTo;
    let done = 0;
    while (done < this.readers.length && this.readers[done]!.seq <= report.upTo) this.readers[done++]!.waiter.resolve();
    this.readers.splice(0, done);
  }

  private failAll(error: Error): void {
    if (this.failure !== null) return;
    this.failure = error;
    for (const w of this.waiting.values()) w.reject(error);
    this.waiting.clear();
    for (const r of this.readers) r.waiter.reject(error);
    this.readers.length = 0;
    for (const listener of this.failureListeners) listener(error);
  }
}
