/**
 * The distributed mode's history in PostgreSQL: the reads a gateway serves history from (the same
 * methods as the SQLite projections' in src/adapters/store/projections/, returning promises), the
 * projector that writes them once per seq (projector.ts), and the watermark a gateway's history
 * barrier waits on, followed by LISTEN (watermark.ts).
 */
import type pg from 'pg';
import type { Histories } from '../../../gateway/history-port.ts';
import { PgMarketHistory } from './market-history.ts';
import { PgTradingHistory } from './trading-history.ts';
import { PgWalletHistory } from './wallet-history.ts';

export { HISTORY_WATERMARK_CHANNEL, HistoryOutOfOrder, PgHistoryProjector, type ProjectedCommand } from './projector.ts';
export { PgDvolHistory, PgMarketHistory } from './market-history.ts';
export { PgTradingHistory } from './trading-history.ts';
export { PgWalletHistory } from './wallet-history.ts';
export { PgHistoryWatermark, type PgHistoryWatermarkOptions } from './watermark.ts';

/** The history reads on one pool: the gateway's history port (gateway/history-port.ts `Histories`). */
export interface PgHistories extends Histories {
  readonly wallet: PgWalletHistory;
  readonly trading: PgTradingHistory;
  readonly market: PgMarketHistory;
}

export function pgHistories(pool: pg.Pool): PgHistories {
  return { wallet: new PgWalletHistory(pool), trading: new PgTradingHistory(pool), market: new PgMarketHistory(pool) };
}
