/**
 * The venue the order-entry benchmarks trade on (bench/gateway/orders.ts, paths.ts): a service with
 * the push feed and order rate limits lifted, BTC indexed at 100,000, and a maker resting a deep
 * two-sided BTC-PERP book (20 levels of 200 BTC a side, 5 apart), so every 0.001 BTC market order
 * of the taker fills.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { admin, call, freePort, fund, signIn, type Trader } from '../../test/support/harness.ts';
import { startService } from './child-service.ts';

/** Service settings on top of the test settings (child-service.ts). */
const ORDER_VENUE_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '86400000',
  RATE_LIMIT_ORDERS: '1000000000',
  RATE_LIMIT_ACCOUNT: '1000000000',
};

export interface OrderVenue {
  readonly url: string;
  /** The signed-in, funded account the benchmarks send orders as. */
  readonly taker: Trader;
  /** Stops the service and deletes its data directory. */
  close(): void;
}

/** The service on a fresh data directory, with the venue set up on it. */
export async function startOrderVenue(): Promise<OrderVenue> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'exchange-order-venue-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startService(dataDir, port, ORDER_VENUE_ENV);
  const close = () => {
    service.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    return { url, taker: await setUpOrderVenue(url), close };
  } catch (error) {
    close();
    throw error;
  }
}

/** The benchmarks' order: a 0.001 BTC-PERP market order (IOC), which always fills on this venue. */
export function marketOrderBody(side: 'buy' | 'sell'): string {
  return JSON.stringify({ marketId: 'BTC-PERP', side, quantity: '0.001', type: 'market' });
}

/** Signs in and funds a maker and a taker, rests the maker's book; returns the taker. */
async function setUpOrderVenue(url: string): Promise<Trader> {
  const [maker, taker] = [await signIn(url), await signIn(url)];
  await Promise.all([fund(url, maker, '100000000', 20_000), fund(url, taker, '10000000', 20_000)]);
  for (const [t, amount] of [[maker, '90000000'], [taker, '9000000']] as const) {
    const r = await call(url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount } });
    if (r.status !== 200) throw new Error(`transfer failed: ${JSON.stringify(r.body)}`);
  }
  const index = await call(url, '/admin/index', { headers: admin, body: { underlying: 'BTC', price: '100000' } });
  if (index.status !== 200) throw new Error(`index failed: ${JSON.stringify(index.body)}`);
  const quotes = [];
  for (let i = 1; i <= 20; i++) {
    quotes.push({ side: 'buy', price: String(100_000 - i * 5), quantity: '200', postOnly: true });
    quotes.push({ side: 'sell', price: String(100_000 + i * 5), quantity: '200', postOnly: true });
  }
  const book = await call(url, '/perps/quotes/bulk', { token: maker.token, body: { marketId: 'BTC-PERP', cancelAll: true, quotes } });
  if (book.status !== 200 || book.body.rejected.length > 0) throw new Error(`maker book failed: ${JSON.stringify(book.body).slice(0, 300)}`);
  return taker;
}
