/**
 * Wire formatting at the edge: exact decimals to strings (never exponents or -0), times to ISO
 * 8601 UTC with milliseconds (decisions.md "Numbers and time").
 */
import { formatDecimal, type Fixed } from '../core/money.ts';

export const dec = (value: Fixed): string => formatDecimal(value);
export const decOrNull = (value: Fixed | null | undefined): string | null =>
  value === null || value === undefined ? null : formatDecimal(value);
export const iso = (ms: number): string => new Date(ms).toISOString();
export const isoOrNull = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();
