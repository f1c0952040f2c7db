/**
 * A resting order that reduces a position is taken out of the book once its position's bankruptcy
 * bound moves past it (engine.ts `cancelRefusedMakers`, run with every mark move), over HTTP
 * against the real service with the push index feed. A cross long of 1 BTC and 10 ETH rests a
 * reduce-only BTC sell inside its bound; ETH then falls, which moves the BTC bound past the sell
 * without taking the account below maintenance. With that index the sell is listed cancelled with
 * rejectReason INSUFFICIENT_MARGIN and leaves the public book; a taker at its price gets nothing
 * (FOK 422 FOK_NOT_FILLED, the preview agrees; a GTC bid rests unfilled); the position is
 * untouched. (At the core: src/core/linear/lifecycle-fund.test.ts, with the fund's loss this
 * prevents, and the refusal at the match for a bound moved without a mark move.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, startService, type TestService, type Trader } from '../support/harness.ts';
import { perpTrader, publishIndex, stopService } from '../streams/support.ts';

let ts: TestService;
let url: string;

before(async () => {
  ts = await startService({ FEED: 'push', INDEX_MAX_AGE_MS: String(86_400_000), DEPOSIT_CONFIRMATIONS: '1' });
  url = ts.url;
});
after(async () => {
  await stopService(ts);
});

async function order(t: Trader, body: Record<string, unknown>, status = 201) {
  const r = await call(url, '/perps/orders', { token: t.token, body: { type: 'limit', ...body } });
  assert.equal(r.status, status, JSON.stringify(r.body));
  return r.body;
}

test('a resting close whose bound moved past it leaves the book with the index that moved it', async () => {
  const [a, b, c] = await Promise.all([perpTrader(url, '7000'), perpTrader(url, '1000000'), perpTrader(url, '1000000')]);
  await publishIndex(url, 'BTC', '100000');
  await publishIndex(url, 'ETH', '4000');
  await order(b, { marketId: 'BTC-PERP', side: 'sell', quantity: '1', price: '100000' });
  await order(a, { marketId: 'BTC-PERP', side: 'buy', quantity: '1', type: 'market', timeInForce: 'ioc' });
  await order(c, { marketId: 'ETH-PERP', side: 'sell', quantity: '10', price: '4000' });
  await order(a, { marketId: 'ETH-PERP', side: 'buy', quantity: '10', type: 'market', timeInForce: 'ioc' });
  // Equity 6 930 (fees 70): the bound is 100 000 − (6 930 − 52.5) = 93 122.5, the sell is inside it.
  const sell = await order(a, { marketId: 'BTC-PERP', side: 'sell', quantity: '1', price: '97000', reduceOnly: true });
  assert.equal(sell.status, 'open');

  // ETH −10 %: equity 2 930, above maintenance; the BTC bound is now 97 122.5, past the sell.
  await publishIndex(url, 'ETH', '3600');
  // Before: it stayed open and in the book, an ask no taker could trade, until a taker reached it.
  const listed = await call(url, `/perps/orders?marketId=BTC-PERP`, { token: a.token });
  assert.equal(listed.status, 200);
  const cancelled = (listed.body as { id: string; status: string; rejectReason: string | null }[]).find((o) => o.id === sell.id);
  assert.deepEqual([cancelled?.status, cancelled?.rejectReason], ['cancelled', 'INSUFFICIENT_MARGIN']);
  const book = await call(url, '/perps/orderbook/BTC-PERP');
  assert.deepEqual(book.body.asks, [], 'no ask left in the public book');
  const fok = { marketId: 'BTC-PERP', side: 'buy', quantity: '1', price: '97000', timeInForce: 'fok' };
  const preview = await call(url, '/perps/orders/preview', { token: c.token, body: { type: 'limit', ...fok } });
  assert.equal(preview.status, 200, JSON.stringify(preview.body));
  assert.deepEqual([preview.body.approved, preview.body.reason], [false, 'FOK_NOT_FILLED']);
  const refused = await order(c, fok, 422);
  assert.equal(refused.error, 'FOK_NOT_FILLED');

  const bid = await order(c, { marketId: 'BTC-PERP', side: 'buy', quantity: '1', price: '97000' });
  assert.equal(bid.status, 'open', 'nothing filled: the bid rests');
  assert.deepEqual(bid.fills, []);
  const positions = await call(url, '/perps/positions', { token: a.token });
  const btc = (positions.body as { marketId: string; size: string }[]).find((p) => p.marketId === 'BTC-PERP');
  assert.equal(btc?.size, '1', 'the long is untouched');
});

test('an opening bid whose loss at a falling mark its owner cannot cover leaves the book with that index', async () => {
  const [a, b, c] = await Promise.all([perpTrader(url, '2100'), perpTrader(url, '6100'), perpTrader(url, '1000000')]);
  await publishIndex(url, 'BTC', '100000');
  // The first test's long (1 BTC, 10 ETH, equity 2 930 at ETH 3 600) would be liquidated into these
  // bids by the BTC fall below: ETH back at 4 000 keeps it 4 000 above.
  await publishIndex(url, 'ETH', '4000');
  // No position: initial margin 2 000 and the fee set aside fit in 2 100; b holds 6 100 behind the same bid.
  const thin = await order(a, { marketId: 'BTC-PERP', side: 'buy', quantity: '1', price: '99000' });
  const covered = await order(b, { marketId: 'BTC-PERP', side: 'buy', quantity: '1', price: '99000' });
  await publishIndex(url, 'BTC', '96000'); // the bid now loses 3 000 at the mark
  const listed = await call(url, `/perps/orders?marketId=BTC-PERP`, { token: a.token });
  const cancelled = (listed.body as { id: string; status: string; rejectReason: string | null }[]).find((o) => o.id === thin.id);
  assert.deepEqual([cancelled?.status, cancelled?.rejectReason], ['cancelled', 'INSUFFICIENT_MARGIN'], 'before: it stayed open');
  const book = await call(url, '/perps/orderbook/BTC-PERP');
  const level = (book.body.bids as [string, string][]).find(([price]) => price === '99000');
  assert.deepEqual(level, ['99000', '1'], 'only the covered bid is left at 99 000');
  const sold = await order(c, { marketId: 'BTC-PERP', side: 'sell', quantity: '2', price: '99000', timeInForce: 'ioc' });
  assert.deepEqual(sold.fills.map((f: { makerOrderId?: string; quantity: string }) => f.quantity), ['1'], 'one lot trades, against the covered bid');
  const open = await call(url, '/perps/orders/open', { token: b.token });
  assert.deepEqual((open.body as unknown[]).length, 0, `${covered.id} filled`);
});
