/**
 * Helpers for the option stream tests: a service with the push index feed and a fast real ticker
 * (TICK_MS 100, so the CLOB lists the option ladders and the core recomputes the board), option
 * ids by expiry from GET /options/instruments, and a quoted volatility surface: two funded
 * accounts post two-sided ladders through POST /quotes/bulk (one the bids, the other the asks) at
 * Black-76 prices of a flat 50 % smile around the index, on enough out-of-the-money strikes of an
 * expiry for the board to fit it (at least 5 usable quotes), so its rows get marks. Everything
 * goes over HTTP to the real service.
 */
import assert from 'node:assert/strict';
import { black76 } from '../../src/pricing/black76.ts';
import { call, startService, waitFor, type TestService, type Trader } from '../support/harness.ts';
import { clobTraders, ok, post } from '../support/clob-http.ts';
import { publishIndex, STREAM_ENV, type Json } from './support.ts';

export const OPTIONS_STREAM_ENV = { ...STREAM_ENV, TICK_MS: '100' };

const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;

export interface Instrument {
  readonly id: string;
  readonly expiry: string;
  readonly type: 'call' | 'put';
  readonly strike: string;
}

/** The service with BTC at `index` and ETH at 3000, once the BTC option ladders are listed. */
export async function optionsService(index = '100000'): Promise<TestService> {
  const ts = await startService(OPTIONS_STREAM_ENV);
  await publishIndex(ts.url, 'BTC', index);
  await publishIndex(ts.url, 'ETH', '3000');
  await waitFor(async () => (await instruments(ts.url)).length > 0, 10_000, 50);
  return ts;
}

export async function instruments(base: string, underlying = 'BTC'): Promise<Instrument[]> {
  const r = await call(base, `/options/instruments?underlying=${underlying}`);
  return r.status === 200 ? (r.body as Instrument[]) : [];
}

/** The listed expiries, ascending. */
export function expiries(list: readonly Instrument[]): string[] {
  return [...new Set(list.map((i) => i.expiry))].sort();
}

/** The expiries DVOL interpolates between: the last one before 30 days and the first one after. */
export function dvolExpiries(list: readonly Instrument[], now = Date.now()): [string, string] {
  const all = expiries(list);
  const near = all.filter((e) => Date.parse(e) - now < 30 * DAY_MS).at(-1);
  const far = all.find((e) => Date.parse(e) - now >= 30 * DAY_MS);
  assert.ok(near !== undefined && far !== undefined, `expiries around 30 days in ${all.join(', ')}`);
  return [near, far];
}

/** Two accounts funded in the options bucket. */
export async function optionTraders(base: string, n = 2): Promise<Trader[]> {
  return clobTraders(base, n, { options: '1000000' });
}

/** Black-76 price of a flat 50 % smile on forward `F`, rounded to the 0.1 tick. */
function fair(F: number, i: Instrument, now: number): number {
  const T = (Date.parse(i.expiry) - now) / YEAR_MS;
  const price = black76({ F, K: Number(i.strike), T, sigma: 0.5, type: i.type }).price;
  return Math.round(price * 10) / 10;
}

/**
 * Quotes `perSide` out-of-the-money strikes on each side of `F` for `expiry`: `bidder` posts the
 * bids, `asker` the asks, each a bulk quote of one level 2 % around the fair price. Returns the
 * quoted instrument ids.
 */
export async function quoteSurface(
  base: string,
  list: readonly Instrument[],
  expiry: string,
  [bidder, asker]: readonly [Trader, Trader],
  F = 100_000,
  perSide = 4,
): Promise<string[]> {
  const now = Date.now();
  const rows = list.filter((i) => i.expiry === expiry);
  const puts = rows.filter((i) => i.type === 'put' && Number(i.strike) < F);
  const calls = rows.filter((i) => i.type === 'call' && Number(i.strike) > F);
  puts.sort((a, b) => Number(b.strike) - Number(a.strike));
  calls.sort((a, b) => Number(a.strike) - Number(b.strike));
  const chosen = [...puts.slice(0, perSide), ...calls.slice(0, perSide)];
  assert.ok(chosen.length >= 5, `at least 5 out-of-the-money strikes on ${expiry}`);
  for (const i of chosen) {
    const p = fair(F, i, now);
    const half = Math.max(0.2, Math.round(p * 0.02 * 10) / 10);
    const levels: [Trader, string, number][] = [[bidder, 'buy', p - half], [asker, 'sell', p + half]];
    for (const [t, side, price] of levels) {
      const quote = { side, price: price.toFixed(1), quantity: '1', postOnly: true };
      const body = { marketId: i.id, quotes: [quote] };
      const r = ok(await post(base, t, '/quotes/bulk', body));
      assert.deepEqual(r.rejected, [], JSON.stringify(r));
    }
  }
  return chosen.map((i) => i.id);
}

/** Waits until GET /markets/board shows a mark for every id in `ids`; returns that board. */
export async function boardWithMarks(
  base: string,
  ids: readonly string[],
  timeoutMs = 10_000,
): Promise<Json> {
  let board: Json = null;
  await waitFor(async () => {
    board = ok(await call(base, '/markets/board?underlying=BTC'));
    const marked = new Set(board.options.filter((o: Json) => o.mark !== null).map((o: Json) => o.id));
    return ids.every((id) => marked.has(id));
  }, timeoutMs, 100);
  return board;
}
