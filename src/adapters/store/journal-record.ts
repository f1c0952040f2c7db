/**
 * One journal record in its stored form, and the checksum chain over them: the only place that
 * knows how a record is written and read back. The journal's SQLite table stores these (journal.ts);
 * whatever else keeps records (a segment file, an offline audit) reads them through `decodeRecord`,
 * so a record checks and decodes the same wherever it is.
 *
 * The command is stored as bytes in the compact encoding (command-codec.ts). Records written by
 * builds before it hold JSON text (codec.ts); they stay as they are and still read, by the stored
 * value's type: text is JSON, bytes are compact. Each record's link is the CRC-32 of exactly the
 * stored value (the text's UTF-8 for an old record, the bytes for a new one), so journals linked
 * before the compact encoding keep verifying (docs/architecture.md, "The journal's record encoding").
 */
import { crc32 } from 'node:zlib';
import type { Command } from '../../core/commands.ts';
import type { JournalRecord } from '../../runtime/journal-port.ts';
import { decode } from './codec.ts';
import { encodeCommand } from './command-codec.ts';

/** A record as stored: the command encoded (bytes) or, from an older build, JSON text; its link. */
export interface StoredRecord {
  readonly seq: number;
  readonly ts: number;
  readonly command: string | Uint8Array;
  /** null only in a journal written before the chain, until it is linked (journal.ts). */
  readonly chain: number | null;
}

/** The link before the first record. */
export const GENESIS = 0;

/**
 * A record's link: the CRC-32 of its seq, time and stored command, continued from the previous
 * record's link. Replay recomputes every link and stops at the first that differs, naming the seq:
 * a byte changed in a record (a disk fault, a hand edit) would otherwise be replayed as if it had
 * been acknowledged, and only a change that moved a ledger balance would show (the replay check).
 * A checksum against corruption, not a seal against someone who can rewrite the file (who could
 * recompute any unkeyed chain); CRC-32 costs about 0.4 µs a record where SHA-256 cost 2.3 µs.
 */
export function link(previous: number, seq: number, ts: number, command: string | Uint8Array): number {
  return crc32(command, crc32(`${seq}:${ts}:`, previous));
}

/** `record` as it is stored, linked on from `previous` (the link of the record before it). */
export function encodeRecord(record: JournalRecord, previous: number): StoredRecord {
  const command = encodeCommand(record.command);
  return { seq: record.seq, ts: record.ts, command, chain: link(previous, record.seq, record.ts, command) };
}

/**
 * The record `stored` holds, after checking its link against `previous` (the link of the record
 * before it; GENESIS for the first). Throws naming the seq if the link differs (the record was
 * altered or corrupted after it was written) or the command does not decode. The next record's
 * `previous` is `stored.chain`.
 */
export function decodeRecord(stored: StoredRecord, previous: number): JournalRecord {
  const { seq, ts } = stored;
  if (stored.chain !== link(previous, seq, ts, stored.command)) {
    throw new Error(`the journal record at seq ${seq} does not match its checksum: it was altered or corrupted after it was written; refusing to replay it`);
  }
  let command: Command;
  try {
    command = decode<Command>(stored.command);
  } catch (error) {
    throw new Error(`the journal record at seq ${seq} does not decode (${error instanceof Error ? error.message : String(error)}); refusing to replay it`, { cause: error });
  }
  return { seq, ts, command };
}
