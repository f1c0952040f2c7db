/**
 * The history projections the journal writes with every batch, in one place so the journal worker
 * and the main thread (which reads from them) build the same set.
 */
import type { Db } from '../database.ts';
import { MarketHistory } from './market-history.ts';
import { TradingHistory } from './trading-history.ts';
import { WalletHistory } from './wallet-history.ts';

export function historyProjectors(db: Db): [WalletHistory, TradingHistory, MarketHistory] {
  return [new WalletHistory(db), new TradingHistory(db), new MarketHistory(db)];
}
