/**
 * The CLOB engine's commands (spot and options), their results, and the dispatch the exchange
 * delegates them to. Commands are plain serialisable values with already-parsed exact amounts,
 * journaled like every other command; `treasury.grant` credits spot inventory of a base asset from
 * the `treasury` system account (an operator tool, reachable only through the admin API).
 */
import type { Command } from '../commands.ts';
import type { PlaceResult, QuoteRequest, QuoteResult } from '../linear/engine.ts';
import type { OrderRequest } from '../linear/order.ts';
import type { Fixed } from '../money.ts';
import type { OrderRecord } from '../records.ts';
import { reject, type Rejection } from '../errors.ts';
import { amendOrder } from './amend.ts';
import type { ClobCancelFilter, ClobEngine } from './engine.ts';
import type { MmpConfig } from './mmp.ts';
import { grant, placeQuotes, type GrantResult } from './quotes.ts';
import { runStrategy, type StrategyRequest, type StrategyResult } from './strategy.ts';

export type ClobCommand =
  | { type: 'clob.place'; account: string; request: OrderRequest }
  | { type: 'clob.cancel'; account: string; orderId: number }
  | { type: 'clob.cancel_all'; account: string; filter: ClobCancelFilter }
  | { type: 'clob.modify'; account: string; orderId: number; price: Fixed | null; quantity: Fixed | null }
  | { type: 'clob.quote'; account: string; quote: QuoteRequest }
  | { type: 'clob.strategy'; account: string; strategy: StrategyRequest }
  | { type: 'clob.mmp_set'; account: string; underlying: string; config: MmpConfig | null }
  | { type: 'clob.mmp_reset'; account: string; underlying: string }
  | { type: 'treasury.grant'; account: string; asset: string; amount: Fixed };

export interface ClobResults {
  'clob.place': PlaceResult;
  'clob.cancel': OrderRecord;
  'clob.cancel_all': { cancelled: string[] };
  'clob.modify': PlaceResult;
  'clob.quote': QuoteResult;
  'clob.strategy': StrategyResult;
  'clob.mmp_set': { underlying: string; config: MmpConfig | null };
  'clob.mmp_reset': { underlying: string };
  'treasury.grant': GrantResult;
}

/** Applies a CLOB command; `accountId` maps an address to its account id (opening it if new). */
export function dispatchClob(
  engine: ClobEngine, command: Command, accountId: (address: string) => number,
): unknown {
  const c = command as ClobCommand;
  switch (c.type) {
    case 'clob.place':
      return engine.place(accountId(c.account), c.request);
    case 'clob.cancel':
      return engine.cancel(accountId(c.account), c.orderId);
    case 'clob.cancel_all':
      return { cancelled: engine.cancelAll(accountId(c.account), c.filter) };
    case 'clob.modify':
      return amendOrder(engine, accountId(c.account), c.orderId, c.price, c.quantity);
    case 'clob.quote':
      return placeQuotes(engine, accountId(c.account), c.quote);
    case 'clob.strategy':
      return runStrategy(engine, accountId(c.account), c.strategy);
    case 'clob.mmp_set':
      return setMmp(engine, accountId(c.account), c.underlying, c.config);
    case 'clob.mmp_reset':
      return resetMmp(engine, accountId(c.account), c.underlying);
    case 'treasury.grant':
      return grant(engine, accountId(c.account), c.asset, c.amount);
    default:
      throw new Error(`unknown command ${(command as { type: string }).type}`);
  }
}

function setMmp(
  engine: ClobEngine, accountId: number, underlying: string, config: MmpConfig | null,
): ClobResults['clob.mmp_set'] | Rejection {
  if (!engine.deps.config.options.some((u) => u.symbol === underlying)) {
    return reject('NOT_FOUND', `no options on ${underlying}`);
  }
  engine.mmp.set(accountId, underlying, config);
  return { underlying, config };
}

function resetMmp(
  engine: ClobEngine, accountId: number, underlying: string,
): ClobResults['clob.mmp_reset'] | Rejection {
  if (!engine.mmp.reset(accountId, underlying)) {
    return reject('NOT_FOUND', `no market-maker protection set for ${underlying}`);
  }
  return { underlying };
}
