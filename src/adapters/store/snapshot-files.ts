/**
 * Snapshot files under DATA_DIR/snapshots (docs/architecture.md "Snapshots"): one file per snapshot,
 * named by the journal seq it covers, written atomically (a temporary file, fsync, rename, fsync of
 * the folder), so a crash leaves either the whole file or none.
 *
 * Layout:  "EXSNAP01" | u32 header length | header (JSON) | u32 CRC-32 of the header | gzip(image)
 * The header names the seq, the command time and the journal's chain link at that seq (so the
 * replay after it goes on verifying the chain), the state layout the image was written with, the
 * compressed length, and the SHA-256 of the image: the state hash, which also checks the body.
 * A file that fails any check (truncated, altered, another layout) is refused with the reason, and
 * recovery falls back to the one before it.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { pause } from './failpoints.ts';

const MAGIC = Buffer.from('EXSNAP01');
const NAME = /^snapshot-(\d{12})\.snap$/;

export interface SnapshotHeader {
  readonly format: 1;
  /** The last journal seq the state includes. */
  readonly seq: number;
  /** The core's time after that command. */
  readonly ts: number;
  /** The journal's chain link at `seq` (journal.ts `link`). */
  readonly link: number;
  /** The state layout fingerprint of the code that wrote it (core/snapshot/state-fingerprint.ts). */
  readonly layout: string;
  /** SHA-256 of the image (hex): the state hash. */
  readonly stateHash: string;
  readonly imageBytes: number;
  readonly bodyBytes: number;
  readonly writtenAt: number;
}

export interface Snapshot {
  readonly header: SnapshotHeader;
  readonly image: Uint8Array;
}

export function stateHash(image: Uint8Array): string {
  return createHash('sha256').update(image).digest('hex');
}

export class SnapshotFiles {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'snapshots');
  }

  /** Writes a snapshot atomically; returns its header. */
  write(seq: number, ts: number, link: number, layout: string, image: Uint8Array, now: number): SnapshotHeader {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const { header, parts } = encodeSnapshot(seq, ts, link, layout, image, now);
    const name = fileName(seq);
    const temporary = join(this.dir, `${name}.tmp`);
    writeDurably(temporary, parts);
    pause('snapshot.before-rename');
    renameSync(temporary, join(this.dir, name));
    syncDirectory(this.dir);
    return header;
  }

  /** Seqs of the snapshot files present, newest first (not yet checked). */
  seqs(): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.map((n) => NAME.exec(n)).filter((m) => m !== null).map((m) => Number(m[1])).sort((a, b) => b - a);
  }

  /** Reads and checks one snapshot; throws a SnapshotRefused naming what is wrong. */
  read(seq: number, layout: string): Snapshot {
    return decodeSnapshot(readFileSync(join(this.dir, fileName(seq))), seq, layout);
  }

  /** Only the header (checked by its CRC); null when the file is unreadable. */
  header(seq: number): SnapshotHeader | null {
    try {
      return parseHeader(readFileSync(join(this.dir, fileName(seq))), seq);
    } catch {
      return null;
    }
  }

  /** Deletes all but the newest `keep` snapshots, and temporary files a crash left behind. */
  prune(keep: number): number[] {
    const removed = this.seqs().slice(keep);
    for (const seq of removed) rmSync(join(this.dir, fileName(seq)), { force: true });
    for (const name of safeList(this.dir)) if (name.endsWith('.tmp')) rmSync(join(this.dir, name), { force: true });
    return removed;
  }
}

export class SnapshotRefused extends Error {
  constructor(readonly seq: number, readonly reason: string) {
    super(`snapshot at seq ${seq} refused: ${reason}`);
  }
}

/**
 * A snapshot in its stored form (the layout above), as the parts to write one after the other: the
 * files here and the distributed mode's PostgreSQL rows (adapters/postgres/snapshot-store.ts) hold
 * the same bytes.
 */
export function encodeSnapshot(seq: number, ts: number, link: number, layout: string, image: Uint8Array, now: number): { header: SnapshotHeader; parts: Uint8Array[] } {
  const body = gzipSync(image, { level: 6 });
  const header: SnapshotHeader = {
    format: 1, seq, ts, link, layout, stateHash: stateHash(image), imageBytes: image.length, bodyBytes: body.length, writtenAt: now,
  };
  const json = Buffer.from(JSON.stringify(header));
  const lengths = Buffer.alloc(8);
  lengths.writeUInt32LE(json.length, 0);
  lengths.writeUInt32LE(crc32(json), 4);
  return { header, parts: [MAGIC, lengths.subarray(0, 4), json, lengths.subarray(4), body] };
}

/** Checks a stored snapshot (header CRC, seq, layout, body size, state hash) and returns its image; throws a SnapshotRefused. */
export function decodeSnapshot(bytes: Buffer, seq: number, layout: string): Snapshot {
  const header = parseHeader(bytes, seq);
  if (header.layout !== layout) throw new SnapshotRefused(seq, `written by code with another state layout (${header.layout.slice(0, 12)}, this code ${layout.slice(0, 12)})`);
  const start = MAGIC.length + 8 + bytes.readUInt32LE(MAGIC.length);
  if (bytes.length - start !== header.bodyBytes) throw new SnapshotRefused(seq, `body is ${bytes.length - start} bytes, the header says ${header.bodyBytes} (truncated or altered)`);
  let image: Uint8Array;
  try {
    image = gunzipSync(bytes.subarray(start));
  } catch (error) {
    throw new SnapshotRefused(seq, `body does not decompress (${(error as Error).message})`);
  }
  if (stateHash(image) !== header.stateHash) throw new SnapshotRefused(seq, 'state hash does not match the image (altered or corrupted)');
  return { header, image };
}

function fileName(seq: number): string {
  return `snapshot-${String(seq).padStart(12, '0')}.snap`;
}

function parseHeader(bytes: Buffer, seq: number): SnapshotHeader {
  if (bytes.length < MAGIC.length + 8 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new SnapshotRefused(seq, 'not a snapshot file');
  const length = bytes.readUInt32LE(MAGIC.length);
  const json = bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + length);
  if (json.length !== length || MAGIC.length + 8 + length > bytes.length) throw new SnapshotRefused(seq, 'header truncated');
  if (crc32(json) !== bytes.readUInt32LE(MAGIC.length + 4 + length)) throw new SnapshotRefused(seq, 'header checksum does not match');
  const header = JSON.parse(json.toString('utf8')) as SnapshotHeader;
  if (header.format !== 1 || header.seq !== seq) throw new SnapshotRefused(seq, `header names seq ${header.seq}, format ${header.format}`);
  return header;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Writes `parts` to a new file and fsyncs it. */
export function writeDurably(path: string, parts: readonly Uint8Array[]): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    for (const p of parts) {
      let at = 0;
      while (at < p.length) at += writeSync(fd, p, at, p.length - at);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Makes a rename in `dir` durable. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
