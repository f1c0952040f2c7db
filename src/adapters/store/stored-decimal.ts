/**
 * Reading back the exact decimals the store writes. Every decimal column only ever holds
 * formatDecimal output (plain notation, at most 18 fractional digits), so the strict wire grammar
 * and its limits (at most 20 integer digits for a request) are not re-run on every row: a balance
 * that grew past 20 digits is stored and read back like any other.
 */
import { SCALE, SCALE_DIGITS, type Fixed } from '../../core/money.ts';

export function storedDecimal(text: string): Fixed {
  const dot = text.indexOf('.');
  if (dot < 0) return BigInt(text) * SCALE;
  return BigInt(text.slice(0, dot) + text.slice(dot + 1).padEnd(SCALE_DIGITS, '0'));
}

export function storedDecimalOrNull(text: string | null): Fixed | null {
  return text === null ? null : storedDecimal(text);
}
