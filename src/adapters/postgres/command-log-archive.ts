/**
 * The command log's archive (migrations/postgres/5000_command_log_segments.sql; docs/architecture.md
 * "Distributed mode: archiving the command log"): without it `command_log` grows by about 280 bytes
 * a command for as long as the venue runs. The projector's snapshot worker moves the rows its
 * snapshots cover into `command_log_segments`, each row the bytes of an embedded journal segment
 * (adapters/store/journal-segments.ts, about 14 bytes a command), and the command log's readers take
 * from there what `command_log` no longer holds: a role replaying from seq 0 (no usable snapshot)
 * reads through the archive, checked against the same chain.
 *
 * What is never archived: the rows from the oldest kept snapshot on (a snapshot is checked against
 * the log's link at its seq, and followers start after it), the head row (the next leader reads the
 * head and its link from it), and rows younger than `ARCHIVE_AFTER_MS` of service time, so a
 * submission retried under its command id (the bus retries for 6 s) still finds its id in
 * `command_log` and is answered from it rather than applied twice.
 */
import type pg from 'pg';
import type { LinkedRecord } from '../../runtime/command-log-tail.ts';
import { encodeSegment, parseSegment, segmentName, segmentRecords, type SegmentHeader } from '../store/journal-segments.ts';
import { GENESIS, link } from '../store/journal-record.ts';

/** Rows younger than this (service time) stay in command_log: the window in which ids are checked. */
export const ARCHIVE_AFTER_MS = 10 * 60_000;

/** Records per archived segment: a few hundred kilobytes compressed, a few megabytes read at once. */
const PER_SEGMENT = 20_000;

/** The advisory lock one archiver holds while it moves rows (any other waits, then finds less to do). */
const ARCHIVE_LOCK = 0x65786172; // 'exar'

export interface ArchiveRun {
  /** Records moved into segments by this run. */
  readonly archived: number;
  readonly segments: readonly SegmentHeader[];
}

/**
 * Moves the rows of `command_log` before `beforeSeq` (the oldest kept snapshot's seq) whose service
 * time is before `beforeTs` into segments of at most `perSegment` records, each segment inserted and
 * its rows deleted in one transaction. Every row is checked against the chain before it leaves.
 */
export async function archiveCommandLog(pool: pg.Pool, beforeSeq: number, beforeTs: number, perSegment = PER_SEGMENT): Promise<ArchiveRun> {
  const segments: SegmentHeader[] = [];
  let archived = 0;
  for (;;) {
    const header = await archiveOne(pool, beforeSeq, beforeTs, perSegment);
    if (header === null) return { archived, segments };
    segments.push(header);
    archived += header.lastSeq - header.firstSeq + 1;
  }
}

async function archiveOne(pool: pg.Pool, beforeSeq: number, beforeTs: number, perSegment: number): Promise<SegmentHeader | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [ARCHIVE_LOCK]);
    const { rows: [bounds] } = await client.query<{ through: string | null; last_link: string | null; newest: string | null; head: string | null }>(
      `SELECT (SELECT max(last_seq) FROM command_log_segments) AS through,
              (SELECT last_link FROM command_log_segments ORDER BY last_seq DESC LIMIT 1) AS last_link,
              (SELECT max(seq) FROM command_log WHERE seq < $1 AND ts < $2) AS newest,
              (SELECT max(seq) FROM command_log) AS head`,
      [beforeSeq, beforeTs],
    );
    const from = Number(bounds!.through ?? 0) + 1;
    // Never the head row: the next leader reads the head and its link from command_log.
    const to = Math.min(Number(bounds!.newest ?? 0), Number(bounds!.head ?? 0) - 1, from + perSegment - 1);
    if (to < from) {
      await client.query('COMMIT');
      return null;
    }
    const { rows } = await client.query<{ seq: string; ts: string; command: Buffer; chain: string }>(
      'SELECT seq, ts, command, chain FROM command_log WHERE seq BETWEEN $1 AND $2 ORDER BY seq', [from, to],
    );
    // The last segment's link, or the chain's start when nothing is archived yet (then from is 1).
    const previousLink = bounds!.last_link === null ? GENESIS : Number(bounds!.last_link);
    const records = checkedRows(rows, from, to, previousLink);
    const { header, parts } = encodeSegment(records, previousLink);
    await client.query(
      'INSERT INTO command_log_segments (first_seq, last_seq, last_ts, last_link, segment) VALUES ($1, $2, $3, $4, $5)',
      [header.firstSeq, header.lastSeq, header.lastTs, header.lastLink, Buffer.concat(parts)],
    );
    await client.query('DELETE FROM command_log WHERE seq BETWEEN $1 AND $2', [from, to]);
    await client.query('COMMIT');
    return header;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The rows from `from` to `to`, each present and linked on from `previousLink`, or a loud failure naming the seq. */
function checkedRows(rows: readonly { seq: string; ts: string; command: Buffer; chain: string }[], from: number, to: number, previousLink: number) {
  // Unique seqs between from and to, as many as the range holds: all of them, in order.
  if (rows.length !== to - from + 1) throw new Error(`command log archive: ${rows.length} rows of seqs ${from}..${to} in command_log; a record is missing`);
  let previous = previousLink;
  return rows.map((row) => {
    const seq = Number(row.seq);
    const ts = Number(row.ts);
    const chain = Number(row.chain);
    if (link(previous, seq, ts, row.command) !== chain) throw new Error(`command log archive: the record at seq ${seq} does not match its chain link; not archived`);
    previous = chain;
    return { seq, ts, command: row.command, chain };
  });
}

/**
 * Deletes archived segments whose last record is older than `retentionMs` at `now` (service time)
 * and that end before `beforeSeq` (the oldest kept snapshot); returns how many. A replay from seq 0
 * is no longer possible after that, as in the embedded mode's segment retention.
 */
export async function pruneArchive(pool: pg.Pool, retentionMs: number, now: number, beforeSeq: number): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM command_log_segments WHERE last_seq < $1 AND last_ts < $2', [beforeSeq, now - retentionMs]);
  return rowCount ?? 0;
}

/**
 * Reads the archived records of the command log: one segment at a time (the newest decoded is
 * kept, as a follower replaying from seq 0 reads it page by page).
 */
export class ArchivedLog {
  /** The segment decoded last, with the link of the record before its first. */
  private cached: { readonly previousLink: number; readonly records: readonly LinkedRecord[] } | null = null;

  constructor(private readonly pool: pg.Pool) {}

  /**
   * Up to `limit` archived records after `afterSeq`, checked against the chain from `previousLink`;
   * null when the archive does not hold seq `afterSeq` + 1.
   */
  async readAfter(afterSeq: number, previousLink: number, limit: number): Promise<LinkedRecord[] | null> {
    const segment = await this.segmentHolding(afterSeq + 1);
    if (segment === null) return null;
    const start = afterSeq + 1 - segment.records[0]!.seq;
    const before = start === 0 ? segment.previousLink : segment.records[start - 1]!.link;
    if (before !== previousLink) throw new Error(`the command log's archived record at seq ${afterSeq + 1} does not continue the chain of the record before it`);
    return segment.records.slice(start, start + limit);
  }

  /** Drops the decoded segment (the reader has gone past the archive). */
  forget(): void {
    this.cached = null;
  }

  /** The chain link of archived record `seq`, or null when the archive does not hold it. */
  async linkAt(seq: number): Promise<number | null> {
    const segment = await this.segmentHolding(seq);
    return segment === null ? null : segment.records[seq - segment.records[0]!.seq]!.link;
  }

  private async segmentHolding(seq: number): Promise<{ readonly previousLink: number; readonly records: readonly LinkedRecord[] } | null> {
    const cached = this.cached;
    if (cached !== null && seq >= cached.records[0]!.seq && seq <= cached.records.at(-1)!.seq) return cached;
    const { rows } = await this.pool.query<{ first_seq: string; last_seq: string; segment: Buffer }>(
      'SELECT first_seq, last_seq, segment FROM command_log_segments WHERE first_seq <= $1 AND last_seq >= $1', [seq],
    );
    const row = rows[0];
    if (row === undefined) return null;
    const firstSeq = Number(row.first_seq);
    const lastSeq = Number(row.last_seq);
    const file = { firstSeq, lastSeq, name: `command_log_segments ${segmentName(firstSeq, lastSeq)}` };
    const segment = parseSegment(row.segment, file);
    const records: LinkedRecord[] = [];
    for (const { chain, ...record } of segmentRecords(segment, file.name)) records.push({ ...record, link: chain, commandId: null });
    this.cached = { previousLink: segment.header.previousLink, records };
    return this.cached;
  }
}
