/**
 * The journal's compact binary encoding of a command (docs/architecture.md, "The journal's record
 * encoding"): no field names, no decimal digits, nothing written twice in one record. A JSON record
 * of a market maker's perp quote ladder is 3.5 KB, this one 252 bytes, and it decodes several times
 * faster than the JSON (bench/store/command-codec.ts, docs/performance.md).
 *
 * A record is its format byte (command-table.ts: which part of the dictionary it may use) and one
 * value. Each value starts with a tag byte:
 *   0x00 null, 0x01 undefined, 0x02 false, 0x03 true
 *   0x04 n / 0x05 -n            an integer (safe, not -0): varint n
 *   0x06                        any other number: float64, little-endian
 *   0x07 / 0x08 (+ / -)         a bigint m × 10^e: varint e, varint m (m a safe integer)
 *   0x09 / 0x0a (+ / -)         a bigint with a longer m: varint e, varint length, m big-endian
 *   0x0b                        a string: varint length, UTF-8
 *   0x0c                        a string `0x` + lower-case hex (addresses, hashes): varint length, bytes
 *   0x0d                        a string that is not well-formed UTF-16: varint length, UTF-16LE units
 *   0x0e i                      the record's string i (varint), 0x60 + i for i < 32
 *   0x0f i                      the dictionary's string i (varint), 0x80 + i for i < 128
 *   0x10                        an array: varint length, its values
 *   0x11                        an object of a new shape: varint key count, keys (as strings), values
 *   0x12 i                      an object of shape i (varint), 0x20 + i for i < 32: its values
 *   0x40 + n                    an integer n < 32
 * A new string (0x0b, 0x0c, 0x0d) joins the record's strings, and a new shape joins its shapes
 * after the dictionary's, so a market id, an address or a key list is written once per record.
 * Varints are LEB128. Key order, null against absent and undefined are kept; bigints are exact.
 *
 * Plain data only (what a command is): objects are read by their own enumerable keys, and a
 * function, a symbol or an object of another class (Date, Map) is refused rather than written as
 * something else.
 */
import { CURRENT_FORMAT, FORMATS, type Format } from './command-table.ts';

const NULL = 0x00, UNDEFINED = 0x01, FALSE = 0x02, TRUE = 0x03, UINT = 0x04, NINT = 0x05, FLOAT = 0x06;
const BIG = 0x07, BIG_NEG = 0x08, BIG_LONG = 0x09, BIG_LONG_NEG = 0x0a;
const STRING = 0x0b, HEX = 0x0c, UTF16 = 0x0d, STRING_REF = 0x0e, TABLE = 0x0f;
const ARRAY = 0x10, OBJECT = 0x11, SHAPE = 0x12;
const SHAPE_INLINE = 0x20, UINT_INLINE = 0x40, STRING_REF_INLINE = 0x60, TABLE_INLINE = 0x80;
const INLINE = 32;
const TABLE_INLINE_COUNT = 128;

// ---- encoding -------------------------------------------------------------------------------

const KEEP_SCRATCH = 1 << 20;
let out = Buffer.allocUnsafe(4096);
let at = 0;
/** The record's strings so far, by value, with their index. */
const recordStrings = new Map<string, number>();
/** A shape the encoder can refer to: its keys and its index. */
interface KnownShape {
  readonly keys: readonly string[];
  readonly index: number;
}
/** The record's own shapes so far, by their first key (a key list as a string would cost more). */
const recordShapes = new Map<string, KnownShape[]>();
let nextShape = 0;

const TABLE_INDEX = new Map(CURRENT_FORMAT.strings.map((s, i) => [s, i]));
const STATIC_SHAPES = new Map<string, KnownShape[]>();
CURRENT_FORMAT.shapes.forEach((keys, index) => addShape(STATIC_SHAPES, { keys, index }));
const HEX_STRING = /^0x(?:[0-9a-f]{2})+$/;

/** `value` in the current format: a new buffer of its own. */
export function encodeCommand(value: unknown): Buffer {
  at = 0;
  recordStrings.clear();
  recordShapes.clear();
  nextShape = CURRENT_FORMAT.shapes.length;
  byte(CURRENT_FORMAT.byte);
  writeValue(value);
  const record = Buffer.from(out.subarray(0, at));
  if (out.length > KEEP_SCRATCH) out = Buffer.allocUnsafe(4096);
  return record;
}

function ensure(room: number): void {
  if (at + room <= out.length) return;
  const grown = Buffer.allocUnsafe(Math.max(out.length * 2, at + room));
  out.copy(grown, 0, 0, at);
  out = grown;
}

function byte(b: number): void {
  ensure(1);
  out[at++] = b;
}

function varint(n: number): void {
  ensure(8);
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
}

/** A tag with an inline form for small indexes. */
function indexed(inline: number, inlineCount: number, tag: number, i: number): void {
  if (i < inlineCount) byte(inline + i);
  else {
    byte(tag);
    varint(i);
  }
}

function writeValue(v: unknown): void {
  switch (typeof v) {
    case 'string': return writeString(v);
    case 'number': return writeNumber(v);
    case 'bigint': return writeBigint(v);
    case 'boolean': return byte(v ? TRUE : FALSE);
    case 'undefined': return byte(UNDEFINED);
    case 'object':
      if (v === null) return byte(NULL);
      if (Array.isArray(v)) return writeArray(v);
      return writeObject(v);
    default:
      throw new TypeError(`a journal command holds plain data only, not a ${typeof v}`);
  }
}

function writeNumber(v: number): void {
  if (Number.isSafeInteger(v) && !(v === 0 && 1 / v < 0)) {
    if (v < 0) {
      byte(NINT);
      varint(-v);
    } else indexed(UINT_INLINE, INLINE, UINT, v);
    return;
  }
  byte(FLOAT);
  ensure(8);
  at = out.writeDoubleLE(v, at);
}

/** m × 10^e with m free of trailing zeros: amounts are ×10^18 fixed-point, so m is short. */
function writeBigint(v: bigint): void {
  const negative = v < 0n;
  const digits = (negative ? -v : v).toString();
  let end = digits.length;
  while (end > 1 && digits.charCodeAt(end - 1) === 48) end--;
  const exponent = digits.length - end;
  const mantissa = end <= 16 ? Number(digits.slice(0, end)) : Infinity;
  if (mantissa <= Number.MAX_SAFE_INTEGER) {
    byte(negative ? BIG_NEG : BIG);
    varint(exponent);
    varint(mantissa);
    return;
  }
  let hex = BigInt(digits.slice(0, end)).toString(16);
  if (hex.length % 2 === 1) hex = '0' + hex;
  byte(negative ? BIG_LONG_NEG : BIG_LONG);
  varint(exponent);
  varint(hex.length / 2);
  ensure(hex.length / 2);
  at += out.write(hex, at, 'hex');
}

/** String.prototype.isWellFormed (Node 20; the project's TypeScript lib predates it). */
type WellFormedCheck = string & { isWellFormed(): boolean };

function writeString(s: string): void {
  const table = TABLE_INDEX.get(s);
  if (table !== undefined) return indexed(TABLE_INLINE, TABLE_INLINE_COUNT, TABLE, table);
  const seen = recordStrings.get(s);
  if (seen !== undefined) return indexed(STRING_REF_INLINE, INLINE, STRING_REF, seen);
  recordStrings.set(s, recordStrings.size);
  if (s.length >= 4 && s.charCodeAt(1) === 120 && HEX_STRING.test(s)) {
    const bytes = (s.length - 2) / 2;
    byte(HEX);
    varint(bytes);
    ensure(bytes);
    at += out.write(s.slice(2), at, 'hex');
  } else if (!(s as WellFormedCheck).isWellFormed()) {
    byte(UTF16);
    varint(s.length);
    ensure(s.length * 2);
    at += out.write(s, at, 'utf16le');
  } else if (s.length * 3 < 0x80) {
    // At most 127 bytes: the length is one byte, written after the text.
    ensure(2 + s.length * 3);
    out[at] = STRING;
    const length = out.write(s, at + 2);
    out[at + 1] = length;
    at += 2 + length;
  } else {
    const length = Buffer.byteLength(s);
    byte(STRING);
    varint(length);
    ensure(length);
    at += out.write(s, at);
  }
}

function writeArray(a: readonly unknown[]): void {
  byte(ARRAY);
  varint(a.length);
  for (let i = 0; i < a.length; i++) writeValue(a[i]);
}

function writeObject(o: object): void {
  const prototype = Object.getPrototypeOf(o) as unknown;
  if (prototype !== Object.prototype && prototype !== null) {
    throw new TypeError(`a journal command holds plain data only, not a ${(o as { constructor?: { name?: string } }).constructor?.name ?? 'class instance'}`);
  }
  const keys = Object.keys(o);
  const shape = findShape(STATIC_SHAPES, keys) ?? findShape(recordShapes, keys);
  if (shape !== undefined) indexed(SHAPE_INLINE, INLINE, SHAPE, shape.index);
  else {
    addShape(recordShapes, { keys, index: nextShape++ });
    byte(OBJECT);
    varint(keys.length);
    for (let i = 0; i < keys.length; i++) writeString(keys[i]!);
  }
  const record = o as Record<string, unknown>;
  for (let i = 0; i < keys.length; i++) writeValue(record[keys[i]!]);
}

function findShape(shapes: ReadonlyMap<string, readonly KnownShape[]>, keys: readonly string[]): KnownShape | undefined {
  const candidates = keys.length === 0 ? shapes.get('') : shapes.get(keys[0]!);
  if (candidates === undefined) return undefined;
  next: for (const candidate of candidates) {
    if (candidate.keys.length !== keys.length) continue;
    for (let i = 1; i < keys.length; i++) if (candidate.keys[i] !== keys[i]) continue next;
    return candidate;
  }
  return undefined;
}

function addShape(shapes: Map<string, KnownShape[]>, shape: KnownShape): void {
  const first = shape.keys.length === 0 ? '' : shape.keys[0]!;
  const list = shapes.get(first);
  if (list === undefined) shapes.set(first, [shape]);
  else list.push(shape);
}

// ---- decoding -------------------------------------------------------------------------------

interface Shape {
  readonly keys: readonly string[];
  /** A key `__proto__`: set as an own property, never as the prototype. */
  readonly protoKey: boolean;
  /** Builds the object from the next values: an object literal, for the dictionary's shapes. */
  readonly build: ((read: () => unknown) => object) | null;
}

const shapeOf = (keys: readonly string[]): Shape => ({ keys, protoKey: keys.includes('__proto__'), build: null });

/**
 * A dictionary shape with a builder compiled from its keys (the table's own constants): an object
 * literal gets its final layout at once, where a loop of keyed stores measured 3× slower.
 */
function compiledShape(keys: readonly string[]): Shape {
  if (keys.includes('__proto__')) return shapeOf(keys); // in a literal it would set the prototype
  const fields = keys.map((k) => `${JSON.stringify(k)}: read()`).join(', ');
  const build = new Function('read', `return { ${fields} };`) as (read: () => unknown) => object;
  return { keys, protoKey: false, build };
}
/** Each format's dictionary shapes, ready to decode with. */
const FORMAT_SHAPES = FORMATS.map((f) => f?.shapes.map(compiledShape));
const POWERS_OF_TEN = Array.from({ length: 40 }, (_, e) => 10n ** BigInt(e));

let input: Buffer = Buffer.alloc(0);
let pos = 0;
let end = 0;
let format: Format = CURRENT_FORMAT;
let dictionaryShapes: readonly Shape[] = [];
let strings: string[] = [];
let shapes: Shape[] = [];

/** The value `record` encodes; throws if it is not a whole, well-formed record of a known format. */
export function decodeCommand(record: Uint8Array): unknown {
  input = Buffer.isBuffer(record) ? record : Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  end = input.length;
  const known = FORMATS[input[0] ?? 0];
  if (known === undefined) {
    throw new Error(`journal record format ${input[0] ?? 'none'} is unknown (written by a newer build?)`);
  }
  format = known;
  dictionaryShapes = FORMAT_SHAPES[known.byte]!;
  pos = 1;
  strings = [];
  shapes = [];
  const value = readValue();
  if (pos !== end) throw new Error(`journal record ${pos > end ? 'truncated' : 'has bytes after its value'}`);
  return value;
}

function readValue(): unknown {
  const tag = input[pos++]!;
  if (tag >= TABLE_INLINE) return dictionaryString(tag - TABLE_INLINE);
  if (tag >= STRING_REF_INLINE) return recordString(tag - STRING_REF_INLINE);
  if (tag >= UINT_INLINE) return tag - UINT_INLINE;
  if (tag >= SHAPE_INLINE) return readObject(shape(tag - SHAPE_INLINE));
  switch (tag) {
    case NULL: return null;
    case UNDEFINED: return undefined;
    case FALSE: return false;
    case TRUE: return true;
    case UINT: return readVarint();
    case NINT: return -readVarint();
    case FLOAT: return readFloat();
    case BIG: return readBigint();
    case BIG_NEG: return -readBigint();
    case BIG_LONG: return readLongBigint();
    case BIG_LONG_NEG: return -readLongBigint();
    case STRING: return remember(readText('utf8', 1));
    case HEX: return remember('0x' + readText('hex', 1));
    case UTF16: return remember(readText('utf16le', 2));
    case STRING_REF: return recordString(readVarint());
    case TABLE: return dictionaryString(readVarint());
    case ARRAY: return readArray(readCount());
    case OBJECT: return readObject(readShape());
    case SHAPE: return readObject(shape(readVarint()));
    default: throw new Error(pos > end ? 'journal record truncated' : `journal record: unknown tag 0x${tag.toString(16)} at byte ${pos - 1}`);
  }
}

function readVarint(): number {
  let b = input[pos++]!;
  if (b < 0x80) return b;
  let n = b & 0x7f;
  let scale = 0x80;
  do {
    if (pos >= end) throw new Error('journal record truncated');
    b = input[pos++]!;
    n += (b & 0x7f) * scale;
    scale *= 0x80;
  } while (b >= 0x80);
  return n;
}

/** The next varint-counted run of `unit`-byte units, as text. */
function readText(encoding: BufferEncoding, unit: number): string {
  const length = readVarint() * unit;
  const start = pos;
  pos = take(length);
  return input.toString(encoding, start, pos);
}

/** The end of the next `length` bytes, which must be in the record. */
function take(length: number): number {
  if (length > end - pos) throw new Error('journal record truncated');
  return pos + length;
}

/** A count of values, each of which takes at least a byte. */
function readCount(): number {
  const count = readVarint();
  take(count);
  return count;
}

function readFloat(): number {
  const v = input.readDoubleLE(pos);
  pos += 8;
  return v;
}

function readBigint(): bigint {
  const exponent = readVarint();
  const mantissa = BigInt(readVarint());
  return exponent === 0 ? mantissa : mantissa * (POWERS_OF_TEN[exponent] ?? 10n ** BigInt(exponent));
}

function readLongBigint(): bigint {
  const exponent = readVarint();
  const mantissa = BigInt('0x' + readText('hex', 1));
  return mantissa * (POWERS_OF_TEN[exponent] ?? 10n ** BigInt(exponent));
}

function remember(s: string): string {
  strings.push(s);
  return s;
}

function recordString(i: number): string {
  if (i >= strings.length) throw new Error(`journal record: string ${i} referred to before it was written`);
  return strings[i]!;
}

function dictionaryString(i: number): string {
  if (i >= format.strings.length) throw new Error(`journal record: format ${format.byte} has no string ${i}`);
  return format.strings[i]!;
}

function shape(i: number): Shape {
  const found = i < dictionaryShapes.length ? dictionaryShapes[i] : shapes[i - dictionaryShapes.length];
  if (found === undefined) throw new Error(`journal record: shape ${i} referred to before it was written`);
  return found;
}

function readShape(): Shape {
  const count = readCount();
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const key = readValue();
    if (typeof key !== 'string') throw new Error('journal record: an object key that is not a string');
    keys.push(key);
  }
  const s = shapeOf(keys);
  shapes.push(s);
  return s;
}

function readArray(length: number): unknown[] {
  const a: unknown[] = [];
  for (let i = 0; i < length; i++) a.push(readValue());
  return a;
}

function readObject(s: Shape): object {
  if (s.build !== null) return s.build(readValue);
  const o: Record<string, unknown> = {};
  const keys = s.keys;
  if (s.protoKey) {
    for (const key of keys) Object.defineProperty(o, key, { value: readValue(), enumerable: true, writable: true, configurable: true });
    return o;
  }
  for (let i = 0; i < keys.length; i++) o[keys[i]!] = readValue();
  return o;
}
