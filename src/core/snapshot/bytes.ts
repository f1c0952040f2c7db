/**
 * A growable byte writer and its reader: unsigned and zigzag varints (LEB128), float64, bigints
 * and UTF-8 strings. The state image (state-image.ts) is written with them; they hold no state of
 * the exchange and do no I/O.
 */

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

export class ByteWriter {
  private buffer = new Uint8Array(1 << 16);
  private view = new DataView(this.buffer.buffer);
  private length = 0;

  get size(): number {
    return this.length;
  }

  byte(b: number): void {
    if (this.length === this.buffer.length) this.grow(1);
    this.buffer[this.length++] = b;
  }

  /** A non-negative safe integer, 7 bits a byte. */
  uint(n: number): void {
    if (this.length + 8 > this.buffer.length) this.grow(8);
    while (n >= 0x80) {
      this.buffer[this.length++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buffer[this.length++] = n;
  }

  /** A safe integer, zigzag-mapped so that small negative numbers stay short. */
  int(n: number): void {
    this.uint(n < 0 ? -n * 2 - 1 : n * 2);
  }

  float(x: number): void {
    if (this.length + 8 > this.buffer.length) this.grow(8);
    this.view.setFloat64(this.length, x, true);
    this.length += 8;
  }

  /** A bigint of any size: its sign, then its magnitude as little-endian 32-bit words. */
  bigint(v: bigint): void {
    const negative = v < 0n;
    let m = negative ? -v : v;
    const words: number[] = [];
    while (m > 0n) {
      words.push(Number(m & 0xffffffffn));
      m >>= 32n;
    }
    this.uint(words.length * 2 + (negative ? 1 : 0));
    for (const w of words) this.uint(w);
  }

  string(s: string): void {
    const bytes = utf8.encode(s);
    this.uint(bytes.length);
    this.bytes(bytes);
  }

  bytes(b: Uint8Array): void {
    if (this.length + b.length > this.buffer.length) this.grow(b.length);
    this.buffer.set(b, this.length);
    this.length += b.length;
  }

  /** The bytes written so far (a copy, so the writer may go on). */
  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  private grow(extra: number): void {
    const next = new Uint8Array(Math.max(this.buffer.length * 2, this.length + extra));
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
    this.view = new DataView(next.buffer);
  }
}

export class ByteReader {
  private readonly view: DataView;
  private at = 0;

  constructor(private readonly buffer: Uint8Array) {
    this.view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  get done(): boolean {
    return this.at >= this.buffer.length;
  }

  byte(): number {
    if (this.at >= this.buffer.length) throw new RangeError('state image: read past the end');
    return this.buffer[this.at++]!;
  }

  uint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new RangeError('state image: varint too long');
    }
  }

  int(): number {
    const z = this.uint();
    return z % 2 === 1 ? -(z + 1) / 2 : z / 2;
  }

  float(): number {
    if (this.at + 8 > this.buffer.length) throw new RangeError('state image: read past the end');
    const x = this.view.getFloat64(this.at, true);
    this.at += 8;
    return x;
  }

  bigint(): bigint {
    const head = this.uint();
    const count = Math.floor(head / 2);
    let m = 0n;
    for (let i = 0; i < count; i++) m |= BigInt(this.uint()) << BigInt(32 * i);
    return head % 2 === 1 ? -m : m;
  }

  string(): string {
    const n = this.uint();
    return fromUtf8.decode(this.bytes(n));
  }

  bytes(n: number): Uint8Array {
    if (this.at + n > this.buffer.length) throw new RangeError('state image: read past the end');
    const out = this.buffer.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}
