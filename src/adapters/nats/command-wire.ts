/**
 * The command bus's messages (docs/architecture.md "Distributed mode: the command bus").
 *
 * A request is binary: a version byte, the command id's length (one byte) and its UTF-8 bytes,
 * then the command in the journal's compact encoding (adapters/store/command-codec.ts), the same
 * bytes the leader appends to the log. A small order with a UUID id is 87 bytes and 3.5 µs to
 * encode and decode, where JSON with the command in base64 is 126 bytes and 6.1 µs, and JSON of
 * the command itself 482 bytes and 8 µs (bench/cluster/command-bus.ts).
 *
 * A reply is JSON, small and rare enough not to matter: `{"seq":n}` once the command is applied
 * and durable at seq n, or `{"code":"…","message":"…"}` for a rejection (a code of core/errors.ts).
 */
import type { Command } from '../../core/commands.ts';
import { REJECT_CODES, reject, type RejectCode, type Rejection } from '../../core/errors.ts';
import { decodeCommand, encodeCommand } from '../store/command-codec.ts';

/** The leader's answer: the command's seq in the durable log, or why the core refused it. */
export type BusReply = { readonly ok: true; readonly seq: number } | Rejection;

const REQUEST_VERSION = 1;
const MAX_ID_BYTES = 255;
const KNOWN_CODES: ReadonlySet<string> = new Set(REJECT_CODES);

export interface CommandRequest {
  readonly commandId: string;
  readonly command: Command;
}

export function encodeRequest(commandId: string, command: Command): Uint8Array {
  const id = Buffer.from(commandId, 'utf8');
  if (id.length === 0 || id.length > MAX_ID_BYTES) throw new RangeError(`a command id is 1 to ${MAX_ID_BYTES} bytes, not ${id.length}`);
  const body = encodeCommand(command);
  const request = Buffer.allocUnsafe(2 + id.length + body.length);
  request[0] = REQUEST_VERSION;
  request[1] = id.length;
  id.copy(request, 2);
  body.copy(request, 2 + id.length);
  return request;
}

/** The request in `data`; throws, saying what is wrong, if it is not a well-formed one. */
export function decodeRequest(data: Uint8Array): CommandRequest {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length < 3) throw new Error(`a command request of ${bytes.length} bytes is too short`);
  if (bytes[0] !== REQUEST_VERSION) throw new Error(`command request version ${bytes[0]} is unknown (sent by a newer build?)`);
  const idEnd = 2 + bytes[1]!;
  if (bytes[1] === 0 || idEnd >= bytes.length) throw new Error('a command request without a command id and a command');
  const commandId = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(2, idEnd));
  const command = decodeCommand(bytes.subarray(idEnd));
  if (typeof command !== 'object' || command === null || typeof (command as { type?: unknown }).type !== 'string') {
    throw new Error('a command request whose command has no type');
  }
  return { commandId, command: command as Command };
}

export function encodeReply(reply: BusReply): Uint8Array {
  const json = reply.ok ? `{"seq":${reply.seq}}` : JSON.stringify({ code: reply.code, message: reply.message });
  return Buffer.from(json, 'utf8');
}

/** The reply in `data`; a reply that is not one reads as an INTERNAL rejection (never throws). */
export function decodeReply(data: Uint8Array): BusReply {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch {
    return reject('INTERNAL', 'the core answered with a malformed reply');
  }
  const fields = (typeof value === 'object' && value !== null ? value : {}) as { seq?: unknown; code?: unknown; message?: unknown };
  if (Number.isSafeInteger(fields.seq) && (fields.seq as number) > 0) return { ok: true, seq: fields.seq as number };
  if (typeof fields.code === 'string' && KNOWN_CODES.has(fields.code) && typeof fields.message === 'string') {
    return reject(fields.code as RejectCode, fields.message);
  }
  return reject('INTERNAL', 'the core answered with a malformed reply');
}
