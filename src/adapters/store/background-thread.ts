/**
 * What the snapshot workers (store/snapshot-worker.ts, postgres/pg-snapshot-worker.ts) share as
 * background threads: a replica of the core they carry forward, and a lower priority.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import type { Exchange } from '../../core/exchange.ts';

/** A worker's own core: the state at `seq`, whose record's chain link is `link`. */
export interface Replica {
  readonly exchange: Exchange;
  seq: number;
  link: number;
}

/** The thread's nice value: background work, which the process's own threads come before. */
const NICE = 10;

/**
 * Best effort, Linux only (a thread's nice value is its own there): the calling thread runs at a
 * lower priority than the event loop, so its replay does not slow order entry.
 */
export function lowerThreadPriority(): void {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), NICE);
  } catch {
    // elsewhere the thread keeps the process's priority
  }
}
