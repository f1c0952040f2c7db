/**
 * Decimal strings, as the interface carries every price, size and amount: plain notation, no
 * exponent, no sign but a leading `-`. The SDK never turns one into a JavaScript number; it checks
 * what it sends (a number or `1e5` is refused before the request leaves) and compares or adds
 * exactly with bigint when it must (the CLI's sums, the local order book's sort).
 */
export type Decimal = string;

const DECIMAL = /^-?(0|[1-9]\d*)(\.\d+)?$/;

export function isDecimal(value: unknown): value is Decimal {
  return typeof value === 'string' && DECIMAL.test(value);
}

/** Returns `value` if it is a plain decimal string; throws a TypeError naming `what` otherwise. */
export function decimal(value: unknown, what = 'value'): Decimal {
  if (!isDecimal(value)) {
    const shown = typeof value === 'string' ? JSON.stringify(value) : `${typeof value} ${String(value)}`;
    throw new TypeError(`${what} must be a decimal string such as "12.5", not ${shown}`);
  }
  return value;
}

function scaleOf(d: Decimal): number {
  return (decimal(d).split('.')[1] ?? '').length;
}

function scaled(d: Decimal, scale: number): bigint {
  const negative = d.startsWith('-');
  const [int, frac = ''] = (negative ? d.slice(1) : d).split('.') as [string, string?];
  const units = BigInt(int + frac.padEnd(scale, '0'));
  return negative ? -units : units;
}

/** -1, 0 or 1, exactly. */
export function compareDecimal(a: Decimal, b: Decimal): number {
  const scale = Math.max(scaleOf(a), scaleOf(b));
  const x = scaled(a, scale);
  const y = scaled(b, scale);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** a + b, exactly, trailing zeros trimmed. */
export function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(scaleOf(a), scaleOf(b));
  return format(scaled(a, scale) + scaled(b, scale), scale);
}

/** -a. */
export function negateDecimal(a: Decimal): Decimal {
  decimal(a);
  if (/^-?0(\.0+)?$/.test(a)) return a.replace(/^-/, '');
  return a.startsWith('-') ? a.slice(1) : `-${a}`;
}

function format(units: bigint, scale: number): Decimal {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  let out = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  if (scale > 0) out = out.replace(/\.?0+$/, '');
  return negative && out !== '0' ? `-${out}` : out;
}
