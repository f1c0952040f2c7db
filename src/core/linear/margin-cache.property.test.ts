/**
 * The margin gate trusts two caches: each (account, market, mode)'s resting-order totals and the
 * margin computed from them (reused while nothing it depends on changes, and taken from the
 * gate's own probe when an order then rests in full). Random streams of orders of every kind —
 * resting, crossing, ioc and market orders that find no liquidity and are rejected after the gate,
 * orders the gate refuses, reduce-only, isolated (some with a chosen leverage), previews, cancels, amends (accepted, crossing or
 * refused), index moves — must leave both caches equal to a
 * fresh computation after every command (LinearEngine.audit).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../exchange.ts';
import { fx } from '../money.ts';
import type { MarginMode, TimeInForce } from '../records.ts';
import { PLAIN_ORDER, type OrderRequest } from './order.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const TRADERS = [addr(0xa), addr(0xb), addr(0xc)];

type Step =
  | { kind: 'place' | 'preview'; who: number; buy: boolean; offset: number; lots: number; tif: TimeInForce; market: boolean; reduceOnly: boolean; isolated: boolean; leverage: number | null }
  | { kind: 'cancel'; who: number; pick: number }
  | { kind: 'modify'; who: number; pick: number; offset: number | null; lots: number | null }
  | { kind: 'index'; move: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constantFrom('place' as const, 'place' as const, 'place' as const, 'preview' as const),
      who: fc.integer({ min: 0, max: 2 }),
      buy: fc.boolean(),
      offset: fc.integer({ min: -20, max: 20 }),
      lots: fc.integer({ min: 1, max: 40 }),
      tif: fc.constantFrom<TimeInForce>('gtc', 'gtc', 'ioc', 'fok'),
      market: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      reduceOnly: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      isolated: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      leverage: fc.option(fc.integer({ min: 1, max: 60 }), { freq: 2 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('cancel' as const), who: fc.integer({ min: 0, max: 2 }), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('modify' as const),
      who: fc.integer({ min: 0, max: 2 }),
      pick: fc.nat(),
      offset: fc.option(fc.integer({ min: -20, max: 20 })),
      lots: fc.option(fc.integer({ min: 1, max: 60 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('index' as const), move: fc.integer({ min: -300, max: 300 }) }) },
);

function request(s: Extract<Step, { kind: 'place' | 'preview' }>, index: number): OrderRequest {
  const market = s.market;
  const mode: MarginMode = s.isolated ? 'isolated' : 'cross';
  return {
    marketId: 'BTC-PERP',
    side: s.buy ? 0 : 1,
    type: market ? 'market' : 'limit',
    quantity: fx('0.001') * BigInt(s.lots),
    price: market ? null : fx(String(index + s.offset * 10)),
    timeInForce: market ? 'ioc' : s.tif,
    postOnly: false,
    reduceOnly: s.reduceOnly,
    marginMode: mode,
    ...PLAIN_ORDER,
    // An isolated order may choose a leverage (above 50: refused by the tier's maximum).
    ...(s.isolated && s.leverage !== null ? { leverage: fx(String(s.leverage)) } : {}),
  };
}

test('resting totals and cached order margins equal a fresh computation after every command', () => {
  fc.assert(
    fc.property(fc.array(step, { minLength: 30, maxLength: 150, size: 'max' }), (steps) => {
      const ex = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 }));
      let t = T0;
      let index = 100_000;
      const run = (c: Parameters<Exchange['execute']>[0]) => ex.execute(c, ++t);
      run({ type: 'index.publish', underlying: 'BTC', price: fx(String(index)), sourceTs: t + 1 });
      // The third trader is poor, so the gate also rejects orders (after remembering its probe).
      TRADERS.forEach((account, i) => {
        const amount = fx(i === 2 ? '300' : '20000');
        run({ type: 'chain.deposit_observed', txHash: `0x${i + 1}`, account, amount, confirmations: 1 });
        run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount });
      });
      for (const s of steps) {
        if (s.kind === 'index') {
          index += s.move;
          run({ type: 'index.publish', underlying: 'BTC', price: fx(String(index)), sourceTs: t + 1 });
        } else if (s.kind === 'cancel') {
          const account = ex.accounts.find(TRADERS[s.who]!);
          const live = account === undefined ? [] : [...(ex.linear.findAccount(account.id)?.orders.keys() ?? [])];
          if (live.length === 0) continue;
          run({ type: 'perp.cancel', account: TRADERS[s.who]!, orderId: live[s.pick % live.length]! });
        } else if (s.kind === 'modify') {
          const account = ex.accounts.find(TRADERS[s.who]!);
          const live = account === undefined ? [] : [...(ex.linear.findAccount(account.id)?.orders.keys() ?? [])];
          if (live.length === 0) continue;
          run({
            type: 'perp.modify', account: TRADERS[s.who]!, orderId: live[s.pick % live.length]!,
            price: s.offset === null ? null : fx(String(index + s.offset * 10)), quantity: s.lots === null ? null : fx('0.001') * BigInt(s.lots),
          });
        } else if (s.kind === 'preview') {
          ex.previewPerpOrder(TRADERS[s.who]!, request(s, index), t);
        } else {
          run({ type: 'perp.place', account: TRADERS[s.who]!, request: request(s, index) });
        }
        assert.deepEqual(ex.linear.audit(true), []);
      }
    }),
    { numRuns: 60 },
  );
});
