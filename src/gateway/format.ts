/**
 * Wire formatting at the edge: exact decimals to strings (never exponents or -0), times to ISO
 * 8601 UTC with milliseconds (decisions.md "Numbers and time").
 */
import { formatDecimal, type Fixed } from '../core/money.ts';

export const dec = (value: Fixed): string => formatDecimal(value);
export const decOrNull = (value: Fixed | null | undefined): string | null =>
  value === null || value === undefined ? null : formatDecimal(value);
/**
 * The last time formatted, and its text: one response formats the same command time several
 * times over (an order's createdAt and updatedAt, its fills, its position), and a Date plus
 * toISOString costs more than the rest of the field.
 */
let lastMs = Number.NaN;
let lastIso = '';

export function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

export const isoOrNull = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : iso(ms));
