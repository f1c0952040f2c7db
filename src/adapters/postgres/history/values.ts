/**
 * Values read back from the history tables. pg hands `numeric` and `bigint` columns back as
 * strings; decimals become Fixed exactly (stored-decimal.ts: PostgreSQL prints numeric in plain
 * notation, as formatDecimal wrote it), and ids, times and counts (all below 2^53) become numbers.
 */
import { formatDecimal, type Fixed } from '../../../core/money.ts';
import { storedDecimal } from '../../store/stored-decimal.ts';

export const fixed = (text: string): Fixed => storedDecimal(text);
export const fixedOrNull = (text: string | null): Fixed | null => (text === null ? null : storedDecimal(text));
/** A decimal as formatDecimal writes it: an aggregate's text may carry trailing zeros ('1.0' from '0.5' + '0.5'). */
export const canonical = (text: string): string => formatDecimal(storedDecimal(text));
export const int = (text: string | number): number => Number(text);
