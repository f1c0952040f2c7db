/**
 * Option listings (decisions.md "Instruments"): for every expiry of the listing calendar
 * (listings.ts `listedExpiries`) and every configured underlying, a ladder of strikes around the
 * index at listing time, each as a call and a put. The at-the-money strike is the index rounded
 * to the nearest strike step (half up); `strikesEachSide` strikes are listed above and below it
 * (strikes <= 0 are skipped). The step is `strikeStepNear` for expiries less than `nearDays` away
 * at listing time, `strikeStepFar` beyond. A ladder, once listed, does not move with the index.
 *
 * Ids: `BTC-25DEC26-100000-C` (underlying, expiry date, strike, C/P). Pure: a function of the
 * index at the listing tick and the time. Tested in options.test.ts.
 */
import { expiryCode, listedExpiries } from '../listings.ts';
import type { MarketSpec } from '../markets.ts';
import { divRound, formatDecimal, type Fixed } from '../money.ts';
import type { OptionUnderlying } from './config.ts';
import type { ClobEngine } from './engine.ts';
import { ClobMarket, type OptionType } from './market.ts';

const DAY_MS = 86_400_000;

export function optionId(underlying: string, expiry: number, strike: Fixed, type: OptionType): string {
  return `${underlying}-${expiryCode(expiry)}-${formatDecimal(strike)}-${type === 'call' ? 'C' : 'P'}`;
}

/** Strikes listed for an expiry, ascending. */
export function strikeLadder(u: OptionUnderlying, index: Fixed, expiry: number, now: number): Fixed[] {
  const step = expiry - now < u.nearDays * DAY_MS ? u.strikeStepNear : u.strikeStepFar;
  const atm = divRound(index, step, 'halfUp') * step;
  const out: Fixed[] = [];
  for (let i = -u.strikesEachSide; i <= u.strikesEachSide; i++) {
    const k = atm + BigInt(i) * step;
    if (k > 0n) out.push(k);
  }
  return out;
}

export function optionSpec(u: OptionUnderlying, expiry: number, strike: Fixed, type: OptionType): MarketSpec {
  const id = optionId(u.symbol, expiry, strike, type);
  return {
    id,
    symbol: id,
    type: 'option',
    underlying: u.symbol,
    baseSymbol: u.symbol,
    quoteSymbol: 'USDC',
    priceDecimals: u.priceDecimals,
    sizeDecimals: u.sizeDecimals,
    minSize: u.minSize,
    maxSize: u.maxSize,
    priceBandBps: 0,
    expiry,
    indexMarketId: `${u.symbol}-USDC`,
    marginTiers: [],
    impactNotional: 0n,
  };
}

/**
 * Lists, at a tick, every ladder the calendar wants for an underlying with a fresh index; a ladder
 * whose underlying has no index yet is listed at a later tick. `listed` remembers the
 * (underlying, expiry) pairs already listed until their expiry passes.
 */
export function listDue(e: ClobEngine, listed: Map<string, number>, now: number): void {
  const expiries = listedExpiries(now);
  for (const u of e.deps.config.options) {
    const index = e.freshIndex(u.symbol, now);
    if (index === null) continue;
    for (const expiry of expiries) {
      const key = `${u.symbol}|${expiry}`;
      if (listed.has(key)) continue;
      listed.set(key, expiry);
      const markets = e.byExpiry.get(expiry) ?? [];
      for (const strike of strikeLadder(u, index, expiry, now)) {
        for (const type of ['call', 'put'] as const) {
          const spec = optionSpec(u, expiry, strike, type);
          if (e.markets.has(spec.id)) continue;
          const market = new ClobMarket(spec, { underlying: u.symbol, expiry, strike, type, params: u });
          e.markets.set(spec.id, market);
          markets.push(market);
        }
      }
      e.byExpiry.set(expiry, markets);
    }
  }
  for (const [key, expiry] of listed) if (expiry <= now) listed.delete(key);
}
