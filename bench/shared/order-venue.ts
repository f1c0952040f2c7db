/**
 * The venue the order-entry benchmarks trade on (bench/gateway/orders.ts, paths.ts): a service with
 * the push feed and order rate limits lifted, BTC indexed at 100,000, and a maker resting a deep
 * two-sided BTC-PERP book (20 levels of 200 BTC a side, 5 apart), so every 0.001 BTC market order
 * of the taker fills.
 */
import { admin, call, fund, signIn, type Trader } from '../../test/support/harness.ts';

/** Service settings on top of the test settings (child-service.ts). */
export const ORDER_VENUE_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '86400000',
  RATE_LIMIT_ORDERS: '1000000000',
  RATE_LIMIT_ACCOUNT: '1000000000',
};

/** Signs in and funds a maker and a taker, rests the maker's book; returns the taker. */
export async function setUpOrderVenue(url: string): Promise<Trader> {
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
