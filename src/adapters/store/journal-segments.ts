/**
 * Archived journal segments under DATA_DIR/journal (docs/architecture.md "Segments and retention"):
 * the journal records a snapshot covers leave the live database for compressed, checksummed files,
 * the venue's audit trail. One file holds a contiguous run of records, written atomically
 * (temporary file, fsync, rename, fsync of the folder) before any of its rows leave the database.
 *
 * Layout:  "EXSEG001" | u32 header length | header (JSON) | u32 CRC-32 of the header | gzip(body)
 * The header names the first and last seq, the chain link before the first record and of the last,
 * the times of both, and the SHA-256 of the body. The body is, per record in seq order: the time's
 * delta from the previous record (zigzag varint), the command's kind (0: compact bytes, 1: JSON
 * text from an older build) and length (varint), then its stored bytes. Seqs are implied and links
 * recomputed on reading (journal-record.ts `decodeRecord`), so a record reads back exactly as the
 * database held it, and a segment whose last link differs from its header is refused.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { ByteReader, ByteWriter } from '../../core/snapshot/bytes.ts';
import type { JournalRecord } from '../../runtime/journal-port.ts';
import { pause } from './failpoints.ts';
import { decodeRecord, GENESIS, link, type StoredRecord } from './journal-record.ts';
import type { Journal } from './journal.ts';
import { syncDirectory, writeDurably } from './snapshot-files.ts';

const MAGIC = Buffer.from('EXSEG001');
const NAME = /^segment-(\d{12})-(\d{12})\.seg$/;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export interface SegmentHeader {
  readonly format: 1;
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** The link of the record before the first (journal-record.ts GENESIS for seq 1). */
  readonly previousLink: number;
  readonly lastLink: number;
  readonly firstTs: number;
  readonly lastTs: number;
  readonly bodySha256: string;
  readonly bodyBytes: number;
  readonly rawBytes: number;
}

export interface SegmentFile {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly name: string;
}

export class JournalSegments {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'journal');
  }

  /** The segment files, in seq order (names only; `read` checks them). */
  list(): SegmentFile[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: SegmentFile[] = [];
    for (const name of names) {
      const m = NAME.exec(name);
      if (m !== null) out.push({ firstSeq: Number(m[1]), lastSeq: Number(m[2]), name });
    }
    return out.sort((a, b) => a.firstSeq - b.firstSeq);
  }

  /** The last seq archived (0: none). */
  archivedThrough(): number {
    return this.list().at(-1)?.lastSeq ?? 0;
  }

  /** Writes `rows` (contiguous, linked on from `previousLink`) as one segment. */
  write(rows: readonly StoredRecord[], previousLink: number): SegmentHeader {
    const { header, parts } = encodeSegment(rows, previousLink);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const name = segmentName(header.firstSeq, header.lastSeq);
    const temporary = join(this.dir, `${name}.tmp`);
    writeDurably(temporary, parts);
    pause('segment.before-rename');
    renameSync(temporary, join(this.dir, name));
    syncDirectory(this.dir);
    return header;
  }

  /** The header of a segment, checked by its CRC. */
  header(file: SegmentFile): SegmentHeader {
    return parseSegment(readFileSync(join(this.dir, file.name)), file).header;
  }

  /**
   * The records of one segment, each checked against its link (from the header's `previousLink`,
   * or `previousLink` when given: the chain must continue from what was read before it).
   */
  *records(file: SegmentFile, previousLink?: number): Generator<JournalRecord & { readonly chain: number }> {
    yield* segmentRecords(parseSegment(readFileSync(join(this.dir, file.name)), file), file.name, previousLink);
  }

  /** Deletes the given segments (retention). */
  remove(files: readonly SegmentFile[]): void {
    for (const f of files) rmSync(join(this.dir, f.name), { force: true });
    if (files.length > 0) syncDirectory(this.dir);
  }

  /** Deletes what a crash left of a segment being written (only one writer runs at a time). */
  removeTemporary(): void {
    for (const name of safeList(this.dir)) if (name.endsWith('.tmp')) rmSync(join(this.dir, name), { force: true });
  }
}

/**
 * One segment's bytes (the file's layout above): the parts to write, in order, and its header.
 * The distributed mode stores the same bytes in PostgreSQL (adapters/postgres/command-log-archive.ts).
 */
export function encodeSegment(rows: readonly StoredRecord[], previousLink: number): { header: SegmentHeader; parts: Buffer[] } {
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  const w = new ByteWriter();
  let ts = first.ts;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (r.seq !== first.seq + i || r.chain === null) throw new Error(`segment: rows not contiguous and linked at seq ${r.seq}`);
    w.int(r.ts - ts);
    ts = r.ts;
    const bytes = typeof r.command === 'string' ? utf8.encode(r.command) : r.command;
    w.uint(typeof r.command === 'string' ? 1 : 0);
    w.uint(bytes.length);
    w.bytes(bytes);
  }
  const raw = w.finish();
  const body = gzipSync(raw, { level: 6 });
  const header: SegmentHeader = {
    format: 1, firstSeq: first.seq, lastSeq: last.seq, previousLink, lastLink: last.chain!, firstTs: first.ts, lastTs: last.ts,
    bodySha256: createHash('sha256').update(body).digest('hex'), bodyBytes: body.length, rawBytes: raw.length,
  };
  const json = Buffer.from(JSON.stringify(header));
  const lengths = Buffer.alloc(8);
  lengths.writeUInt32LE(json.length, 0);
  lengths.writeUInt32LE(crc32(json), 4);
  return { header, parts: [MAGIC, lengths.subarray(0, 4), json, lengths.subarray(4), body] };
}

/**
 * The records of a checked segment (parseSegment), each checked against its link (from the
 * header's `previousLink`, or `previousLink` when given: the chain must continue from what was
 * read before it). `name` names the segment in errors (a file's name, an archive row's keys).
 */
export function* segmentRecords(segment: ParsedSegment, name: string, previousLink?: number): Generator<JournalRecord & { readonly chain: number }> {
  const { header, body } = segment;
  if (previousLink !== undefined && previousLink !== header.previousLink) {
    throw new Error(`journal segment ${name} does not continue the chain of the record before it`);
  }
  const r = new ByteReader(gunzipSync(body));
  let previous = header.previousLink;
  let ts = header.firstTs;
  for (let seq = header.firstSeq; seq <= header.lastSeq; seq++) {
    ts += r.int();
    const text = r.uint() === 1;
    const command = text ? fromUtf8.decode(r.bytes(r.uint())) : r.bytes(r.uint());
    // The links are recomputed (the body's hash already vouches for the bytes); the last must be the header's.
    const chain = link(previous, seq, ts, command);
    yield { ...decodeRecord({ seq, ts, command, chain }, previous), chain };
    previous = chain;
  }
  if (previous !== header.lastLink || !r.done) throw new Error(`journal segment ${name} does not end where its header says`);
}

/** A segment's header and its compressed body. */
export interface ParsedSegment {
  readonly header: SegmentHeader;
  readonly body: Buffer;
}

/** A segment's header and compressed body, checked: magic, header CRC, seqs against `file`, body SHA-256. */
export function parseSegment(bytes: Buffer, file: SegmentFile): ParsedSegment {
  const refuse = (why: string) => new Error(`journal segment ${file.name} refused: ${why}`);
  if (bytes.length < MAGIC.length + 8 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw refuse('not a segment file');
  const length = bytes.readUInt32LE(MAGIC.length);
  const json = bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + length);
  if (MAGIC.length + 8 + length > bytes.length) throw refuse('header truncated');
  if (crc32(json) !== bytes.readUInt32LE(MAGIC.length + 4 + length)) throw refuse('header checksum does not match');
  const header = JSON.parse(json.toString('utf8')) as SegmentHeader;
  if (header.format !== 1 || header.firstSeq !== file.firstSeq || header.lastSeq !== file.lastSeq) throw refuse('header does not match its name');
  const body = bytes.subarray(MAGIC.length + 8 + length);
  if (body.length !== header.bodyBytes || createHash('sha256').update(body).digest('hex') !== header.bodySha256) {
    throw refuse('body checksum does not match (truncated or altered)');
  }
  return { header, body };
}

/** A segment's name: its first and last seq. */
export function segmentName(firstSeq: number, lastSeq: number): string {
  return `segment-${pad(firstSeq)}-${pad(lastSeq)}.seg`;
}

function pad(seq: number): string {
  return String(seq).padStart(12, '0');
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Archives the journal's rows after the last segment up to `throughSeq` (a snapshot's seq) into new
 * segments of at most `perSegment` records; their rows leave the database afterwards (the journal
 * worker's `trimArchived`). Returns the headers written.
 */
export function archiveThrough(journal: Journal, segments: JournalSegments, throughSeq: number, perSegment = 100_000): SegmentHeader[] {
  const written: SegmentHeader[] = [];
  segments.removeTemporary();
  const last = segments.list().at(-1);
  let from = (last?.lastSeq ?? 0) + 1;
  if (from > throughSeq) return written;
  const firstLive = journal.firstSeq();
  if (from < firstLive) throw new Error(`journal records ${from}..${firstLive - 1} are neither archived nor in the database`);
  let previous = from === 1 ? GENESIS : last !== undefined ? segments.header(last).lastLink : journal.linkBefore(from);
  while (from <= throughSeq) {
    const to = Math.min(throughSeq, from + perSegment - 1);
    const rows = journal.storedRows(from, to);
    if (rows.length !== to - from + 1) throw new Error(`journal records ${from}..${to}: ${rows.length} in the database`);
    written.push(segments.write(rows, previous));
    previous = rows[rows.length - 1]!.chain!;
    from = to + 1;
  }
  return written;
}

/**
 * Deletes segments whose newest record is older than `retentionMs` at `now` (service time) and that
 * no kept snapshot needs (they end at or before the oldest one). Returns what was deleted.
 */
export function pruneSegments(segments: JournalSegments, retentionMs: number, now: number, oldestSnapshotSeq: number): SegmentFile[] {
  const old = segments.list().filter((f) => f.lastSeq <= oldestSnapshotSeq && segments.header(f).lastTs < now - retentionMs);
  segments.remove(old);
  return old;
}
