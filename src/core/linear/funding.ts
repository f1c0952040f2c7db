/**
 * Perpetual funding (research/mechanics.md 1.3, Hyperliquid/Binance family), all exact:
 *
 *   premium sample P = [max(0, impactBid − index) − max(0, index − impactAsk)] / index, taken every
 *   `sampleMs` from the book (impact prices for the market's impact notional) on clock ticks;
 *   8-hour rate F8h = P̄ + clamp(I − P̄, ±clamp) with interest I = 0.01 % per 8 h and clamp 0.05 %;
 *   the rate for one interval = F8h × interval / 8 h, capped at ±min(4 % × hours, 0.75 × (IMR − MMR))
 *   of the first margin tier, so one payment cannot push a max-leverage position through maintenance.
 *
 * At each funding time (multiples of the interval since the epoch) the market's cumulative funding
 * index grows by rate × index price (USDC per unit of base), and every open position settles what the
 * index moved since it last settled: payment = −size × Δindex (longs pay when the rate is positive).
 * Payers round up and receivers round down to the USDC unit; the residue (≥ 0) goes to the insurance
 * fund, so funding makes and loses no money. A position opened after a funding time pays only from
 * the next one (its index starts at the market's current index).
 */
import { divRound, ONE, type Fixed } from '../money.ts';
import { impactPrice, premiumIndex } from '../../pricing/impact-price.ts';
import { BUY, SELL } from '../book/order-book.ts';
import type { LinearMarket } from './market.ts';

export interface FundingSettings {
  readonly intervalMs: number;
  readonly sampleMs: number;
  /** Interest component per 8 hours (0.0001 = 0.01 %). */
  readonly interest8h: Fixed;
  /** Clamp of (interest − premium) per 8 hours. */
  readonly clamp8h: Fixed;
  /** Hard cap per hour of funding (0.04 = 4 %). */
  readonly capPerHour: Fixed;
}

const EIGHT_HOURS = 8 * 3_600_000;
const HOUR = 3_600_000;

export class FundingState {
  premiumSum: Fixed = 0n;
  samples = 0;
  lastSampleAt = 0;
  /** Start of the interval the samples belong to. */
  intervalStart = 0;
  /** The last funding time a clock tick went through (0 before the first tick). */
  lastFundingAt = 0;
  /** A funding time gone through but not paid yet: the index was stale then (null: none). */
  unpaidFundingAt: number | null = null;
  /** The market's `positionMoves` at that funding time: the positions then are the ones to pay. */
  positionMovesAtFunding = 0;
}

export function nextFundingTime(now: number, intervalMs: number): number {
  return (Math.floor(now / intervalMs) + 1) * intervalMs;
}

/** Takes a premium sample if one is due (at most one per `sampleMs`). */
export function samplePremium(state: FundingState, market: LinearMarket, index: Fixed, now: number, s: FundingSettings): void {
  const intervalStart = Math.floor(now / s.intervalMs) * s.intervalMs;
  if (intervalStart !== state.intervalStart) {
    state.intervalStart = intervalStart;
    state.premiumSum = 0n;
    state.samples = 0;
  }
  if (now - state.lastSampleAt < s.sampleMs) return;
  state.lastSampleAt = now;
  const impactBid = impactPrice(market.bookLevels(BUY), market.spec.impactNotional);
  const impactAsk = impactPrice(market.bookLevels(SELL), market.spec.impactNotional);
  state.premiumSum += premiumIndex(impactBid, impactAsk, index);
  state.samples++;
}

/** The rate per interval implied by the samples so far (the predicted rate before the funding time). */
export function intervalRate(state: FundingState, market: LinearMarket, s: FundingSettings): Fixed {
  const premium = state.samples === 0 ? 0n : divRound(state.premiumSum, BigInt(state.samples), 'halfUp');
  const gap = s.interest8h - premium;
  const clamped = gap > s.clamp8h ? s.clamp8h : gap < -s.clamp8h ? -s.clamp8h : gap;
  const rate8h = premium + clamped;
  const rate = divRound(rate8h * BigInt(s.intervalMs), BigInt(EIGHT_HOURS), 'halfUp');
  const cap = rateCap(market, s);
  return rate > cap ? cap : rate < -cap ? -cap : rate;
}

function rateCap(market: LinearMarket, s: FundingSettings): Fixed {
  const byHour = divRound(s.capPerHour * BigInt(s.intervalMs), BigInt(HOUR), 'floor');
  const maxLeverage = BigInt(market.spec.marginTiers[0]?.maxLeverage ?? 1);
  const imr = divRound(ONE, maxLeverage, 'ceil');
  const byMargin = divRound((imr - imr / 2n) * 3n, 4n, 'floor');
  return byHour < byMargin ? byHour : byMargin;
}
