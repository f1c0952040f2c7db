/**
 * Shared vocabulary of the order book: sides, self-trade prevention modes, why a match stopped,
 * and the synchronous callback interface through which the book reports fills.
 *
 * Assumes nothing beyond plain numbers: prices are positive integer ticks and sizes positive integer
 * lots (safe integers), converted from exact decimals by the engines at their edge. Exercised by
 * order-book.test.ts and order-book.property.test.ts through OrderBook and NaiveBook.
 */

import type { BookOrder } from './order.ts';

export const BUY = 0;
export const SELL = 1;
/** 0 = buy (bids), 1 = sell (asks); numeric so it can index arrays and stay a Smi. */
export type Side = 0 | 1;

/** Limit for a market buy: every ask qualifies. */
export const MARKET_BUY_LIMIT = Number.MAX_SAFE_INTEGER;
/** Limit for a market sell: every bid qualifies (resting prices are >= 1 tick). */
export const MARKET_SELL_LIMIT = 0;

/**
 * What happens when a taker meets a resting order of the same owner:
 *   cancel_maker  remove that resting order and keep matching,
 *   cancel_taker  stop matching before it (the engine drops the taker's remainder),
 *   cancel_both   remove that resting order and stop.
 */
export type SelfTradePrevention = 'cancel_maker' | 'cancel_taker' | 'cancel_both';

/**
 * Why the last match() stopped: the requested lots are filled, the opposite side ran out, the next
 * level is beyond the taker's limit, or self-trade prevention stopped it (cancel_taker/cancel_both).
 */
export type StopReason = 'filled' | 'no_liquidity' | 'limit' | 'self_trade';

/**
 * Receives match() results synchronously and in order. The callbacks may cancel or reduce other
 * resting orders (match() re-reads the best level after every callback) but must not call rest()
 * or match(): the book asserts that.
 */
export interface MatchSink {
  /**
   * Whether `maker` (another owner's) may fill at its price now; absent means every maker may. A
   * refused maker is taken out of the book and reported to onMakerCancelled as 'refused', and the
   * match goes on past it. Must change nothing itself; fillableLots() asks the same question.
   */
  admits?(maker: BookOrder): boolean;
  /**
   * A fill of `lots` at the maker's price. maker.remainingLots is already reduced; when it reached
   * 0 the maker is already out of the book (get(maker.id) is undefined).
   */
  onFill(maker: BookOrder, lots: number, priceTicks: number): void;
  /**
   * A resting order removed by the match, already out of the book: one of the taker's owner (self-
   * trade prevention) or one admits() refused.
   */
  onMakerCancelled(maker: BookOrder, why: MakerCancel): void;
}

/** Why match() removed a resting order without filling it. */
export type MakerCancel = 'self_trade' | 'refused';

/** The admission question of a MatchSink, for fillableLots(). */
export type MakerAdmission = (maker: BookOrder) => boolean;
