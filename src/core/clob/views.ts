/**
 * Read models of the CLOB engine for the REST surface and for the option board (built on top of
 * these by the pricing layer): the option instruments per underlying and expiry with their terms,
 * each instrument's book (top of book and depth), option positions valued at the mark with Greeks
 * when the pricing layer has them, and the options funds summary. Pure reads; nothing here changes
 * state.
 *
 * A position's `markPrice` is the pricing layer's mark only; without one it is null (and so is
 * its unrealised PnL): the conservative risk price the margin uses is reported separately as
 * `riskPrice` and is never presented as a mark.
 */
import { BUY, SELL } from '../book/order-book.ts';
import type { MarketUnits } from '../markets.ts';
import { mul, type Fixed } from '../money.ts';
import type { BookView } from '../queries.ts';
import type { PositionRecord } from '../records.ts';
import type { ClobEngine } from './engine.ts';
import { forLots } from './margin.ts';
import type { OptionType } from './market.ts';
import { positionRecord } from './records.ts';
import { accountFunds } from './option-margin.ts';
import { marginPerContract, optionRiskPrice, type OptionFunds } from './risk.ts';

export interface OptionInstrument {
  readonly id: string;
  readonly underlying: string;
  readonly expiry: number;
  readonly strike: Fixed;
  readonly type: OptionType;
  readonly status: string;
  readonly priceDecimals: number;
  readonly sizeDecimals: number;
  readonly minSize: Fixed;
  readonly maxSize: Fixed;
}

export interface BookTop {
  readonly bestBid: Fixed | null;
  readonly bestBidSize: Fixed | null;
  readonly bestAsk: Fixed | null;
  readonly bestAskSize: Fixed | null;
  readonly last: Fixed | null;
}

/** Listed option instruments (trading or settling), by expiry, strike, then call before put. */
export function optionInstruments(e: ClobEngine, underlying?: string, expiry?: number): OptionInstrument[] {
  const out: OptionInstrument[] = [];
  for (const m of e.markets.values()) {
    const o = m.option;
    if (o === null) continue;
    if (underlying !== undefined && o.underlying !== underlying) continue;
    if (expiry !== undefined && o.expiry !== expiry) continue;
    const s = m.spec;
    out.push({
      id: s.id, underlying: o.underlying, expiry: o.expiry, strike: o.strike, type: o.type, status: m.status,
      priceDecimals: s.priceDecimals, sizeDecimals: s.sizeDecimals, minSize: s.minSize, maxSize: s.maxSize,
    });
  }
  type I = OptionInstrument;
  const byStrike = (a: I, b: I) => (a.strike < b.strike ? -1 : a.strike > b.strike ? 1 : 0);
  const byType = (a: I, b: I) => (a.type === b.type ? 0 : a.type === 'call' ? -1 : 1);
  return out.sort((a, b) => a.underlying.localeCompare(b.underlying) || a.expiry - b.expiry
    || byStrike(a, b) || byType(a, b));
}

/** Expiries with listed options for an underlying, ascending. */
export function optionExpiries(engine: ClobEngine, underlying: string): number[] {
  const set = new Set<number>();
  for (const m of engine.markets.values()) if (m.option?.underlying === underlying) set.add(m.option.expiry);
  return [...set].sort((a, b) => a - b);
}

export function bookTop(m: { readonly book: BookView; readonly units: MarketUnits; readonly lastTrade: { readonly price: Fixed } | null }): BookTop {
  const bid = m.book.bestBid();
  const ask = m.book.bestAsk();
  return {
    bestBid: Number.isNaN(bid) ? null : m.units.price(bid),
    bestBidSize: Number.isNaN(bid) ? null : m.units.size(m.book.levelLots(BUY, bid)),
    bestAsk: Number.isNaN(ask) ? null : m.units.price(ask),
    bestAskSize: Number.isNaN(ask) ? null : m.units.size(m.book.levelLots(SELL, ask)),
    last: m.lastTrade?.price ?? null,
  };
}

/** Book levels [price, size] best first, at most `depth` per side. */
export function bookDepth(m: { readonly book: BookView; readonly units: MarketUnits }, depth: number): { bids: [Fixed, Fixed][]; asks: [Fixed, Fixed][] } {
  const out: number[] = [];
  const side = (s: 0 | 1) => {
    const n = m.book.depth(s, depth, out);
    const levels: [Fixed, Fixed][] = [];
    for (let i = 0; i < n; i++) levels.push([m.units.price(out[2 * i]!), m.units.size(out[2 * i + 1]!)]);
    return levels;
  };
  return { bids: side(BUY), asks: side(SELL) };
}

export interface OptionPositionView extends PositionRecord {
  readonly underlying: string;
  readonly expiry: number;
  readonly strike: Fixed;
  readonly optionType: OptionType;
  readonly markPrice: Fixed | null;
  /** What margin values the option at (mark, else margin.ts fallbackRiskPrice). */
  readonly riskPrice: Fixed | null;
  readonly unrealizedPnl: Fixed | null;
  /** Position Greeks (per-contract Greeks x signed contracts), null without Greeks. */
  readonly delta: Fixed | null;
  readonly vega: Fixed | null;
  /** Initial and maintenance margin of a short position (0 for a long). */
  readonly initialMargin: Fixed;
  readonly maintenanceMargin: Fixed;
}

export function optionPositionViews(e: ClobEngine, accountId: number, now: number): OptionPositionView[] {
  const account = e.findAccount(accountId);
  if (account === undefined) return [];
  const out: OptionPositionView[] = [];
  for (const p of account.positions.values()) {
    if (p.size === 0) continue;
    const m = p.market;
    const o = m.option!;
    const mark = e.optionMark(m.spec.id, now);
    const greeks = e.optionGreeks(m.spec.id, now);
    const contracts = m.units.size(p.size);
    const per = p.size < 0 ? marginPerContract(e, m, now) : null;
    const shortLots = Math.max(0, -p.size);
    out.push({
      ...positionRecord(p),
      underlying: o.underlying,
      expiry: o.expiry,
      strike: o.strike,
      optionType: o.type,
      markPrice: mark,
      riskPrice: optionRiskPrice(e, m, now),
      unrealizedPnl: mark === null ? null : p.unrealized(mark),
      delta: greeks === null ? null : mul(contracts, greeks.delta),
      vega: greeks === null ? null : mul(contracts, greeks.vega),
      initialMargin: per === null ? 0n : forLots(m, per.im, shortLots, e.settlementDecimals),
      maintenanceMargin: per === null ? 0n : forLots(m, per.mm, shortLots, e.settlementDecimals),
    });
  }
  return out.sort((a, b) => (a.marketId < b.marketId ? -1 : a.marketId > b.marketId ? 1 : 0));
}

export interface OptionAccountView extends OptionFunds {
  /** Net Greeks per underlying over the positions that have Greeks. */
  readonly greeks: { underlying: string; delta: Fixed; vega: Fixed }[];
  readonly unrealizedPnl: Fixed;
}

const NO_FUNDS: OptionFunds = {
  balance: 0n, reserved: 0n, initialMargin: 0n, maintenanceMargin: 0n, available: 0n,
};

export function optionAccountView(engine: ClobEngine, accountId: number, now: number): OptionAccountView {
  const account = engine.findAccount(accountId);
  const funds = account === undefined
    ? { ...NO_FUNDS, balance: engine.userBalance(accountId, 'options', engine.settlementAsset) }
    : accountFunds(engine, account, now);
  const byUnderlying = new Map<string, { delta: Fixed; vega: Fixed }>();
  let upnl = 0n;
  for (const v of optionPositionViews(engine, accountId, now)) {
    upnl += v.unrealizedPnl ?? 0n;
    if (v.delta === null || v.vega === null) continue;
    const g = byUnderlying.get(v.underlying) ?? { delta: 0n, vega: 0n };
    byUnderlying.set(v.underlying, { delta: g.delta + v.delta, vega: g.vega + v.vega });
  }
  const available = account === undefined ? funds.balance : funds.available;
  return {
    ...funds,
    available,
    unrealizedPnl: upnl,
    greeks: [...byUnderlying].map(([underlying, g]) => ({ underlying, ...g })),
  };
}

/** An option instrument as the option board reads it (core/options/board.ts `BoardInstrument`). */
export interface BoardInstrumentView {
  readonly id: string;
  readonly underlying: string;
  readonly expiry: number;
  readonly strike: Fixed;
  readonly type: OptionType;
  readonly tick: Fixed;
  readonly priceDecimals: number;
  bestBid(): Fixed | null;
  bestAsk(): Fixed | null;
}

/** The listed, tradable (not settling) option instruments of `underlying`, for the board. */
export function boardInstruments(engine: ClobEngine, underlying: string): BoardInstrumentView[] {
  const out: BoardInstrumentView[] = [];
  for (const m of engine.markets.values()) {
    const o = m.option;
    if (o === null || o.underlying !== underlying || m.status !== 'open') continue;
    out.push({
      id: m.spec.id, underlying, expiry: o.expiry, strike: o.strike, type: o.type, tick: m.units.tick,
      priceDecimals: m.spec.priceDecimals, bestBid: () => m.bestBid(), bestAsk: () => m.bestAsk(),
    });
  }
  return out;
}
