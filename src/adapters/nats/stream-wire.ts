/**
 * The stream relay's frames message (docs/deploy.md "Streams across gateways"): what the stream
 * producer sends one gateway, on that gateway's subject, in one NATS message:
 *
 *   u32 epoch      the producer's (a new one each time a process takes the lease)
 *   u32 seq        1, 2, 3... per (epoch, gateway): a gap means a message was lost
 *   entries until the end, each:
 *     u8  kind     0 = bytes to write, 1 = end the connections (bytes: { code, message, retryable })
 *     u32 count    connections
 *     u32 × count  their ids on that gateway
 *     u32 length   then the bytes (an SSE chunk as the producer's view wrote it)
 *
 * A frame shared by many connections of one gateway travels once, with their ids.
 */

export const ENTRY_WRITE = 0;
export const ENTRY_FAIL = 1;

export interface RelayEntry {
  readonly kind: typeof ENTRY_WRITE | typeof ENTRY_FAIL;
  readonly ids: number[];
  readonly data: Buffer;
}

export interface FramesMessage {
  readonly epoch: number;
  readonly seq: number;
  readonly entries: RelayEntry[];
}

const HEADER_BYTES = 8;

/** The bytes an entry takes in a message. */
export const entryBytes = (e: RelayEntry): number => 1 + 4 + 4 * e.ids.length + 4 + e.data.length;

export function encodeFrames(epoch: number, seq: number, entries: readonly RelayEntry[]): Buffer {
  let size = HEADER_BYTES;
  for (const e of entries) size += entryBytes(e);
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32BE(epoch, 0);
  out.writeUInt32BE(seq, 4);
  let at = HEADER_BYTES;
  for (const e of entries) {
    out.writeUInt8(e.kind, at);
    out.writeUInt32BE(e.ids.length, at + 1);
    at += 5;
    for (const id of e.ids) {
      out.writeUInt32BE(id, at);
      at += 4;
    }
    out.writeUInt32BE(e.data.length, at);
    at += 4;
    e.data.copy(out, at);
    at += e.data.length;
  }
  return out;
}

/** Throws on a message that does not parse to its end (a relay of another version, or corruption). */
export function decodeFrames(bytes: Uint8Array): FramesMessage {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < HEADER_BYTES) throw new Error('stream relay: a frames message shorter than its header');
  const epoch = buf.readUInt32BE(0);
  const seq = buf.readUInt32BE(4);
  const entries: RelayEntry[] = [];
  let at = HEADER_BYTES;
  while (at < buf.length) {
    const kind = buf.readUInt8(at);
    if (kind !== ENTRY_WRITE && kind !== ENTRY_FAIL) throw new Error(`stream relay: unknown entry kind ${kind}`);
    const count = buf.readUInt32BE(at + 1);
    at += 5;
    const ids: number[] = new Array(count);
    for (let i = 0; i < count; i++, at += 4) ids[i] = buf.readUInt32BE(at);
    const length = buf.readUInt32BE(at);
    at += 4;
    if (at + length > buf.length) throw new Error('stream relay: an entry runs past the end of its message');
    // A copy: sockets keep the bytes until written, and the message's buffer is the client's to reuse.
    entries.push({ kind, ids, data: Buffer.from(buf.subarray(at, at + length)) });
    at += length;
  }
  return { epoch, seq, entries };
}
