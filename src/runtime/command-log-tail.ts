/**
 * The port a follower of the command log reads through (a standby core, a gateway's replica, the
 * history projector of the distributed mode): the records after a seq, in order, each checked
 * against the CRC chain, and a signal when the leader appended more. The follower owns the port;
 * the PostgreSQL command log implements it (adapters/postgres/command-log.ts).
 */
import type { JournalRecord } from './journal-port.ts';

/** A record as a follower reads it: with its chain link (the next read goes on from it) and id. */
export interface LinkedRecord extends JournalRecord {
  readonly link: number;
  /** The submitter's id of the command, null when it had none (the core's own commands). */
  readonly commandId: string | null;
}

export interface CommandLogTail {
  /**
   * Up to `limit` records after `afterSeq`, in seq order and contiguous, each checked against the
   * chain going on from `previousLink` (the link of record `afterSeq`; GENESIS when it is 0).
   * Throws, naming the seq, at a record that fails its check.
   */
  readAfter(afterSeq: number, previousLink: number, limit: number): Promise<LinkedRecord[]>;
  /** The seq of the last durable record (0 when the log is empty). */
  head(): Promise<number>;
  /**
   * Calls `listener` with the new head each time the leader commits a batch (PostgreSQL
   * LISTEN/NOTIFY); returns a function that stops it. A follower still polls now and then:
   * a notification is lost if the connection drops.
   */
  onAppended(listener: (head: number) => void): Promise<() => Promise<void>>;
}
