/**
 * The option board as the options screen reads it: live from GET /markets/board/stream (a full
 * snapshot about once a second, each one clock tick of the core), laid out as a chain per expiry
 * (one row per strike, the call and the put of it), with the at-the-money strike (the one nearest
 * the expiry's forward) and the fitted smile of the expiry (its raw-SVI slice as the API serves
 * it). Numbers are read as floats only to order strikes, pick the at-the-money row and plot.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ResponseOf } from '../../../../sdk/src/index.ts';
import { market } from '../../api/account.ts';
import { useStream } from '../../lib/use-stream.ts';
import { usePoll } from '../../lib/use-poll.ts';

export type Board = ResponseOf<'/markets/board', 'get'>;
export type OptionRow = Board['options'][number];
export type ExpiryForward = Board['expiryForwards'][string];
export type Instrument = ResponseOf<'/options/instruments', 'get'>[number];

export interface StrikeRow {
  readonly strike: string;
  readonly call: OptionRow | undefined;
  readonly put: OptionRow | undefined;
}

/** The live board of `underlying` (null until the stream's first snapshot). */
export function useBoard(underlying: string): Board | null {
  const [board, setBoard] = useState<Board | null>(null);
  useEffect(() => setBoard(null), [underlying]);
  useStream(market, `${underlying} option board`, '/markets/board/stream', { query: { underlying } }, (event) => setBoard(event.message.payload), underlying);
  return board;
}

/** Terms of every listed option of `underlying` (tick, step, minimum size), read every 30 s. */
export function useInstruments(underlying: string): ReadonlyMap<string, Instrument> {
  const [list] = usePoll(() => market.instruments({ underlying }), 30_000, underlying);
  return new Map((list ?? []).map((i) => [i.id, i]));
}

/** The rows of one expiry, one per strike, lowest strike first. */
export function chainOf(board: Board, expiry: string): StrikeRow[] {
  const byStrike = new Map<string, { call?: OptionRow; put?: OptionRow }>();
  for (const o of board.options) {
    if (o.expiry !== expiry) continue;
    const row = byStrike.get(o.strike) ?? {};
    row[o.type] = o;
    byStrike.set(o.strike, row);
  }
  return [...byStrike.entries()]
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([strike, r]) => ({ strike, call: r.call, put: r.put }));
}

/** The strike nearest the forward (null without a forward). */
export function atTheMoney(rows: readonly StrikeRow[], forward: string | null | undefined): string | null {
  if (forward === null || forward === undefined || rows.length === 0) return null;
  const f = Number(forward);
  let best = rows[0]!;
  for (const r of rows) if (Math.abs(Number(r.strike) - f) < Math.abs(Number(best.strike) - f)) best = r;
  return best.strike;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** "28NOV26", as instrument ids name an expiry. */
export function expiryCode(iso: string): string {
  const d = new Date(iso);
  return `${String(d.getUTCDate()).padStart(2, '0')}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear()).slice(2)}`;
}

/** The implied volatility (percent) of the published raw-SVI slice at `strike`, or null. */
export function sviVol(slice: NonNullable<ExpiryForward['svi']>, forward: number, strike: number): number | null {
  const [a, b, rho, m, sigma, years] = [slice.a, slice.b, slice.rho, slice.m, slice.sigma, slice.years].map(Number) as [number, number, number, number, number, number];
  const k = Math.log(strike / forward);
  const w = a + b * (rho * (k - m) + Math.sqrt((k - m) ** 2 + sigma ** 2));
  return w > 0 && years > 0 ? 100 * Math.sqrt(w / years) : null;
}
