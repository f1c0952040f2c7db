/**
 * The sweep of resting orders past their position's bound (engine.ts `cancelRefusedMakers`) sums
 * an account's reduce-only orders once and shares one bound among the orders of a position where
 * it holds no reduce-only order. Random streams (resting, reduce-only and isolated orders, some at a
 * chosen leverage, from a rich and two poorer accounts, fills, cancels, large index moves) must
 * cancel exactly what the plain walk cancels, asking `admits()` of each order in turn, on a second exchange fed the same
 * commands; and the streams must reach cancellations, or the comparison says nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../exchange.ts';
import { fx } from '../money.ts';
import type { LinearOrder } from './order.ts';
import { PLAIN_ORDER, type OrderRequest } from './order.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const TRADERS = [addr(0xa), addr(0xb), addr(0xc)];
const CASH = ['1000000', '6000', '4000'];
const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : 1;

type Step =
  | { kind: 'place'; who: number; buy: boolean; offset: number; lots: number; ioc: boolean; reduceOnly: boolean; isolated: boolean; eth: boolean }
  | { kind: 'cancel'; who: number; pick: number }
  | { kind: 'index'; eth: boolean; move: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('place' as const),
      who: fc.constantFrom(0, 1, 1, 2, 2),
      buy: fc.boolean(),
      offset: fc.integer({ min: -40, max: 40 }),
      lots: fc.integer({ min: 1, max: 20 }),
      ioc: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      reduceOnly: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
      isolated: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      eth: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), who: fc.integer({ min: 0, max: 2 }), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('index' as const), eth: fc.boolean(), move: fc.integer({ min: -400, max: 400 }) }) },
);

function request(s: Extract<Step, { kind: 'place' }>, btc: number, eth: number): OrderRequest {
  const ref = s.eth ? eth : btc;
  return {
    marketId: s.eth ? 'ETH-PERP' : 'BTC-PERP',
    side: s.buy ? 0 : 1,
    type: 'limit',
    quantity: fx(s.eth ? '0.1' : '0.01') * BigInt(s.lots),
    price: fx(String(ref + s.offset * (s.eth ? 4 : 100))),
    timeInForce: s.ioc ? 'ioc' : 'gtc',
    postOnly: false,
    reduceOnly: s.reduceOnly,
    marginMode: s.isolated ? 'isolated' : 'cross',
    ...PLAIN_ORDER,
    // Every other isolated order chooses a leverage (2x-9x): its fills post more than the tiers' margin.
    ...(s.isolated && s.lots % 2 === 0 ? { leverage: fx(String(2 + (s.lots % 8))) } : {}),
  };
}

/** The sweep as a plain walk: each resting order asked admits() in turn, cancelled if refused. */
function plainSweep(ex: Exchange): void {
  const engine = ex.linear as unknown as { cancelRefusedMakers(id: number): void; cancelOrder(o: LinearOrder, s: 'cancelled'): void };
  engine.cancelRefusedMakers = (accountId) => {
    const account = ex.linear.findAccount(accountId);
    for (const o of [...(account?.orders.values() ?? [])]) {
      if (o.level === null || ex.linear.admits(o)) continue;
      o.rejectReason = 'INSUFFICIENT_MARGIN';
      engine.cancelOrder(o, 'cancelled');
    }
  };
}

/**
 * The sweep skips the opening test of cross orders while MakerChecks.crossOpeningsCovered says
 * the account covers them all: whenever it says so, each of them must pass that test.
 */
function checkCoveredSufficient(ex: Exchange, seen: { covered: number; uncovered: number; refusedOpenings: number }): void {
  for (const trader of TRADERS) {
    const id = ex.accounts.find(trader)?.id;
    const account = id === undefined ? undefined : ex.linear.findAccount(id);
    if (account === undefined || account.orders.size === 0) continue;
    const covered = ex.linear.makers.crossOpeningsCovered(account);
    if (covered) seen.covered++;
    else seen.uncovered++;
    for (const o of account.orders.values()) {
      if (o.level === null || o.request.marginMode !== 'cross') continue;
      const passes = ex.linear.makers.opensWithinEquity(o, account, account.position(o.market, 'cross'), 0n);
      if (!passes) seen.refusedOpenings++;
      assert.ok(passes || !covered, `account ${account.id} said covered, order ${o.id} fails the opening test`);
    }
  }
}

const liveOrders = (ex: Exchange) =>
  TRADERS.map((t) => {
    const id = ex.accounts.find(t)?.id;
    return id === undefined ? [] : [...(ex.linear.findAccount(id)?.orders.keys() ?? [])];
  });

test('the sweep cancels exactly what a plain walk of admits() cancels', () => {
  let swept = 0;
  const seen = { covered: 0, uncovered: 0, refusedOpenings: 0 };
  fc.assert(
    fc.property(fc.array(step, { minLength: 40, maxLength: 160, size: 'max' }), (steps) => {
      const exchanges = [0, 1].map(() => new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 })));
      plainSweep(exchanges[1]!);
      let t = T0;
      let btc = 100_000;
      let eth = 4_000;
      const run = (c: Parameters<Exchange['execute']>[0]) => {
        t++;
        const [fast, plain] = exchanges.map((ex) => ex.execute(c, t));
        assert.deepEqual(fast, plain, `${c.type} at ${t}`);
        if (fast!.ok) swept += fast!.events.filter((e) => e.type === 'order' && e.order.rejectReason === 'INSUFFICIENT_MARGIN' && c.type === 'index.publish').length;
      };
      run({ type: 'index.publish', underlying: 'BTC', price: fx(String(btc)), sourceTs: t + 1 });
      run({ type: 'index.publish', underlying: 'ETH', price: fx(String(eth)), sourceTs: t + 1 });
      TRADERS.forEach((account, i) => {
        const amount = fx(CASH[i]!);
        run({ type: 'chain.deposit_observed', txHash: `0x${i + 1}`, account, amount, confirmations: 1 });
        run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount });
      });
      // Each poorer trader goes long BTC and ETH from the rich one and rests closing sells 1.5-4.5 %
      // under the BTC mark (plain and reduce-only): an ETH fall then moves their BTC bound.
      const order = (who: number, market: 'BTC-PERP' | 'ETH-PERP', buy: boolean, qty: string, price: number, extra: Partial<OrderRequest> = {}) =>
        run({ type: 'perp.place', account: TRADERS[who]!, request: { ...request({ kind: 'place', who, buy, offset: 0, lots: 1, ioc: false, reduceOnly: false, isolated: false, eth: market === 'ETH-PERP' }, btc, eth), quantity: fx(qty), price: fx(String(price)), ...extra } });
      for (const who of [1, 2]) {
        order(0, 'BTC-PERP', false, '0.5', btc);
        order(who, 'BTC-PERP', true, '0.5', btc, { timeInForce: 'ioc' });
        order(0, 'ETH-PERP', false, '10', eth);
        order(who, 'ETH-PERP', true, '10', eth, { timeInForce: 'ioc' });
      }
      for (const who of [1, 2]) {
        for (const [pct, reduceOnly] of [[1.5, false], [2.5, true], [3.5, false], [4.5, true]] as const) {
          order(who, 'BTC-PERP', false, '0.1', btc - (btc * pct) / 100, { reduceOnly });
        }
      }
      for (const s of steps) {
        if (s.kind === 'index') {
          if (s.eth) eth = Math.max(100, eth - Math.round(Math.abs(s.move) / 8)); // ETH only falls, in steps of at most 1.25 %
          else btc = Math.max(1000, btc + s.move); // BTC wanders by at most 0.4 % a step
          run({ type: 'index.publish', underlying: s.eth ? 'ETH' : 'BTC', price: fx(String(s.eth ? eth : btc)), sourceTs: t + 1 });
        } else if (s.kind === 'cancel') {
          const live = liveOrders(exchanges[0]!)[s.who]!;
          if (live.length > 0) run({ type: 'perp.cancel', account: TRADERS[s.who]!, orderId: live[s.pick % live.length]! });
        } else {
          run({ type: 'perp.place', account: TRADERS[s.who]!, request: request(s, btc, eth) });
        }
        assert.deepEqual(liveOrders(exchanges[0]!), liveOrders(exchanges[1]!));
        checkCoveredSufficient(exchanges[0]!, seen);
      }
    }),
    // A fixed seed (SEED overrides it): the coverage asserted below must not depend on luck.
    { numRuns: 500, seed: SEED },
  );
  assert.ok(swept > 0, 'no stream reached a sweep cancellation');
  assert.ok(seen.covered > 0 && seen.uncovered > 0, `crossOpeningsCovered answered one way only: ${JSON.stringify(seen)}`);
  console.log(`# sweep cancellations compared: ${swept}; accounts covered ${seen.covered}, not ${seen.uncovered}; openings refused ${seen.refusedOpenings} (seed ${SEED})`);
});
