/**
 * The perpetual lifecycle over HTTP against the real service, on a manual clock (harness
 * `startService(env, dir, { clock })`): the gateway and the sequencer read time from it, the test
 * advances it and submits `clock.tick` itself, so hours and days pass in milliseconds. The index
 * comes from the push feed (POST /admin/index) and stays fresh for a day; TICK_MS is a minute of
 * wall time, so the service's own ticker stays out of the way.
 *
 * Covers, in the order time passes (05:59 → 08:00 UTC, then days):
 *   - funding: the predicted rate and next funding time in /perps/market-stats; each payment as a
 *     `funding` entry of the perps bucket in /wallet/history and in the position's `funding`;
 *   - liquidation into the book (ETH-PERP): the position is gone from /perps/positions and reaches
 *     /perps/stream/user with status `liquidated`, the venue's reduce-only IOC order is in
 *     /perps/orders, its fill in /perps/trades, the fee a `liquidation` entry in /wallet/history and
 *     an inflow of GET /perps/insurance-fund (the decided fields);
 *   - the fund's takeover when the book cannot absorb a position, listed in the fund's positions,
 *     and its unwinding once a bid at the mark appears;
 *   - dated futures: listed with an ISO expiry at 08:00 UTC; at expiry the market leaves
 *     /perps/markets at once, open orders become `expired`, positions settle at the 30-minute index
 *     TWAP (`settlement` entries), and the listings roll as the clock passes days.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fx } from '../../src/core/money.ts';
import { futureId, listedExpiries } from '../../src/core/listings.ts';
import {
  admin, call, fund, signIn, startService, type TestService, type Trader,
} from '../support/harness.ts';
import { bearer, stopService, StreamClient, type Json } from '../streams/support.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const at = (h: number, m = 0) => Date.UTC(2026, 10, 23, h, m, 0);
const iso = (t: number) => new Date(t).toISOString();

const clock = { t: at(5, 59), now() { return this.t; } };
let ts: TestService;
let url: string;

/** Moves the clock to `to` in steps of `step`, one tick per step (submitted together, one commit). */
async function advanceTo(to: number, step = MINUTE): Promise<void> {
  const ticks = [];
  while (clock.t < to) {
    clock.t = Math.min(to, clock.t + step);
    ticks.push(ts.service.ctx.sequencer.submit({ type: 'clock.tick' }));
  }
  for (const outcome of await Promise.all(ticks)) assert.ok(outcome.ok, 'tick refused');
}

async function index(underlying: string, price: string): Promise<void> {
  const r = await call(url, '/admin/index', { body: { underlying, price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function trader(perps: string): Promise<Trader> {
  const t = await signIn(url);
  await fund(url, t, perps);
  const body = { from: 'wallet', to: 'perps', amount: perps };
  const r = await call(url, '/wallet/transfer', { token: t.token, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return t;
}

async function order(t: Trader, body: Record<string, unknown>) {
  const r = await call(url, '/perps/orders', { token: t.token, body: { type: 'limit', ...body } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

/** The fields of the response rows the tests read. */
interface Entry { type: string; amount: string; bucket: string; ref: string | null; createdAt: string }
interface PositionRow { marketId: string; funding: string }
interface OrderRow {
  id: string; side: string; reduceOnly: boolean; timeInForce: string; status: string; price: string;
  filledQuantity: string;
}
interface TradeRow { orderId: string; side: string; price: string; realizedPnl: string }
interface MarketRow { id: string; marketType: string; underlying: string; expiry?: string; status: string }
interface FundRow {
  asset: string; balance: string; updatedAt: string | null; inflow24h: string; outflow24h: string;
  history: { at: string; balance: string }[];
  positions: { marketId: string; side: string; size: string; entryPrice: string | null }[];
}
interface StatsRow {
  funding1hPct: string | null; fundingRate8hPct: string | null; nextFundingAt: string | null;
}

/** The JSON body of a 200 reply. */
async function get<T>(t: Trader | null, path: string): Promise<T> {
  const r = await call(url, path, t === null ? {} : { token: t.token });
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body as T;
}
const history = async (t: Trader, type: string) =>
  (await get<Entry[]>(t, '/wallet/history?limit=500')).filter((e) => e.type === type);
const positions = (t: Trader) => get<PositionRow[]>(t, '/perps/positions');
const fundView = () => get<FundRow>(null, '/perps/insurance-fund');
const stats = (id: string) => get<StatsRow>(null, `/perps/market-stats?marketId=${id}`);
const markets = () => get<MarketRow[]>(null, '/perps/markets');
const num = (s: string | null) => (s === null ? null : fx(s));

before(async () => {
  ts = await startService({
    FEED: 'push',
    INDEX_MAX_AGE_MS: String(DAY),
    FUNDING_INTERVAL_MS: String(HOUR),
    TICK_MS: '60000',
    DEPOSIT_CONFIRMATIONS: '1',
    RATE_LIMIT_ANONYMOUS: '100000',
  }, undefined, { clock });
  url = ts.url;
});
after(async () => {
  await stopService(ts);
});

describe('perp lifecycle over HTTP on a manual clock', () => {
  let long: Trader;
  let short: Trader;
  let maker: Trader;
  let paidAtSix = 0n;

  test('funding: predicted in market stats, paid hourly, in wallet history and on the position', async () => {
    [long, short, maker] = await Promise.all([trader('200000'), trader('200000'), trader('200000')]);
    await index('BTC', '100000');
    await order(short, { marketId: 'BTC-PERP', side: 'sell', quantity: '1', price: '100000' });
    await order(long, { marketId: 'BTC-PERP', side: 'buy', quantity: '1', type: 'market' });
    // Rich bids: impact bid 100 100, impact ask 100 300 on a 100 000 index ⇒ premium 0.1 %,
    // F8h = 0.1 % − 0.05 % = 0.05 %, 0.00625 % an hour: 6.25 USDC on 1 BTC.
    await order(maker, { marketId: 'BTC-PERP', side: 'buy', quantity: '0.5', price: '100100' });
    await order(maker, { marketId: 'BTC-PERP', side: 'sell', quantity: '0.5', price: '100300' });

    // The interval ending at 06:00 sampled before the book was there (or not at all): whatever the
    // stats predict now is what is paid at 06:00.
    const before = await stats('BTC-PERP');
    assert.equal(before.nextFundingAt, iso(at(6)));
    const predicted = num(before.funding1hPct)!;
    assert.equal(num(before.fundingRate8hPct), predicted * 8n);
    await advanceTo(at(6));
    paidAtSix = (predicted * 100_000n) / 100n;
    assert.deepEqual((await history(long, 'funding')).map((e) => fx(e.amount)), [-paidAtSix]);

    await advanceTo(at(6, 30));
    const mid = await stats('BTC-PERP');
    assert.equal(num(mid.funding1hPct), fx('0.00625'), 'every sample of this hour saw the book');
    assert.equal(num(mid.fundingRate8hPct), fx('0.05'));
    assert.equal(mid.nextFundingAt, iso(at(7)));

    await advanceTo(at(7));
    const paid = await history(long, 'funding');
    assert.deepEqual(paid.map((e) => fx(e.amount)), [fx('-6.25'), -paidAtSix], 'newest first');
    for (const e of paid) {
      assert.equal(e.bucket, 'perps');
      assert.equal(e.ref, 'BTC-PERP');
    }
    assert.deepEqual(paid.map((e) => e.createdAt), [iso(at(7)), iso(at(6))]);
    const received = await history(short, 'funding');
    assert.deepEqual(received.map((e) => fx(e.amount)), [fx('6.25'), paidAtSix]);
    const p = (await positions(long))[0]!;
    assert.equal(p.marketId, 'BTC-PERP');
    assert.equal(fx(p.funding), -(fx('6.25') + paidAtSix));
    assert.equal(fx((await positions(short))[0]!.funding), fx('6.25') + paidAtSix);
    assert.equal((await stats('BTC-PERP')).nextFundingAt, iso(at(8)));
  });

  let ethMaker: Trader;
  let victim: Trader;

  test('liquidation into the book: position gone, venue order, its fill, the fee to the fund', async () => {
    [ethMaker, victim] = await Promise.all([trader('200000'), trader('1650')]);
    const fundBefore = fx((await fundView()).balance);
    await index('ETH', '4000');
    await order(ethMaker, { marketId: 'ETH-PERP', side: 'sell', quantity: '10', price: '4000' });
    // 10 ETH at 25x: initial margin 1 600 + taker fee 20 out of 1 650.
    await order(victim, { marketId: 'ETH-PERP', side: 'buy', quantity: '10', type: 'market' });
    await order(ethMaker, { marketId: 'ETH-PERP', side: 'buy', quantity: '10', price: '3900' });
    assert.equal((await positions(victim)).length, 1);
    const stream = new StreamClient(`${url}/perps/stream/user`, bearer(victim));
    await stream.next((m) => m.event === 'snapshot');

    // Mark 3 910: equity 1 630 − 900 = 730 < maintenance 782 ⇒ sold into the 3 900 bid
    // (limit: the bankruptcy price 3 910 − 730 / 10 = 3 837); fee 1 % of 39 000 to the fund.
    await index('ETH', '3910');
    assert.deepEqual(await positions(victim), [], 'the position is gone');
    const isLiquidated = (p: Json) => p.marketId === 'ETH-PERP' && p.status === 'liquidated';
    const liquidated = (m: { event: string; data: Json }) =>
      m.event === 'delta' && m.data.payload.positions.upserts.some(isLiquidated);
    await stream.next(liquidated);
    stream.close();
    const orders = await get<OrderRow[]>(victim, '/perps/orders?marketId=ETH-PERP');
    const venue = orders.find((o) => o.side === 'sell');
    assert.ok(venue !== undefined, 'the liquidation order is listed');
    assert.equal(venue.reduceOnly, true);
    assert.equal(venue.timeInForce, 'ioc');
    assert.equal(venue.status, 'filled');
    assert.equal(fx(venue.price), fx('3837'));
    assert.equal(fx(venue.filledQuantity), fx('10'));
    const trades = await get<TradeRow[]>(victim, '/perps/trades?marketId=ETH-PERP');
    const sold = trades.find((t) => t.side === 'sell')!;
    assert.equal(sold.orderId, venue.id);
    assert.equal(fx(sold.price), fx('3900'));
    assert.equal(fx(sold.realizedPnl), fx('-1000'));
    const fee = await history(victim, 'liquidation');
    assert.deepEqual(fee.map((e) => [fx(e.amount), e.bucket, e.ref]), [[fx('-390'), 'perps', 'ETH-PERP']]);
    const balance = await get<{ balance: string }>(victim, '/perps/balances');
    assert.equal(fx(balance.balance), fx('220.5'), '1 650 − 20 − 1 000 − 19.5 − 390');

    const f = await fundView();
    const fields = ['asset', 'balance', 'history', 'inflow24h', 'outflow24h', 'positions', 'updatedAt'];
    assert.deepEqual(Object.keys(f).sort(), fields);
    assert.equal(f.asset, 'USDC');
    assert.equal(fx(f.balance), fundBefore + fx('390'));
    assert.equal(f.updatedAt, iso(clock.t));
    assert.ok(fx(f.inflow24h) >= fx('390'));
    assert.equal(fx(f.outflow24h), 0n);
    assert.deepEqual(f.history.at(-1), { at: iso(clock.t), balance: f.balance });
    assert.deepEqual(f.positions, []);
  });

  test('the fund takes over what the book cannot absorb, lists it, and unwinds it at the mark', async () => {
    const thin = await trader('330');
    await order(ethMaker, { marketId: 'ETH-PERP', side: 'sell', quantity: '2', price: '3910' });
    await order(thin, { marketId: 'ETH-PERP', side: 'buy', quantity: '2', type: 'market' });
    const fundBefore = fx((await fundView()).balance);
    // Mark 3 760: equity 326.09 − 300 = 26.09 < 2/3 of maintenance 150.4, and no bids: the fund
    // takes the 2 ETH long over at the mark.
    await index('ETH', '3760');
    assert.deepEqual(await positions(thin), []);
    const f = await fundView();
    assert.deepEqual(f.positions, [{ marketId: 'ETH-PERP', side: 'long', size: '2', entryPrice: '3760' }]);
    assert.equal(fx(f.balance), fundBefore, 'no deficit to pay');
    const trades = await get<TradeRow[]>(thin, '/perps/trades?marketId=ETH-PERP');
    assert.equal(fx(trades[0]!.price), fx('3760'));
    assert.equal(fx(trades[0]!.realizedPnl), fx('-300'));

    await order(ethMaker, { marketId: 'ETH-PERP', side: 'buy', quantity: '2', price: '3760' });
    await advanceTo(clock.t + MINUTE);
    const unwound = await fundView();
    assert.deepEqual(unwound.positions, []);
    assert.equal(fx(unwound.balance), fundBefore - fx('3.76'), 'sold at the mark; the taker fee paid');
    assert.equal(fx(unwound.outflow24h), fx('3.76'));
  });

  let future: string;
  let seller: Trader;
  let buyer: Trader;

  test('dated futures are listed with an ISO expiry at 08:00 UTC', async () => {
    const listed = (await markets()).filter((m) => m.marketType === 'future');
    for (const underlying of ['BTC', 'ETH']) {
      const ids = listed.filter((m) => m.underlying === underlying).map((m) => m.id);
      assert.deepEqual(ids, listedExpiries(clock.t).map((e) => futureId(underlying, e)));
    }
    for (const m of listed) assert.match(m.expiry ?? '', /^\d{4}-\d{2}-\d{2}T08:00:00\.000Z$/);
    future = futureId('BTC', at(8));
    assert.equal(future, 'BTC-23NOV26');
    const m = listed.find((x) => x.id === future)!;
    assert.equal(m.expiry, iso(at(8)));
    assert.equal(m.status, 'open');
  });

  test('at expiry: off the list at once, orders expired, positions settled at the index TWAP', async () => {
    [seller, buyer] = await Promise.all([trader('100000'), trader('100000')]);
    await order(seller, { marketId: future, side: 'sell', quantity: '1', price: '100000' });
    await order(buyer, { marketId: future, side: 'buy', quantity: '1', type: 'market' });
    const resting = await order(seller, { marketId: future, side: 'buy', quantity: '0.5', price: '95000' });
    const stream = new StreamClient(`${url}/perps/stream/events?marketId=${future}&intervalMs=100`, bearer(buyer));
    await stream.next((m) => m.event === 'snapshot');
    // Settlement window 07:30–08:00: 101 000 for 15 minutes, then 100 500 ⇒ TWAP 100 750.
    await advanceTo(at(7, 30));
    await index('BTC', '101000');
    await advanceTo(at(7, 45));
    await index('BTC', '100500');
    await advanceTo(at(7, 59));
    assert.ok((await markets()).some((m) => m.id === future));

    clock.t = at(8); // no tick yet: the list already leaves it out
    assert.ok(!(await markets()).some((m) => m.id === future), 'expired futures leave the list at once');
    await advanceTo(at(8) + 1000);
    const expired = await get<OrderRow[]>(seller, `/perps/orders?marketId=${future}`);
    assert.equal(expired.find((o) => o.id === resting.id)?.status, 'expired');
    assert.deepEqual(await get<OrderRow[]>(seller, `/perps/orders/open?marketId=${future}`), []);
    for (const [t, amount] of [[buyer, '750'], [seller, '-750']] as const) {
      assert.ok(!(await positions(t)).some((p) => p.marketId === future), 'no position left');
      const settled = await history(t, 'settlement');
      assert.deepEqual(settled.map((e) => [fx(e.amount), e.bucket, e.ref]), [[fx(amount), 'perps', future]]);
    }
    const book = await call(url, `/perps/orderbook/${future}`);
    assert.equal(book.status, 404);
    // The market's events stream delivers the expiry and the settlement, then ends (before: it
    // ended at once, and the closed position and the removed bid never reached it).
    try {
      const ended = await stream.next((m) => m.event === 'error');
      assert.deepEqual([ended.data.code, ended.data.retryable], ['INVALID_PARAMS', false]);
      const deltas = stream.messages.filter((m) => m.event === 'delta');
      const closed = deltas.flatMap((m) => m.data.payload.positions.upserts as Json[]).at(-1);
      assert.deepEqual([closed?.status, closed?.quantity, closed?.realizedPnl], ['closed', '0', '750'], JSON.stringify(stream.messages));
      const removed = deltas.flatMap((m) => m.data.payload.orderbook.bids as Json[]);
      assert.deepEqual(removed.at(-1), { price: '95000', size: '0', total: '0' });
    } finally {
      stream.close();
    }
  });

  test('listings roll: new expiries appear as the clock passes days', async () => {
    const futures = async () => (await markets()).filter((m) => m.marketType === 'future');
    const ids = async () => new Set((await futures()).map((m) => m.id));
    const now = await ids();
    assert.ok(now.has('BTC-25NOV26') && now.has('ETH-25NOV26'), 'the next daily is listed after 08:00');
    clock.t = at(8) + 2 * DAY + HOUR; // Wednesday 09:00
    await ts.service.ctx.sequencer.submit({ type: 'clock.tick' });
    const later = await ids();
    for (const e of listedExpiries(clock.t)) {
      assert.ok(later.has(futureId('BTC', e)) && later.has(futureId('ETH', e)), `${iso(e)} is listed`);
    }
    assert.ok(later.has('BTC-26NOV26'), 'a new daily');
    for (const gone of ['BTC-24NOV26', 'BTC-25NOV26']) assert.ok(!later.has(gone), `${gone} expired`);
    for (const m of await markets()) if (m.expiry !== undefined) assert.ok(Date.parse(m.expiry) > clock.t);
  });
});
