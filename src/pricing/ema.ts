/**
 * Exact, deterministic time-weighted EMA for irregular samples (mark basis, local median, futures
 * basis rate; mechanics.md 1.2 and 2).
 *
 * Update rule with Δt = ts − prevTs (milliseconds, integers) and time constant τ:
 *   alpha = min(1, Δt/τ)                     (an exact rational, never a float)
 *   value ← value + round_halfUp((x − value)·Δt/τ)   at 18 fractional digits (one rounding)
 * This is the first-order (linear) discretisation of Hyperliquid's e^(−Δt/τ) weighting: for Δt ≪ τ it
 * behaves like a continuous EMA with time constant τ; a gap of τ or more resets the value to x.
 * The first sample initialises the value; a sample whose ts does not advance is ignored (no change),
 * so replays and duplicate deliveries are harmless. Because |round((x − v)·α)| <= |x − v|, the value
 * never overshoots: it always stays within the range of the samples seen. Rounding can leave a
 * residual gap of at most τ/(2Δt) units of 10⁻¹⁸ under a constant input.
 *
 * Pure (time is an argument). Tested in ema.test.ts: step response by hand, convergence, no-overshoot
 * property, non-advancing timestamps.
 */
import { divRound } from '../core/money.ts';
import type { Fixed } from '../core/money.ts';

export interface EmaState {
  value: Fixed | null;
  ts: number;
}

/** A state with no sample yet. */
export function emptyEma(): EmaState {
  return { value: null, ts: 0 };
}

/** Folds sample x taken at ts into the EMA; returns a new state. */
export function emaUpdate(state: EmaState, x: Fixed, ts: number, tauMs: number): EmaState {
  if (!Number.isSafeInteger(tauMs) || tauMs <= 0) throw new RangeError('tauMs must be a positive integer');
  if (!Number.isSafeInteger(ts)) throw new RangeError('ts must be an integer number of milliseconds');
  if (state.value === null) return { value: x, ts };
  if (ts <= state.ts) return { value: state.value, ts: state.ts };
  const dt = ts - state.ts;
  if (dt >= tauMs) return { value: x, ts };
  const step = divRound((x - state.value) * BigInt(dt), BigInt(tauMs), 'halfUp');
  return { value: state.value + step, ts };
}
