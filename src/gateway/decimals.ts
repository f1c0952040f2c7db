/**
 * Request-side decimal checks after schema validation: positivity, precision of the asset or
 * market, and the specific codes decisions.md assigns (INVALID_DECIMAL for a bad number,
 * INVALID_TICK for a price finer than the tick, INVALID_STEP for a size finer than the step).
 */
import { parseDecimal, type Fixed } from '../core/money.ts';
import { apiError } from './errors.ts';

/** A positive amount of an asset with `decimals` places (USDC: 6). */
export function parseAmount(value: string, field: string, decimals: number): Fixed {
  const r = parseDecimal(value, { positive: true, maxFractionDigits: decimals });
  if (r.ok) return r.value;
  if (r.reason === 'too_many_fraction_digits') {
    throw apiError('INVALID_DECIMAL', `${field} has more than ${decimals} decimal places`);
  }
  throw malformed(field, r.reason);
}

/**
 * That a positive decimal is well formed, at any precision: the contract checks every decimal's
 * format before the market is looked up, and the market's precision (INVALID_TICK / INVALID_STEP)
 * after it, so a malformed quantity is INVALID_DECIMAL even beside a price off the tick.
 */
export function checkDecimalFormat(value: string, field: string): void {
  const r = parseDecimal(value, { positive: true });
  if (r.ok || r.reason === 'too_many_fraction_digits') return;
  throw malformed(field, r.reason);
}

/** A positive price on a tick of `decimals` places. */
export function parsePrice(value: string, field: string, decimals: number): Fixed {
  const r = parseDecimal(value, { positive: true, maxFractionDigits: decimals });
  if (r.ok) return r.value;
  if (r.reason === 'too_many_fraction_digits') throw apiError('INVALID_TICK', `${field} has more than ${decimals} decimal places (tick)`);
  throw malformed(field, r.reason);
}

/** A positive size on a step of `decimals` places. */
export function parseSize(value: string, field: string, decimals: number): Fixed {
  const r = parseDecimal(value, { positive: true, maxFractionDigits: decimals });
  if (r.ok) return r.value;
  if (r.reason === 'too_many_fraction_digits') throw apiError('INVALID_STEP', `${field} has more than ${decimals} decimal places (step)`);
  throw malformed(field, r.reason);
}

/** The 400 INVALID_DECIMAL of a value that is no positive decimal string. */
function malformed(field: string, reason: string): Error {
  return apiError('INVALID_DECIMAL', `${field} must be a positive decimal string (${reason.replaceAll('_', ' ')})`);
}
