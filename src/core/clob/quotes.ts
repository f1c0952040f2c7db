/**
 * Quote commands of the CLOB venue (`POST /quotes`, `/options/quotes`, `/quotes/bulk`): the same
 * ladder and replace semantics as the linear engine's `quote()`. One command cancels the caller's
 * resting quote orders on the market (bulk `cancelAll`) or those tagged with the quote id (single
 * two-sided quote), then places the levels in order; a level that fails its checks is listed in
 * `rejected` and the others stand. Nothing observes the book between the cancel and the ladder.
 * The replace walks the account's orders on that market only (ClobAccount.ordersOn), in the order
 * they were placed, so a maker quoting many markets pays for the one it quotes.
 *
 * Orders placed here are quote orders: their maker fills count for market-maker protection, and
 * while the protection is frozen for an option's underlying the whole request is refused with
 * MMP_TRIGGERED before anything changes. Treasury grants (operator funding of spot inventory)
 * live here too, as the other command that only the CLOB venue's buckets concern.
 */
import { isRejection, reject, type Rejection } from '../errors.ts';
import { systemAccount, userAccount } from '../ledger/ledger.ts';
import type { QuoteRequest, QuoteResult } from '../linear/engine.ts';
import { crossedLadder } from '../quote-ladder.ts';
import type { Fixed } from '../money.ts';
import { ClobAccount } from './account.ts';
import type { ClobEngine } from './engine.ts';
import type { ClobOrder } from './order.ts';

export function placeQuotes(e: ClobEngine, accountId: number, q: QuoteRequest): QuoteResult | Rejection {
  const market = e.markets.get(q.marketId);
  if (market === undefined || market.status === 'expired') {
    return reject('NOT_FOUND', `market ${q.marketId} not found`);
  }
  const max = e.limits.maxQuoteLevels;
  if (q.levels.length > max) return reject('VALIDATION_ERROR', `at most ${max} quote levels per request`);
  const crossed = crossedLadder(q.levels);
  if (crossed !== null) return crossed;
  if (market.isOption && e.mmp.isFrozen(accountId, market.underlying, e.deps.now())) {
    const what = `market-maker protection for ${market.underlying}`;
    return reject('MMP_TRIGGERED', `${what} is frozen: quotes are refused until it ends or is reset`);
  }
  const account = e.findAccount(accountId) ?? new ClobAccount(accountId);
  const cancelled: string[] = [];
  if (q.cancelAll || q.replaceQuoteId !== null) {
    const replaced: ClobOrder['request'][] = [];
    for (const o of account.ordersOn(market)) {
      const hit = q.cancelAll ? o.isQuote : o.request.quoteId === q.replaceQuoteId;
      if (!hit) continue;
      cancelled.push(String(e.cancelOrder(o, 'cancelled').id));
      replaced.push(o.request);
    }
    account.clientIds.handOver(replaced, q.levels);
  }
  const accepted: ClobOrder[] = [];
  const rejected: QuoteResult['rejected'] = [];
  q.levels.forEach((level, index) => {
    const order = e.accept(accountId, level, true);
    e.flushMmp();
    if (isRejection(order)) rejected.push({ index, error: order.code, message: order.message });
    else accepted.push(order);
  });
  return { quoteId: q.quoteId, cancelled, orders: accepted.map((o) => e.resultOf(o)), rejected };
}

export interface GrantResult {
  readonly asset: string;
  readonly amount: Fixed;
  readonly balance: Fixed;
}

/** Credits spot inventory of a base asset from the treasury (operator / market-maker funding). */
export function grant(
  e: ClobEngine, accountId: number, asset: string, amount: Fixed,
): GrantResult | Rejection {
  const bases = new Set([...e.markets.values()].filter((m) => !m.isOption).map((m) => m.baseAsset));
  if (!bases.has(asset)) {
    return reject('VALIDATION_ERROR', `asset ${asset} is not a spot base asset (${[...bases].join(', ')})`);
  }
  if (amount <= 0n) return reject('VALIDATION_ERROR', 'amount must be positive');
  const user = userAccount(accountId, 'spot', asset);
  const treasury = systemAccount('treasury', asset);
  e.deps.ledger.move('transfer', treasury, user, amount, e.deps.now(), { ref: 'treasury_grant' });
  return { asset, amount, balance: e.deps.ledger.balance(user) };
}
