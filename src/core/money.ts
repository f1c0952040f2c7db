/**
 * Exact fixed-point decimals for every price, size and amount in the service.
 *
 * A `Fixed` is a bigint holding the value times 10^18 (`SCALE`). Eighteen fractional digits hold
 * every tick, step, fee and funding product we compute without loss; where a result would need
 * more (division, products of two 18-digit values), the caller names the rounding direction.
 *
 * Rounding rules (written once, here):
 *   - `floor` / `ceil` round toward -infinity / +infinity. Money taken from a user (fees,
 *     funding paid, losses) rounds toward the venue (`ceil` of a debit); money given to a user
 *     (rebates, funding received, payouts) rounds down (`floor` of a credit). The residue of
 *     zero-sum flows goes to the insurance fund, so the ledger always balances.
 *   - `halfUp` (ties away from zero) is used only for display values (percentages, averages).
 *   - `trunc` rounds toward zero.
 *
 * Incoming decimal strings pass one strict grammar (decisions.md "Numbers") before any arithmetic:
 * optional `-` (only where allowed), digits, optional `.` followed by at least one digit. No
 * exponents, hex, `+`, spaces, `.5`, `5.`, empty strings, `-0`. Length is capped so that hostile
 * inputs are refused in constant time. Formatting never emits exponents or `-0`.
 */

export type Fixed = bigint;

export const SCALE_DIGITS = 18;
export const SCALE = 10n ** 18n;
export const ZERO: Fixed = 0n;
export const ONE: Fixed = SCALE;

/** Longest accepted integer part: 10^20 is far beyond any price, size or balance we list. */
export const MAX_INTEGER_DIGITS = 20;

/** 10^0 .. 10^18 as bigints: `10n ** k` is evaluated (about 100 ns) every time it runs. */
const POWERS_OF_TEN: readonly bigint[] = Array.from({ length: SCALE_DIGITS + 1 }, (_, k) => 10n ** BigInt(k));

const MAX_INPUT_LENGTH = 1 + MAX_INTEGER_DIGITS + 1 + SCALE_DIGITS;

export type Rounding = 'floor' | 'ceil' | 'halfUp' | 'trunc';

export type DecimalError =
  | 'not_a_string'
  | 'malformed'
  | 'too_long'
  | 'too_many_fraction_digits'
  | 'negative_not_allowed'
  | 'negative_zero'
  | 'must_be_positive';

export type ParseResult = { ok: true; value: Fixed } | { ok: false; reason: DecimalError };

export interface ParseOptions {
  /** Accept a leading `-` (signed values such as PnL); default false. */
  allowNegative?: boolean;
  /** Reject zero and negatives (sizes, amounts); default false. */
  positive?: boolean;
  /** At most this many fractional digits as written, trailing zeros included (never more than SCALE_DIGITS). */
  maxFractionDigits?: number;
}

const DECIMAL = /^(-?)([0-9]+)(?:\.([0-9]+))?$/;

/** Parses a wire decimal string into a Fixed. Never throws; never touches a float. */
export function parseDecimal(input: unknown, options: ParseOptions = {}): ParseResult {
  if (typeof input !== 'string') return { ok: false, reason: 'not_a_string' };
  if (input.length > MAX_INPUT_LENGTH) return { ok: false, reason: 'too_long' };
  const m = DECIMAL.exec(input);
  if (m === null) return { ok: false, reason: 'malformed' };
  const [, sign = '', intPart = '', fracPart = ''] = m;
  if (intPart.length > MAX_INTEGER_DIGITS) return { ok: false, reason: 'too_long' };
  const maxFraction = Math.min(options.maxFractionDigits ?? SCALE_DIGITS, SCALE_DIGITS);
  if (fracPart.length > SCALE_DIGITS) return { ok: false, reason: 'too_long' };
  const magnitude = BigInt(intPart) * SCALE + BigInt(fracPart.padEnd(SCALE_DIGITS, '0') || '0');
  if (sign === '-') {
    if (magnitude === 0n) return { ok: false, reason: 'negative_zero' };
    if (!options.allowNegative) return { ok: false, reason: 'negative_not_allowed' };
  }
  const value = sign === '-' ? -magnitude : magnitude;
  if (options.positive && value <= 0n) return { ok: false, reason: 'must_be_positive' };
  // The digits sent count, trailing zeros included (decisions.md: more fractional digits than the
  // market allows is refused), so "0.0100" on a 3-decimal size is refused like "0.0101".
  if (fracPart.length > maxFraction) return { ok: false, reason: 'too_many_fraction_digits' };
  return { ok: true, value };
}

/** Parses a decimal the caller already trusts (configuration, tests); throws on bad input. */
export function fx(input: string): Fixed {
  const r = parseDecimal(input, { allowNegative: true });
  if (!r.ok) throw new Error(`invalid decimal literal ${JSON.stringify(input)}: ${r.reason}`);
  return r.value;
}

/** Plain decimal notation, trailing zeros trimmed, no exponent, never `-0`. */
export function formatDecimal(value: Fixed): string {
  const negative = value < 0n;
  // One bigint-to-string conversion, then string slicing: every response and history row formats
  // several amounts, and a bigint division per part would cost more than the digits themselves.
  let digits = (negative ? -value : value).toString();
  if (digits.length <= SCALE_DIGITS) digits = digits.padStart(SCALE_DIGITS + 1, '0');
  const point = digits.length - SCALE_DIGITS;
  let end = digits.length;
  while (end > point && digits.charCodeAt(end - 1) === 48) end--;
  const body = end === point ? digits.slice(0, point) : `${digits.slice(0, point)}.${digits.slice(point, end)}`;
  return negative ? `-${body}` : body;
}

/** Formats with exactly `digits` fractional digits (display values), rounding half up. */
export function formatFixedDigits(value: Fixed, digits: number): string {
  const rounded = roundTo(value, digits, 'halfUp');
  const negative = rounded < 0n;
  const magnitude = negative ? -rounded : rounded;
  const intPart = (magnitude / SCALE).toString();
  const frac = (magnitude % SCALE).toString().padStart(SCALE_DIGITS, '0').slice(0, digits);
  const body = digits > 0 ? `${intPart}.${frac}` : intPart;
  return negative && magnitude !== 0n ? `-${body}` : body;
}

/** Greatest common divisor of two non-negative integers (reduces rates to small fractions). */
export function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** Integer division with an explicit rounding direction. `divisor` must be non-zero. */
export function divRound(numerator: bigint, divisor: bigint, mode: Rounding): bigint {
  if (divisor === 0n) throw new RangeError('division by zero');
  let q = numerator / divisor; // truncates toward zero
  const r = numerator - q * divisor; // the remainder (a multiply costs less than a second division)
  if (r === 0n) return q;
  const positive = numerator < 0n === divisor < 0n;
  switch (mode) {
    case 'trunc':
      return q;
    case 'floor':
      return positive ? q : q - 1n;
    case 'ceil':
      return positive ? q + 1n : q;
    case 'halfUp': {
      const twice = 2n * (r < 0n ? -r : r);
      const d = divisor < 0n ? -divisor : divisor;
      if (twice >= d) q += positive ? 1n : -1n;
      return q;
    }
  }
}

/** a * b, rescaled to 18 digits with the given rounding. */
export function mul(a: Fixed, b: Fixed, mode: Rounding = 'trunc'): Fixed {
  return divRound(a * b, SCALE, mode);
}

/** a / b at 18 digits with the given rounding. */
export function div(a: Fixed, b: Fixed, mode: Rounding = 'trunc'): Fixed {
  return divRound(a * SCALE, b, mode);
}

/** a * b / c computed exactly before one rounding. */
export function mulDiv(a: Fixed, b: Fixed, c: Fixed, mode: Rounding): Fixed {
  return divRound(a * b, c, mode);
}

/** Rounds to `digits` fractional digits (0..18). */
export function roundTo(value: Fixed, digits: number, mode: Rounding): Fixed {
  if (digits >= SCALE_DIGITS) return value;
  const unit = unitOf(digits);
  return divRound(value, unit, mode) * unit;
}

/** Rounds to a multiple of `step` (a positive Fixed such as a tick size). */
export function roundToStep(value: Fixed, step: Fixed, mode: Rounding): Fixed {
  return divRound(value, step, mode) * step;
}

export function isMultipleOf(value: Fixed, step: Fixed): boolean {
  return value % step === 0n;
}

/** The unit 10^-digits as a Fixed (1 tick for `priceDecimals`). */
export function unitOf(digits: number): Fixed {
  const unit = POWERS_OF_TEN[SCALE_DIGITS - digits];
  if (unit === undefined) throw new RangeError(`digits must be 0..${SCALE_DIGITS}: ${digits}`);
  return unit;
}

export function fromInt(n: number | bigint): Fixed {
  if (typeof n === 'number' && !Number.isSafeInteger(n)) throw new RangeError(`not a safe integer: ${n}`);
  return BigInt(n) * SCALE;
}

/** Units of `step` in `value` as a safe JS integer (ticks, lots). Throws if not exact or unsafe. */
export function toUnits(value: Fixed, step: Fixed): number {
  if (value % step !== 0n) throw new RangeError('value is not a whole number of steps');
  const n = value / step;
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError('unit count exceeds the safe integer range');
  }
  return Number(n);
}

export function fromUnits(units: number, step: Fixed): Fixed {
  return BigInt(units) * step;
}

export const abs = (a: Fixed): Fixed => (a < 0n ? -a : a);
export const min = (a: Fixed, b: Fixed): Fixed => (a < b ? a : b);
export const max = (a: Fixed, b: Fixed): Fixed => (a > b ? a : b);
export const sign = (a: Fixed): -1 | 0 | 1 => (a < 0n ? -1 : a > 0n ? 1 : 0);

/**
 * Converts a Fixed to a float for the pricing models only (Black-76, SVI, DVOL), which are the
 * one place floats are allowed. Money never comes back from a float except through `fromFloat`,
 * which rounds to a stated number of digits.
 */
export function toFloat(value: Fixed): number {
  const intPart = value / SCALE;
  const frac = value % SCALE;
  return Number(intPart) + Number(frac) / 1e18;
}

/** Converts a pricing-model float back to a Fixed at `digits` fractional digits. */
export function fromFloat(x: number, digits: number, mode: Rounding): Fixed | null {
  if (!Number.isFinite(x)) return null;
  const scaled = x * 10 ** digits;
  if (Math.abs(scaled) > Number.MAX_SAFE_INTEGER) return null;
  let units: number;
  switch (mode) {
    case 'floor':
      units = Math.floor(scaled);
      break;
    case 'ceil':
      units = Math.ceil(scaled);
      break;
    case 'trunc':
      units = Math.trunc(scaled);
      break;
    case 'halfUp':
      units = Math.sign(scaled) * Math.round(Math.abs(scaled));
      break;
  }
  if (Object.is(units, -0)) units = 0;
  return BigInt(units) * unitOf(digits);
}
