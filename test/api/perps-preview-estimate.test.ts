/**
 * The order preview's position estimate over real HTTP: POST /perps/orders/preview tells the
 * position an order would leave (size, entry price, leverage, liquidation price), and once the
 * order has filled at the price the preview assumed, GET /perps/positions shows exactly those
 * figures, to the tick. Isolated and cross, long and short, an order that opens, adds, reduces,
 * flips and closes (a flat result estimates nothing), a resting limit order filled later as maker,
 * a cross position valued with another market's position in the account, and a cross long that no
 * positive mark could liquidate (null in both).
 *
 * How: one real service on loopback (temp SQLite, push index feed, no market maker) on a frozen
 * clock, so no funding falls due and the index stays fresh. The mark stays the index: the book is
 * never two-sided (each step rests one order of a counterparty and the trader takes all of it, or
 * the other way round), so no book input reaches the perp mark.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDecimal, fx } from '../../src/core/money.ts';
import { call, signIn, type Reply, type TestService, type Trader } from '../support/harness.ts';
import { frozenPerpsService, fundPerps, ok, publishIndex } from '../support/perps-http.ts';

const BTC = 'BTC-PERP';
const ETH = 'ETH-PERP';
type Json = Reply['body'];

let svc: TestService;
let base: string;
let counterparty: Trader;
let isolatedTrader: Trader;
let crossTrader: Trader;
let richTrader: Trader;

before(async () => {
  ({ svc } = await frozenPerpsService());
  base = svc.url;
  // Sign-in messages carry the real time: sign in while the frozen clock is still close to it.
  [counterparty, isolatedTrader, crossTrader, richTrader] = await Promise.all([signIn(base), signIn(base), signIn(base), signIn(base)]);
  await Promise.all([
    publishIndex(base, 'BTC', '100000'), publishIndex(base, 'ETH', '3000'),
    fundPerps(base, counterparty, '10000000'), fundPerps(base, isolatedTrader, '20000'), fundPerps(base, crossTrader, '30000'), fundPerps(base, richTrader, '100000'),
  ]);
});

after(async () => {
  await svc.close();
});

const post = (t: Trader, path: string, body: Record<string, unknown>) => call(base, path, { method: 'POST', token: t.token, body });

/** The trader's position in `marketId` under `mode` as GET /perps/positions shows it, if any. */
async function position(t: Trader, marketId: string, mode: string): Promise<Json | undefined> {
  const rows = await ok(call(base, '/perps/positions', { token: t.token }), 200) as Json[];
  return rows.find((p) => p.marketId === marketId && p.marginMode === mode);
}

/** A position's size signed as the preview gives it (long positive). */
const signedSize = (p: Json) => (p.side === 'short' ? formatDecimal(-fx(p.size)) : p.size);

interface Step {
  /** The trader's order (BTC-PERP unless it names a market). */
  readonly order: Record<string, unknown>;
  /** The counterparty's resting order the trader's order takes, all of it. */
  readonly resting?: Record<string, unknown>;
  /** Instead: the trader's order rests and the counterparty's ioc order then takes all of it. */
  readonly takenBy?: Record<string, unknown>;
}

/**
 * Previews the step's order, lets it fill as assumed, and returns the preview with the position
 * GET /perps/positions then shows (undefined when flat).
 */
async function play(t: Trader, step: Step): Promise<{ preview: Json; shown: Json | undefined }> {
  const body = { marketId: BTC, marginMode: 'cross', ...step.order };
  if (step.resting !== undefined) await ok(post(counterparty, '/perps/orders', { marketId: body.marketId, ...step.resting }), 201);
  const preview = await ok(post(t, '/perps/orders/preview', body), 200);
  assert.equal(preview.approved, true, preview.message);
  const placed = await ok(post(t, '/perps/orders', body), 201);
  if (step.takenBy !== undefined) {
    assert.equal(placed.status, 'open');
    const taker = await ok(post(counterparty, '/perps/orders', { marketId: body.marketId, timeInForce: 'ioc', ...step.takenBy }), 201);
    assert.equal(taker.status, 'filled');
  } else {
    assert.equal(placed.status, 'filled', 'the order filled as the preview assumed');
  }
  const shown = await position(t, body.marketId as string, body.marginMode as string);
  if (shown !== undefined) assert.equal(shown.markPrice, body.marketId === BTC ? '100000' : '3000', 'the mark has not moved');
  return { preview, shown };
}

/** The preview's estimate equals what the position view shows after the fill. */
function assertAgrees(preview: Json, shown: Json | undefined, what: string): void {
  const estimate = [preview.estimatedPositionSize, preview.estimatedEntryPrice, preview.estimatedLiquidationPrice, preview.estimatedLeverage];
  if (shown === undefined) {
    assert.deepEqual(estimate, ['0', null, null, null], `${what}: a flat result estimates nothing`);
    return;
  }
  assert.deepEqual(estimate, [signedSize(shown), shown.entryPrice, shown.liquidationPrice, shown.leverage], what);
}

describe('the preview estimates the position GET /perps/positions shows after the fill', () => {
  test('isolated: open long (market), add (resting bid filled as maker), reduce, flip short, close', async () => {
    const t = isolatedTrader;
    const steps: [string, Step][] = [
      ['market buy opens long', { order: { side: 'buy', type: 'market', quantity: '0.5', marginMode: 'isolated' }, resting: { side: 'sell', price: '100050', quantity: '0.5' } }],
      ['resting bid adds', { order: { side: 'buy', price: '99900', quantity: '0.3', marginMode: 'isolated' }, takenBy: { side: 'sell', price: '99900', quantity: '0.3' } }],
      ['ioc sell reduces', { order: { side: 'sell', price: '100100', quantity: '0.2', timeInForce: 'ioc', marginMode: 'isolated' }, resting: { side: 'buy', price: '100100', quantity: '0.2' } }],
      ['market sell flips short', { order: { side: 'sell', type: 'market', quantity: '1', marginMode: 'isolated' }, resting: { side: 'buy', price: '99950', quantity: '1' } }],
      ['ioc buy closes', { order: { side: 'buy', price: '100000', quantity: '0.4', timeInForce: 'ioc', marginMode: 'isolated' }, resting: { side: 'sell', price: '100000', quantity: '0.4' } }],
    ];
    for (const [what, step] of steps) {
      const { preview, shown } = await play(t, step);
      assertAgrees(preview, shown, what);
      if (shown !== undefined) assert.notEqual(shown.liquidationPrice, null, `${what}: an isolated position has a liquidation price`);
    }
    assert.equal(await position(t, BTC, 'isolated'), undefined);
  });

  test('cross, next to an ETH-PERP position: open short, add, reduce, flip long, close', async () => {
    const t = crossTrader;
    const { shown: eth } = await play(t, { order: { marketId: ETH, side: 'buy', type: 'market', quantity: '2' }, resting: { side: 'sell', price: '3000', quantity: '2' } });
    assert.equal(eth?.size, '2');
    const steps: [string, Step][] = [
      ['ioc sell opens short', { order: { side: 'sell', price: '100050', quantity: '0.8', timeInForce: 'ioc' }, resting: { side: 'buy', price: '100050', quantity: '0.8' } }],
      ['market sell adds', { order: { side: 'sell', type: 'market', quantity: '0.4' }, resting: { side: 'buy', price: '99990', quantity: '0.4' } }],
      ['resting bid reduces', { order: { side: 'buy', price: '99980', quantity: '0.5' }, takenBy: { side: 'sell', price: '99980', quantity: '0.5' } }],
      ['market buy flips long', { order: { side: 'buy', type: 'market', quantity: '1.5' }, resting: { side: 'sell', price: '100000', quantity: '1.5' } }],
      ['ioc sell closes', { order: { side: 'sell', price: '99980', quantity: '0.8', timeInForce: 'ioc' }, resting: { side: 'buy', price: '99980', quantity: '0.8' } }],
    ];
    for (const [what, step] of steps) {
      const { preview, shown } = await play(t, step);
      assertAgrees(preview, shown, what);
      if (shown !== undefined) assert.notEqual(shown.liquidationPrice, null, `${what}: this cross position can be liquidated`);
    }
    assert.equal(await position(t, BTC, 'cross'), undefined);
  });

  test('a cross long no positive mark could liquidate: null in the preview and in the position', async () => {
    const { preview, shown } = await play(richTrader, { order: { side: 'buy', type: 'market', quantity: '0.01' }, resting: { side: 'sell', price: '100000', quantity: '0.01' } });
    assertAgrees(preview, shown, 'small long');
    assert.equal(preview.estimatedLiquidationPrice, null);
    assert.equal(preview.estimatedPositionSize, '0.01');
  });

  test('a preview that stops before the order\'s figures are known estimates nothing', async () => {
    const body = { marketId: BTC, side: 'sell', price: '100000', quantity: '0.1', reduceOnly: true, marginMode: 'isolated' };
    const preview = await ok(post(richTrader, '/perps/orders/preview', body), 200);
    assert.deepEqual([preview.approved, preview.reason], [false, 'REDUCE_ONLY_REJECTED']);
    const estimate = [preview.estimatedPositionSize, preview.estimatedEntryPrice, preview.estimatedLiquidationPrice, preview.estimatedLeverage];
    assert.deepEqual(estimate, [null, null, null, null]);
  });
});
