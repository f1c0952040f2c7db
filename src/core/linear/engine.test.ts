/**
 * Unit tests of the linear engine through the exchange core (in-process, no HTTP): realised PnL and
 * entry prices, fees and rebates by tier, the margin gate at its exact edge, reduce-only clipping,
 * trimming and cancelling, take-profit / stop-loss exits (OCO, growth with the parent's fills),
 * stop orders, self-trade prevention, isolated margin, insurance-fund cover of losses beyond the
 * collateral (a price gap through the liquidation backstop, and a fill with no mark) and
 * MARKET_CLOSED.
 *
 * How: each test builds `new Exchange(coreConfig(...))`, funds accounts (deposit observed with one
 * confirmation, then wallet -> perps), publishes a BTC index of 100000 and drives `perp.*`,
 * `index.publish` and `clock.tick` commands at explicit, increasing times. Expected values are
 * computed from the configuration (tiers, fees), never copied from the engine's output.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import { PERP_FEE_TIERS, UNDERLYINGS } from '../../config/markets.ts';
import type { SelfTradePrevention } from '../book/order-book.ts';
import type { ClosePositionRequest, Command } from '../commands.ts';
import { Exchange, type Outcome } from '../exchange.ts';
import { systemAccount } from '../ledger/ledger.ts';
import { formatDecimal, fx, type Fixed } from '../money.ts';
import type { FillRecord, MarginMode, OrderRecord } from '../records.ts';
import type { LinearLimits } from './checks.ts';
import type { PlaceResult } from './engine.ts';
import type { OrderRequest } from './order.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const BTC = 'BTC-PERP';
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];
const d = (v: Fixed | null | undefined) => (v === null || v === undefined ? null : formatDecimal(v));

interface OrderFields {
  side: 'buy' | 'sell';
  qty: string;
  price?: string;
  type?: 'limit' | 'market';
  tif?: 'gtc' | 'ioc' | 'fok';
  postOnly?: boolean;
  reduceOnly?: boolean;
  mode?: MarginMode;
  cid?: string;
  stop?: string;
  tp?: string;
  sl?: string;
  stp?: SelfTradePrevention;
}

function request(o: OrderFields): OrderRequest {
  const type = o.type ?? (o.price === undefined ? 'market' : 'limit');
  return {
    marketId: BTC,
    side: o.side === 'buy' ? 0 : 1,
    type,
    quantity: fx(o.qty),
    price: o.price === undefined ? null : fx(o.price),
    timeInForce: o.tif ?? (type === 'market' ? 'ioc' : 'gtc'),
    postOnly: o.postOnly ?? false,
    reduceOnly: o.reduceOnly ?? false,
    marginMode: o.mode ?? 'cross',
    clientOrderId: o.cid ?? null,
    stopPrice: o.stop === undefined ? null : fx(o.stop),
    takeProfitPrice: o.tp === undefined ? null : fx(o.tp),
    stopLossPrice: o.sl === undefined ? null : fx(o.sl),
    selfTradePrevention: o.stp ?? 'cancel_maker',
    quoteId: null,
  };
}

/** One exchange with a clock that moves 1 ms per command unless told otherwise. */
class Venue {
  readonly ex: Exchange;
  t = T0;
  private txs = 0;

  constructor(indexMaxAgeMs = 3_600_000, limits: Partial<LinearLimits> = {}) {
    const config = coreConfig({ depositConfirmations: 1, indexMaxAgeMs });
    this.ex = new Exchange({ ...config, linear: { ...config.linear, limits: { ...config.linear.limits, ...limits } } });
    this.index('100000');
  }

  run<T extends Command['type']>(command: Extract<Command, { type: T }>): Outcome<unknown> {
    this.t += 1;
    const outcome = this.ex.execute(command, this.t);
    const totals = [...this.ex.ledger.totalsByAsset().values()];
    assert.ok(totals.every((v) => v === 0n), 'ledger sums to zero');
    assert.deepEqual(this.ex.ledger.negativeUserAccounts(), []);
    return outcome as Outcome<unknown>;
  }

  fund(address: string, usdc: string): void {
    const txHash = `0x${(++this.txs).toString(16).padStart(64, '0')}`;
    const amount = fx(usdc);
    ok(this.run({ type: 'chain.deposit_observed', txHash, account: address, amount, confirmations: 1 }));
    ok(this.run({ type: 'wallet.transfer', account: address, from: 'wallet', to: 'perps', amount }));
  }

  index(price: string): void {
    ok(this.run({ type: 'index.publish', underlying: 'BTC', price: fx(price), sourceTs: this.t + 1 }));
  }

  /** Puts money in the insurance fund (from the treasury), as an operator would. */
  seedInsurance(usdc: string): void {
    const treasury = systemAccount('treasury', 'USDC');
    this.ex.ledger.move('insurance_fund', treasury, systemAccount('insurance', 'USDC'), fx(usdc), this.t);
  }

  tick(): Outcome<unknown> {
    return this.run({ type: 'clock.tick' });
  }

  place(address: string, o: OrderFields): Outcome<PlaceResult> {
    return this.run({ type: 'perp.place', account: address, request: request(o) }) as Outcome<PlaceResult>;
  }

  /** Places and expects acceptance. */
  order(address: string, o: OrderFields): PlaceResult {
    return ok(this.place(address, o));
  }

  /** `maker` rests the opposite side at `price`, then `taker` takes it with an ioc limit. */
  trade(taker: string, maker: string, side: 'buy' | 'sell', qty: string, price: string, mode?: MarginMode) {
    this.order(maker, { side: side === 'buy' ? 'sell' : 'buy', qty, price });
    const r = this.order(taker, { side, qty, price, tif: 'ioc', mode: mode ?? 'cross' });
    assert.equal(r.order.status, 'filled');
    return r;
  }

  id(address: string): number {
    return this.ex.accounts.find(address)!.id;
  }

  balance(address: string): string {
    return formatDecimal(this.ex.ledger.userBalance(this.id(address), 'perps', 'USDC'));
  }

  system(name: 'insurance' | 'fees'): string {
    return formatDecimal(this.ex.ledger.balance(systemAccount(name, 'USDC')));
  }

  position(address: string, mode: MarginMode = 'cross') {
    const market = this.ex.linear.markets.get(BTC)!;
    const p = this.ex.linear.findAccount(this.id(address))?.position(market, mode);
    if (p === undefined || p.size === 0) return null;
    return {
      size: d(market.units.size(p.size)),
      entry: d(p.entryPrice()),
      realized: d(p.realizedPnl),
      isolatedMargin: d(p.isolatedMargin),
      status: p.status,
    };
  }

  liveOrders(address: string) {
    return [...(this.ex.linear.findAccount(this.id(address))?.orders.values() ?? [])];
  }
}

function ok<R>(outcome: Outcome<R>): R {
  if (!outcome.ok) assert.fail(`rejected ${outcome.code}: ${outcome.message}`);
  return outcome.result;
}

function rejected(outcome: Outcome<unknown>, code: string): void {
  assert.equal(outcome.ok, false, 'expected a rejection');
  if (!outcome.ok) assert.equal(outcome.code, code, outcome.message);
}

/** The last snapshot of each order the command emitted, by id. */
function orderEvents(outcome: Outcome<unknown>): Map<string, OrderRecord> {
  const out = new Map<string, OrderRecord>();
  if (outcome.ok) for (const e of outcome.events) if (e.type === 'order') out.set(e.order.id, e.order);
  return out;
}

function fillEvents(outcome: Outcome<unknown>): FillRecord[] {
  return outcome.ok ? outcome.events.flatMap((e) => (e.type === 'fill' ? [e.fill] : [])) : [];
}

const bps = (notional: string, rate: Fixed) => formatDecimal((fx(notional) * rate) / fx('10000'));
const TIER0 = PERP_FEE_TIERS[0]!;
const MARKET_CLOSE: ClosePositionRequest = {
  marketId: BTC, marginMode: 'cross', quantity: null, type: 'market', price: null, timeInForce: 'ioc',
};
const BTC_LEVERAGE = UNDERLYINGS.find((u) => u.symbol === 'BTC')!.marginTiers[0]!.maxLeverage;
/** Initial margin of a BTC notional inside the first tier: notional / max leverage (50x => 2 %). */
const im = (notional: string) => formatDecimal(fx(notional) / BigInt(BTC_LEVERAGE));

describe('realised PnL and entry price', () => {
  const cases: {
    name: string;
    trades: ['buy' | 'sell', string, string][];
    size: string | null;
    entry: string | null;
    realized: string;
  }[] = [
    {
      name: 'a partial close realises PnL on the closed part only and keeps the entry price',
      trades: [['buy', '2', '100000'], ['sell', '0.5', '101000']],
      size: '1.5', entry: '100000', realized: '500',
    },
    {
      name: 'a full close realises the whole PnL and leaves no position',
      trades: [['buy', '1', '100000'], ['sell', '1', '99000']],
      size: null, entry: null, realized: '-1000',
    },
    {
      name: 'a flip closes the old side at its entry and opens the rest at the fill price',
      trades: [['buy', '1', '100000'], ['sell', '3', '101000']],
      size: '-2', entry: '101000', realized: '1000',
    },
    {
      name: 'adding to a position averages the entry price by size',
      trades: [['buy', '1', '100000'], ['buy', '3', '101000']],
      size: '4', entry: '100750', realized: '0',
    },
    {
      name: 'a short gains what the price falls: entry minus exit',
      trades: [['sell', '1', '100000'], ['buy', '0.4', '99500']],
      size: '-0.6', entry: '100000', realized: '200',
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const v = new Venue();
      v.fund(A, '100000');
      v.fund(B, '100000');
      let realized = 0n;
      let fees = 0n;
      for (const [side, qty, price] of c.trades) {
        const r = v.trade(A, B, side, qty, price);
        for (const f of r.fills) {
          assert.equal(f.taker.accountId, v.id(A));
          realized += f.taker.realizedPnl;
          fees += f.taker.fee;
        }
      }
      assert.equal(formatDecimal(realized), c.realized, 'realised PnL on the fills');
      const expected = formatDecimal(fx('100000') + realized - fees);
      assert.equal(v.balance(A), expected, 'ledger: deposit + PnL - fees');
      const p = v.position(A);
      assert.equal(p?.size ?? null, c.size);
      assert.equal(p?.entry ?? null, c.entry);
      if (p !== null) assert.equal(p.realized, c.realized, 'realised PnL kept on the position');
    });
  }

  test('a closed short is reported as a short, to both sides of the closing trade', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'sell', '0.5', '100000');
    v.order(B, { side: 'sell', qty: '0.5', price: '100005' });
    const out = v.place(A, { side: 'buy', qty: '0.5', price: '100005', tif: 'ioc' });
    assert.ok(out.ok);
    assert.equal(out.result.position?.status, 'closed');
    // Before: side "long", read off the size, which is zero once closed.
    assert.equal(out.result.position?.side, 'short');
    const makerEvent = out.events.find((e) => e.type === 'position' && e.position.accountId === v.id(B));
    assert.ok(makerEvent?.type === 'position');
    assert.deepEqual([makerEvent.position.side, makerEvent.position.status], ['long', 'closed']);
  });

  test('a position closed and reopened by one sweep reports status open again', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    v.fund(C, '100000');
    v.order(B, { side: 'buy', qty: '1', price: '99900' });
    v.order(C, { side: 'buy', qty: '1', price: '99800' });
    const r = v.order(A, { side: 'sell', qty: '2', price: '99800', tif: 'ioc' });
    assert.equal(r.fills.length, 2);
    const expected = { size: '-1', entry: '99800', realized: '-100', isolatedMargin: '0', status: 'open' };
    assert.deepEqual(v.position(A), expected);
    assert.equal(r.position?.status, 'open');
    assert.equal(r.position?.side, 'short');
  });
});

describe('fees', () => {
  test('at tier 0 the taker pays 5 bps and the maker 1 bps of the notional, both to the fee account', () => {
    const v = new Venue();
    v.fund(A, '10000');
    v.fund(B, '10000');
    const r = v.trade(A, B, 'buy', '0.5', '100000');
    const [fill] = r.fills;
    assert.equal(d(fill!.taker.feeBps), d(TIER0.takerBps));
    assert.equal(d(fill!.maker.feeBps), d(TIER0.makerBps));
    assert.equal(d(fill!.taker.fee), bps('50000', TIER0.takerBps));
    assert.equal(d(fill!.maker.fee), bps('50000', TIER0.makerBps));
    assert.deepEqual([d(fill!.taker.fee), d(fill!.maker.fee)], ['25', '5']);
    assert.equal(v.balance(A), '9975');
    assert.equal(v.balance(B), '9995');
    assert.equal(v.system('fees'), '30');
  });

  test('a maker at a high 30-day volume tier earns a rebate (negative fee) paid by the fee account', () => {
    const v = new Venue();
    const tier = PERP_FEE_TIERS.find((t) => t.makerBps < 0n)!;
    v.fund(A, '5000000');
    v.fund(B, '5000000');
    // 260 BTC at 100000 = 26M each side: both accounts reach the first rebate tier (>= 25M)
    const lots = (tier.min30dVolumeUsd / fx('100000') + 10n).toString();
    v.trade(B, A, 'buy', lots, '100000');
    assert.equal(v.ex.perpFees.tierFor(fx(lots) * 100000n), tier);
    const feesBefore = fx(v.system('fees'));
    const aBefore = fx(v.balance(A));
    const r = v.trade(B, A, 'sell', '1', '100000'); // A (short) bids and is filled as maker
    const fill = r.fills[0]!;
    assert.equal(d(fill.maker.feeBps), d(tier.makerBps));
    assert.equal(d(fill.maker.fee), bps('100000', tier.makerBps));
    assert.equal(d(fill.maker.fee), '-5');
    assert.equal(d(fill.taker.fee), bps('100000', tier.takerBps));
    assert.equal(fx(v.balance(A)) - aBefore, 5n * 10n ** 18n, 'the rebate is credited');
    assert.equal(fx(v.system('fees')) - feesBefore, fx(bps('100000', tier.takerBps)) - 5n * 10n ** 18n);
  });

  test('an order whose fills cross a fee tier boundary pays its previewed rate on every fill', () => {
    const v = new Venue();
    const next = PERP_FEE_TIERS[1]!;
    v.fund(A, '1000000');
    v.fund(B, '1000000');
    v.fund(C, '1000000');
    // A's 30-day volume ends 10,000 short of the next tier; its next order's first fill reaches it
    const short = formatDecimal((next.min30dVolumeUsd - fx('10000')) / 100000n);
    v.trade(A, C, 'buy', short, '100000');
    v.order(B, { side: 'sell', qty: '0.5', price: '100000' });
    v.order(B, { side: 'sell', qty: '0.5', price: '100010' });
    const order: OrderFields = { side: 'buy', qty: '1', type: 'market' };
    const preview = v.ex.previewPerpOrder(A, request(order), v.t + 1);
    assert.equal(preview.feeBps, TIER0.takerBps);
    const r = v.order(A, order);
    assert.equal(r.fills.length, 2);
    for (const f of r.fills) assert.equal(d(f.taker.feeBps), d(TIER0.takerBps), 'the rate the order started with');
    assert.equal(d(r.fills.reduce((sum, f) => sum + f.taker.fee, 0n)), d(preview.plan!.estFee));
    // the next order sees the new tier
    v.order(B, { side: 'sell', qty: '0.1', price: '100000' });
    assert.equal(d(v.order(A, { side: 'buy', qty: '0.1', type: 'market' }).fills[0]!.taker.feeBps), d(next.takerBps));
  });
});

describe('the margin gate', () => {
  const cases: { name: string; funds: string; order: OrderFields; margin: string; approved: boolean }[] = [
    {
      name: 'a post-only bid needing exactly the free collateral is accepted',
      funds: im('100000'), order: { side: 'buy', qty: '1', price: '100000', postOnly: true },
      margin: im('100000'), approved: true,
    },
    {
      name: 'the same bid one step (0.0001 BTC) larger is refused with INSUFFICIENT_MARGIN',
      funds: im('100000'), order: { side: 'buy', qty: '1.0001', price: '100000', postOnly: true },
      margin: im('100010'), approved: false,
    },
    {
      name: 'an order that may take also reserves a taker fee: accepted at exactly margin + fee',
      funds: '2050', order: { side: 'sell', qty: '1', price: '100000' },
      margin: im('100000'), approved: true,
    },
    {
      name: 'and refused one step beyond margin + fee',
      funds: '2050', order: { side: 'sell', qty: '1.0001', price: '100000' },
      margin: im('100010'), approved: false,
    },
    {
      name: 'a bid above the mark reserves its initial margin at the bid price plus the open loss',
      funds: '3070.5', order: { side: 'buy', qty: '1', price: '101000' },
      margin: formatDecimal(fx(im('101000')) + fx('1000')), approved: true,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const v = new Venue();
      v.fund(A, c.funds);
      const preview = v.ex.previewPerpOrder(A, request(c.order), v.t);
      assert.equal(d(preview.plan?.marginRequired), c.margin, 'margin required (IM from the tiers)');
      const outcome = v.place(A, c.order);
      if (c.approved) {
        assert.equal(preview.rejection, null);
        assert.equal(ok(outcome).order.status, 'open');
      } else {
        assert.equal(preview.rejection?.code, 'INSUFFICIENT_MARGIN');
        rejected(outcome, 'INSUFFICIENT_MARGIN');
      }
    });
  }

  test('an order that only reduces the position (at the mark) passes with almost no free collateral', () => {
    const v = new Venue();
    v.fund(A, '2100');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    rejected(v.place(A, { side: 'buy', qty: '0.1', price: '100000' }), 'INSUFFICIENT_MARGIN');
    v.order(B, { side: 'buy', qty: '1', price: '100000' });
    const r = v.order(A, { side: 'sell', qty: '1', price: '100000', tif: 'ioc' });
    assert.equal(r.order.status, 'filled');
  });
});

describe('reduce-only orders', () => {
  test('are rejected when flat or on the side of the position', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    const flat = v.place(A, { side: 'sell', qty: '1', price: '100000', reduceOnly: true });
    rejected(flat, 'REDUCE_ONLY_REJECTED');
    v.trade(A, B, 'buy', '1', '100000');
    rejected(v.place(A, { side: 'buy', qty: '1', price: '99000', reduceOnly: true }), 'REDUCE_ONLY_REJECTED');
  });

  test('a close of a position larger than the largest order closes one maximum order of it', () => {
    const v = new Venue();
    v.fund(A, '1000000000');
    v.fund(B, '1000000000');
    v.trade(A, B, 'buy', '1000', '100000');
    v.trade(A, B, 'buy', '1000', '100000'); // 2,000 BTC: twice BTC-PERP's maximum order
    v.order(B, { side: 'buy', qty: '1000', price: '100000' });
    const out = v.run({ type: 'perp.close', account: A, close: MARKET_CLOSE });
    assert.ok(out.ok, out.ok ? '' : `${out.code} ${out.message}`);
    assert.equal(d((out.result as PlaceResult).order.filledQuantity), '1000');
    assert.equal(v.position(A)?.size, '1000');
  });

  test('larger than the position are clipped to it on entry', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    const r = v.order(A, { side: 'sell', qty: '2', price: '101000', reduceOnly: true });
    assert.equal(d(r.order.quantity), '1');
    assert.equal(r.order.status, 'open');
    assert.equal(v.ex.linear.risk(v.id(A)).orderIM, 0n, 'reduce-only orders reserve no margin');
  });

  test('resting ones are trimmed (in order of entry) as the position shrinks, cancelled at zero', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '2', '100000');
    const first = v.order(A, { side: 'sell', qty: '1.5', price: '102000', reduceOnly: true }).order;
    const second = v.order(A, { side: 'sell', qty: '1.5', price: '101000', reduceOnly: true }).order;
    v.order(B, { side: 'buy', qty: '1', price: '99000' });
    const out = v.place(A, { side: 'sell', qty: '1', price: '99000', tif: 'ioc' });
    const events = orderEvents(out);
    assert.equal(d(events.get(first.id)?.remainingQuantity), '1', 'first trimmed to the position');
    assert.equal(events.get(first.id)?.status, 'open');
    assert.equal(events.get(second.id)?.status, 'cancelled', 'no room left for the second');
    const book = v.ex.linear.markets.get(BTC)!.book;
    assert.equal(book.levelLots(1, 1_020_000), 10_000);
    assert.equal(book.levelLots(1, 1_010_000), 0);
    // B lifts the remaining reduce-only ask: A is flat, nothing of A stays live
    const lift = v.order(B, { side: 'buy', qty: '1', price: '102000', tif: 'ioc' });
    assert.equal(lift.order.status, 'filled');
    assert.equal(v.position(A), null);
    assert.deepEqual(v.liveOrders(A), []);
  });

  test('a flip cancels the resting reduce-only orders of the old side (they would grow the new one)', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.fund(C, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    const ro = v.order(A, { side: 'sell', qty: '1', price: '101000', reduceOnly: true }).order;
    v.order(C, { side: 'buy', qty: '3', price: '99900' });
    const out = v.place(A, { side: 'sell', qty: '3', price: '99900', tif: 'ioc' });
    assert.equal(orderEvents(out).get(ro.id)?.status, 'cancelled');
    assert.equal(v.position(A)?.size, '-2');
    const book = v.ex.linear.markets.get(BTC)!.book;
    assert.equal(book.levelLots(1, 1_010_000), 0, 'no ask left that would increase A\'s short');
    assert.equal(book.orderCount(), 0);
  });

  test('a fill-or-kill order that reduce-only upkeep would starve mid-sweep is refused', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.fund(C, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    v.order(A, { side: 'sell', qty: '1', price: '100010', reduceOnly: true });
    v.order(A, { side: 'sell', qty: '1', price: '100020', reduceOnly: true });
    // the book shows 2 BTC of asks, but filling the first closes A and cancels the second
    rejected(v.place(C, { side: 'buy', qty: '2', price: '100020', tif: 'fok' }), 'FOK_NOT_FILLED');
    const r = v.order(C, { side: 'buy', qty: '1', price: '100020', tif: 'fok' });
    assert.equal(r.order.status, 'filled');
    assert.equal(d(r.order.filledQuantity), '1');
  });
});

describe('take-profit and stop-loss exits', () => {
  /** B rests an ask; A buys `qty` with TP 105000 and SL 95000. */
  function opened(qty = '1') {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.fund(C, '100000');
    v.order(B, { side: 'sell', qty, price: '100000' });
    const r = v.order(A, { side: 'buy', qty, price: '100000', tp: '105000', sl: '95000' });
    const exits = v.liveOrders(A);
    return { v, r, exits };
  }

  test('a filled order gets two untriggered reduce-only exits on the other side, sized to the fill', () => {
    const { exits } = opened('0.7');
    assert.equal(exits.length, 2);
    for (const o of exits) {
      assert.equal(o.status, 'untriggered');
      assert.equal(o.request.reduceOnly, true);
      assert.equal(o.side, 1);
      assert.equal(o.remainingLots, 7000);
    }
    assert.deepEqual(exits.map((o) => d(o.trigger!.price)), ['105000', '95000']);
  });

  test('resting parents owe their exits to the conditional-order limit: filling them never passes it', () => {
    const v = new Venue();
    v.fund(A, '1000000');
    v.fund(B, '1000000');
    const limit = coreConfig({ depositConfirmations: 1 }).linear.limits.maxTriggersPerMarket;
    const parents = limit / 2; // each declares a take-profit and a stop-loss
    for (let i = 0; i < parents; i++) v.order(A, { side: 'buy', qty: '0.01', price: String(99_000 - i), tp: '105000', sl: '90000' });
    rejected(v.place(A, { side: 'buy', qty: '0.01', price: '98000', tp: '105000' }), 'TOO_MANY_OPEN_ORDERS');
    rejected(v.place(A, { side: 'buy', qty: '0.01', price: '98000', stop: '101000' }), 'TOO_MANY_OPEN_ORDERS');
    assert.equal(v.place(A, { side: 'buy', qty: '0.01', price: '98000' }).ok, true, 'a plain order owes no exit');
    v.order(B, { side: 'sell', qty: String(parents / 100), type: 'market' }); // fills every parent
    const untriggered = v.liveOrders(A).filter((o) => o.status === 'untriggered').length;
    assert.equal(untriggered, limit, 'the exits the parents owed, and no more than the limit');
    rejected(v.place(A, { side: 'buy', qty: '0.01', price: '98000', sl: '90000' }), 'TOO_MANY_OPEN_ORDERS');
  });

  test('the take-profit fires when the mark reaches it and cancels its stop-loss sibling (OCO)', () => {
    const { v, exits } = opened();
    v.order(C, { side: 'buy', qty: '1', price: '105000' });
    const out = v.run({ type: 'index.publish', underlying: 'BTC', price: fx('105500'), sourceTs: v.t + 1 });
    const events = orderEvents(out);
    const [tp, sl] = exits.map((o) => events.get(String(o.id)));
    assert.equal(tp?.status, 'filled');
    assert.equal(d(tp?.filledQuantity), '1');
    assert.equal(sl?.status, 'cancelled');
    assert.equal(v.position(A), null);
    assert.equal(fillEvents(out)[0]?.taker.realizedPnl, fx('5000'));
  });

  test('the stop-loss fires on a fall, on the next clock tick after the index moved', () => {
    const { v, exits } = opened();
    v.order(C, { side: 'buy', qty: '1', price: '94000' });
    v.index('94000');
    const [tp, sl] = exits;
    assert.equal(tp?.status, 'cancelled');
    assert.equal(sl?.status, 'filled');
    assert.equal(v.position(A), null);
    assert.equal(v.tick().ok, true);
  });

  test('exits grow with every partial fill of the parent and fire for the whole position', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.fund(C, '100000');
    v.order(A, { side: 'buy', qty: '2', price: '100000', tp: '103000' });
    v.order(B, { side: 'sell', qty: '0.5', price: '100000', tif: 'ioc' });
    v.order(B, { side: 'sell', qty: '1.5', price: '100000', tif: 'ioc' });
    const [tp] = v.liveOrders(A);
    assert.equal(tp?.originalLots, 20_000);
    v.order(C, { side: 'buy', qty: '5', price: '103000' });
    const out = v.run({ type: 'index.publish', underlying: 'BTC', price: fx('103000'), sourceTs: v.t + 1 });
    const fired = orderEvents(out).get(String(tp!.id));
    assert.equal(fired?.status, 'filled');
    assert.equal(d(fired?.filledQuantity), '2');
    assert.equal(v.position(A), null);
  });

  test('both exits are cancelled when the position is closed by hand', () => {
    const { v, exits } = opened();
    v.order(C, { side: 'buy', qty: '1', price: '100000' });
    const out = v.run({
      type: 'perp.close',
      account: A,
      close: MARKET_CLOSE,
    });
    const events = orderEvents(out);
    assert.deepEqual(exits.map((o) => events.get(String(o.id))?.status), ['cancelled', 'cancelled']);
    assert.deepEqual(v.liveOrders(A), []);
  });

  const waitingExits = (v: Venue) =>
    v.liveOrders(A).filter((o) => o.status === 'untriggered').map((o) => ({ trigger: d(o.trigger!.price), lots: o.remainingLots }));

  test('an order that closes a short in several fills, then opens a long, protects only the long', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'sell', '1', '100000'); // A short 1
    v.order(B, { side: 'sell', qty: '0.5', price: '100000' });
    v.order(B, { side: 'sell', qty: '0.5', price: '100010' });
    v.order(B, { side: 'sell', qty: '1', price: '100020' });
    v.order(A, { side: 'buy', qty: '2', price: '100100', tif: 'ioc', tp: '110000', sl: '95000' });
    assert.equal(v.position(A)?.size, '1');
    assert.deepEqual(waitingExits(v), [{ trigger: '110000', lots: 10000 }, { trigger: '95000', lots: 10000 }]);
    assert.deepEqual(v.ex.linear.audit(true), []);
  });

  test('a resting parent whose position was closed between its fills protects what its next fill opens', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.order(A, { side: 'buy', qty: '2', price: '99990', tp: '110000', sl: '95000' });
    v.order(B, { side: 'sell', qty: '1', price: '99990', tif: 'ioc' });
    assert.equal(waitingExits(v).length, 2);
    v.order(B, { side: 'buy', qty: '1', price: '99995' });
    ok(v.run({ type: 'perp.close', account: A, close: MARKET_CLOSE }));
    assert.deepEqual(waitingExits(v), [], 'the close cancelled them');
    assert.deepEqual(v.ex.linear.audit(true), [], 'the live parent counts its exits as pending again');
    v.order(B, { side: 'sell', qty: '0.4', price: '99990', tif: 'ioc' });
    assert.equal(v.position(A)?.size, '0.4');
    assert.deepEqual(waitingExits(v), [{ trigger: '110000', lots: 4000 }, { trigger: '95000', lots: 4000 }]);
    v.order(B, { side: 'sell', qty: '0.6', price: '99990', tif: 'ioc' });
    assert.deepEqual(waitingExits(v), [{ trigger: '110000', lots: 10000 }, { trigger: '95000', lots: 10000 }]);
    assert.deepEqual(v.ex.linear.audit(true), []);
  });
});

describe('stop orders', () => {
  test('a stop market order waits untriggered, then fires and fills when the mark crosses its price', () => {
    const v = new Venue();
    v.fund(A, '100000');
    v.fund(B, '100000');
    const stop = v.order(A, { side: 'buy', qty: '1', stop: '101000', tif: 'ioc' });
    assert.equal(stop.order.status, 'untriggered');
    v.order(B, { side: 'sell', qty: '1', price: '101500' });
    assert.equal(v.liveOrders(A)[0]?.status, 'untriggered', 'not before the mark gets there');
    const out = v.run({ type: 'index.publish', underlying: 'BTC', price: fx('101000'), sourceTs: v.t + 1 });
    const fired = orderEvents(out).get(stop.order.id);
    assert.equal(fired?.status, 'filled');
    assert.equal(d(fired?.avgFillPrice), '101500');
    assert.equal(v.position(A)?.size, '1');
  });

  test('a stop limit order fires and rests as an open order', () => {
    const v = new Venue();
    v.fund(A, '100000');
    const stop = v.order(A, { side: 'sell', qty: '1', price: '98500', stop: '99000' });
    assert.equal(stop.order.status, 'untriggered');
    const out = v.run({ type: 'index.publish', underlying: 'BTC', price: fx('98900'), sourceTs: v.t + 1 });
    assert.equal(orderEvents(out).get(stop.order.id)?.status, 'open');
    assert.equal(v.ex.linear.markets.get(BTC)!.book.levelLots(1, 985_000), 10_000);
  });

  test('a stop failing its margin check as it fires is cancelled, rejectReason INSUFFICIENT_MARGIN', () => {
    const v = new Venue();
    v.fund(A, '2200');
    v.fund(B, '100000');
    const stop = v.order(A, { side: 'buy', qty: '1', stop: '101000', tif: 'ioc' });
    ok(v.run({ type: 'wallet.transfer', account: A, from: 'perps', to: 'wallet', amount: fx('2000') }));
    v.order(B, { side: 'sell', qty: '1', price: '101000' });
    const out = v.run({ type: 'index.publish', underlying: 'BTC', price: fx('101000'), sourceTs: v.t + 1 });
    const fired = orderEvents(out).get(stop.order.id);
    assert.equal(fired?.status, 'cancelled');
    assert.equal(fired?.rejectReason, 'INSUFFICIENT_MARGIN');
    assert.equal(fillEvents(out).length, 0);
    assert.equal(v.position(A), null);
  });
});

describe('self-trade prevention', () => {
  type Case = { stp: SelfTradePrevention; fills: number; ownAsk: string; taker: string; takerFilled: string };
  const cases: Case[] = [
    { stp: 'cancel_maker', fills: 1, ownAsk: 'cancelled', taker: 'open', takerFilled: '1' },
    { stp: 'cancel_taker', fills: 0, ownAsk: 'open', taker: 'cancelled', takerFilled: '0' },
    { stp: 'cancel_both', fills: 0, ownAsk: 'cancelled', taker: 'cancelled', takerFilled: '0' },
  ];
  for (const c of cases) {
    test(`${c.stp}: own resting ask ${c.ownAsk}, taker ${c.taker} with ${c.takerFilled} filled`, () => {
      const v = new Venue();
      v.fund(A, '100000');
      v.fund(B, '100000');
      const own = v.order(A, { side: 'sell', qty: '1', price: '100000' }).order;
      const other = v.order(B, { side: 'sell', qty: '1', price: '100010' }).order;
      const out = v.place(A, { side: 'buy', qty: '2', price: '100010', stp: c.stp });
      const r = ok(out);
      assert.equal(r.fills.length, c.fills);
      if (c.fills > 0) assert.equal(r.fills[0]!.maker.orderId, other.id, 'matched the other account only');
      const events = orderEvents(out);
      assert.equal(events.get(own.id)?.status ?? 'open', c.ownAsk);
      assert.equal(r.order.status, c.taker);
      assert.equal(d(r.order.filledQuantity), c.takerFilled);
      v.ex.linear.markets.get(BTC)!.book.checkInvariants();
    });
  }

  test('the preview of an immediate order sweeps as its mode makes the match: cancel_taker stops at its own order', () => {
    for (const stp of ['cancel_maker', 'cancel_taker', 'cancel_both'] as const) {
      const v = new Venue();
      v.fund(A, '1000000');
      v.fund(B, '1000000');
      v.order(B, { side: 'sell', qty: '1', price: '100000' });
      v.order(A, { side: 'sell', qty: '1', price: '100010' });
      v.order(B, { side: 'sell', qty: '1', price: '100020' });
      const order: OrderFields = { side: 'buy', qty: '3', type: 'market', stp };
      const preview = v.ex.previewPerpOrder(A, request(order), v.t + 1);
      const r = v.order(A, order);
      const notional = r.fills.reduce((sum, f) => sum + (f.price * f.quantity) / fx('1'), 0n);
      assert.equal(d(preview.plan!.notional), d(notional), stp);
      assert.equal(d(preview.plan!.estFee), d(r.fills.reduce((sum, f) => sum + f.taker.fee, 0n)), stp);
    }
  });
});

describe('isolated margin', () => {
  test('a fill allocates its initial margin out of the cross pool; a close releases its share and its PnL', () => {
    const v = new Venue();
    v.fund(A, '10000');
    v.fund(B, '100000');
    const freeBefore = v.ex.linear.risk(v.id(A)).free;
    v.trade(A, B, 'buy', '2', '100000', 'isolated');
    // the position starts with its whole initial margin: the opening taker fee (100) came out of
    // the cross pool, which the margin gate checked for it
    const allocated = fx(im('200000'));
    assert.equal(v.position(A, 'isolated')?.isolatedMargin, formatDecimal(allocated));
    assert.equal(v.position(A), null, 'no cross position');
    const risk = v.ex.linear.risk(v.id(A));
    assert.equal(risk.isolatedAllocated, allocated);
    assert.equal(freeBefore - risk.free, allocated + fx('100'), 'the cross pool gave the initial margin and the fee');
    // half closed at +1000: the closing taker fee (50.5) comes out of the allocation first, then
    // the closed half's share of what is left and its PnL return to the cross pool
    v.trade(A, B, 'sell', '1', '101000', 'isolated');
    const kept = formatDecimal((allocated - fx('50.5')) / 2n);
    assert.equal(v.position(A, 'isolated')?.isolatedMargin, kept);
    v.trade(A, B, 'sell', '1', '101000', 'isolated');
    assert.equal(v.position(A, 'isolated'), null);
    assert.equal(v.ex.linear.risk(v.id(A)).isolatedAllocated, 0n, 'everything released');
  });

  test('a position built in many fills is allocated the tiered initial margin of its whole size, as one fill of it is', () => {
    // 80 BTC at 100000 is 8M of notional: past the 50x tier's end (2M), in the 20x one. Each 1 BTC
    // fill on its own sits in the 50x tier; the allocation must follow the position's tier.
    const allocation = (fills: number, each: string) => {
      const v = new Venue();
      v.fund(A, '3000000');
      v.fund(B, '3000000');
      for (let i = 0; i < fills; i++) v.trade(A, B, 'buy', each, '100000', 'isolated');
      const market = v.ex.linear.markets.get(BTC)!;
      const p = v.ex.linear.findAccount(v.id(A))!.position(market, 'isolated')!;
      return { v, margin: p.isolatedMargin, im: market.margin.initial(p.notional(fx('100000'))) };
    };
    const one = allocation(1, '80');
    const many = allocation(80, '1');
    assert.equal(one.margin, one.im);
    assert.equal(many.margin, one.im, 'eighty fills of 1 BTC allocate what one of 80 does');
    // and an unchanged index does not liquidate it
    many.v.index('100000');
    many.v.tick();
    assert.equal(many.v.position(A, 'isolated')?.size, '80');
    assert.equal(many.v.position(A, 'isolated')?.status, 'open');
  });

  test('an opening maker fee the cross pool does not hold comes out of the allocation (a post-only order reserves none)', () => {
    const v = new Venue();
    v.fund(A, im('100000')); // exactly the initial margin of 1 BTC, nothing for a fee
    v.fund(B, '100000');
    v.order(A, { side: 'buy', qty: '1', price: '100000', postOnly: true, mode: 'isolated' });
    v.order(B, { side: 'sell', qty: '1', price: '100000', tif: 'ioc' });
    const makerFee = fx(bps('100000', TIER0.makerBps));
    assert.ok(makerFee > 0n);
    const risk = v.ex.linear.risk(v.id(A));
    assert.equal(risk.balance, fx(im('100000')) - makerFee);
    assert.equal(risk.balance - risk.isolatedAllocated, 0n, 'the cross cash is not negative');
    assert.equal(v.position(A, 'isolated')?.isolatedMargin, d(fx(im('100000')) - makerFee));
  });

  test('a gap beyond the isolated margin: the fund takes the position, A loses only its margin', () => {
    const v = new Venue();
    v.seedInsurance('50000');
    v.fund(A, '10000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000', 'isolated');
    const margin = fx(im('100000')); // the opening taker fee came out of the cross pool
    const before = fx(v.balance(A));
    v.order(B, { side: 'buy', qty: '1', price: '90000' });
    v.index('95000'); // liquidated: the bid (90000) is past bankruptcy, so the fund backstops
    assert.equal(v.position(A, 'isolated'), null);
    assert.equal(fx(v.balance(A)), before - margin, 'A loses its isolated margin, not the 5000 loss');
    assert.equal(fx(v.system('insurance')), fx('50000') - (fx('5000') - margin), 'the fund paid the excess');
    assert.equal(v.ex.linear.risk(v.id(A)).isolatedAllocated, 0n);
  });

  test('a user close of an isolated position (no mark) trades no further than its bankruptcy price', () => {
    const v = new Venue(10_000);
    v.seedInsurance('50000');
    v.fund(A, '10000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000', 'isolated');
    const margin = fx(im('100000')); // the opening taker fee came out of the cross pool
    const before = fx(v.balance(A));
    v.order(B, { side: 'buy', qty: '1', price: '95000' });
    v.t += 20_000; // the index is stale: no mark, no liquidation; reduce-only orders still trade
    // The bid is past the bound: the bankruptcy price (100 000 − 2 000 of margin) plus the fee set
    // aside for closing (the taker rate on the position's value grown by the band: 52.5): a fill
    // there would lose 3 000 more than the position holds, the fund's money and B's gain.
    const refused = v.run({ type: 'perp.place', account: A, request: request({ side: 'sell', qty: '1', reduceOnly: true, mode: 'isolated' }) });
    assert.equal(refused.ok ? 'accepted' : refused.code, 'NO_LIQUIDITY');
    const resting = v.run({ type: 'perp.place', account: A, request: request({ side: 'sell', qty: '1', price: '97000', reduceOnly: true, mode: 'isolated' }) });
    assert.equal(resting.ok ? 'accepted' : resting.code, 'INSUFFICIENT_MARGIN', 'a resting close may not be priced past it');
    v.order(B, { side: 'buy', qty: '1', price: '98050', reduceOnly: true }); // within a tick of the bound 98 052.5: still past it
    assert.equal(v.run({ type: 'perp.place', account: A, request: request({ side: 'sell', qty: '1', reduceOnly: true, mode: 'isolated' }) }).ok, false);
    v.order(B, { side: 'buy', qty: '1', price: '98060', reduceOnly: true });
    v.order(A, { side: 'sell', qty: '1', reduceOnly: true, mode: 'isolated' });
    assert.equal(v.position(A, 'isolated'), null, 'closed inside the bound');
    const closingFee = fx(bps('98060', TIER0.takerBps));
    assert.equal(fx(v.balance(A)), before - fx('1940') - closingFee, 'A pays the loss and the fee, within its margin');
    assert.ok(fx('1940') + closingFee <= margin);
    assert.equal(fx(v.system('insurance')), fx('50000'), 'the fund paid nothing, not even the fee');
  });
});

describe('insurance fund', () => {
  test('a price gap beyond the balance: the fund takes the position at the mark and pays the deficit', () => {
    const v = new Venue();
    v.seedInsurance('50000');
    v.fund(A, '2100');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    assert.equal(v.balance(A), '2050');
    v.order(B, { side: 'buy', qty: '1', price: '85000' });
    v.index('90000');
    assert.equal(d(v.ex.linear.markets.get(BTC)!.mark), '90000');
    assert.equal(v.position(A), null, 'liquidated');
    assert.equal(v.balance(A), '0', 'the bucket ends at zero, never below');
    const deficit = fx('10000') - fx('2050');
    assert.equal(fx(v.system('insurance')), fx('50000') - deficit, 'the fund paid exactly the deficit');
  });

  test('a user close (no mark) trades no further than the account\'s bankruptcy price', () => {
    const v = new Venue(10_000);
    v.seedInsurance('50000');
    v.fund(A, '2100');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    v.order(B, { side: 'buy', qty: '1', price: '94000' });
    v.order(B, { side: 'buy', qty: '1', price: '95000' });
    v.t += 20_000; // stale index: no mark, so no liquidation
    // A reduce-only limit beyond the band around the last mark (100000 - 5 %) is refused; a market
    // close would sweep to the band edge, but no further than the bankruptcy price (100 000 − the
    // 2 050 of equity = 97 950) plus the fee set aside for closing (52.5): the bids past it are the
    // fund's money and B's gain.
    const beyond = v.run({ type: 'perp.close', account: A, close: { ...MARKET_CLOSE, type: 'limit', price: fx('94000') } });
    assert.equal(beyond.ok ? 'accepted' : beyond.code, 'PRICE_OUT_OF_BAND');
    const bounded = v.run({ type: 'perp.close', account: A, close: MARKET_CLOSE });
    assert.equal(bounded.ok ? 'accepted' : bounded.code, 'NO_LIQUIDITY');
    v.order(B, { side: 'buy', qty: '1', price: '98010', reduceOnly: true }); // B closes its short inside the bound 98 002.5
    const out = v.run({ type: 'perp.close', account: A, close: MARKET_CLOSE });
    assert.equal(fillEvents(out)[0]?.taker.realizedPnl, fx('-1990'));
    assert.equal(v.balance(A), '10.995', 'the equity paid the loss (1 990) and the fee (49.005)');
    assert.equal(fx(v.system('insurance')), fx('50000'), 'the fund paid nothing');
  });
});

describe('MARKET_CLOSED when the index is stale', () => {
  test('non-reduce-only orders are refused and reduce-only ones still close the position', () => {
    const v = new Venue(10_000);
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.trade(A, B, 'buy', '1', '100000');
    v.order(B, { side: 'buy', qty: '1', price: '99000' });
    v.t += 20_000;
    assert.equal(v.ex.linear.markAt(v.ex.linear.markets.get(BTC)!, v.t + 1), null, 'no mark');
    rejected(v.place(A, { side: 'buy', qty: '0.1', price: '99000' }), 'MARKET_CLOSED');
    rejected(v.place(B, { side: 'sell', qty: '0.1', price: '101000' }), 'MARKET_CLOSED');
    rejected(v.place(A, { side: 'sell', qty: '0.1', stop: '90000', tif: 'ioc' }), 'MARKET_CLOSED');
    const r = v.order(A, { side: 'sell', qty: '0.4', reduceOnly: true });
    assert.equal(r.order.status, 'filled');
    const closed = ok(v.run({
      type: 'perp.close',
      account: A,
      close: { ...MARKET_CLOSE, type: 'limit', price: fx('99000') },
    }) as Outcome<PlaceResult>);
    assert.equal(closed.order.status, 'filled');
    assert.equal(v.position(A), null);
    v.index('100000');
    const reopened = v.place(A, { side: 'buy', qty: '0.1', price: '99000' });
    assert.equal(reopened.ok, true, 'open again with a fresh index');
  });
});

describe('open-order limits', () => {
  test('at the per-account limit an order that cannot rest still passes (a close); one that rests or leaves exits does not', () => {
    const v = new Venue(3_600_000, { maxOpenOrdersPerAccount: 3 });
    v.fund(A, '100000');
    v.fund(B, '100000');
    v.order(B, { side: 'sell', qty: '0.2', price: '100000' });
    v.order(A, { side: 'buy', qty: '0.1', price: '100000', tif: 'ioc' }); // A long 0.1; B's rest stays
    for (const price of ['99000', '98900', '98800']) v.order(A, { side: 'buy', qty: '0.01', price });
    rejected(v.place(A, { side: 'buy', qty: '0.01', price: '98700' }), 'TOO_MANY_OPEN_ORDERS');
    rejected(v.place(A, { side: 'buy', qty: '0.01', type: 'market', tp: '110000' }), 'TOO_MANY_OPEN_ORDERS');
    const opening = v.place(A, { side: 'buy', qty: '0.01', type: 'market' });
    assert.equal(opening.ok, true, 'an ioc leaves nothing behind');
    v.order(B, { side: 'buy', qty: '0.11', price: '99500' });
    const close = v.place(A, { side: 'sell', qty: '0.11', type: 'market', reduceOnly: true });
    assert.equal(close.ok && close.result.order.status, 'filled', 'the account closes its position at the limit');
  });
});

describe('cancel', () => {
  test('the result is the record the order event carries: cancelled, nothing remaining', () => {
    const v = new Venue();
    v.fund(A, '100000');
    const placed = v.order(A, { side: 'buy', qty: '0.1', price: '99000' });
    const out = v.run({ type: 'perp.cancel', account: A, orderId: Number(placed.order.id) }) as Outcome<OrderRecord>;
    const result = ok(out);
    assert.equal(result.status, 'cancelled');
    assert.equal(d(result.remainingQuantity), '0');
    assert.equal(orderEvents(out).get(placed.order.id), result, 'one record for the result and the event');
    rejected(v.run({ type: 'perp.cancel', account: A, orderId: Number(placed.order.id) }), 'NOT_FOUND');
  });
});

describe('client order ids', () => {
  test('an ended order keeps its id for the retention period; the hourly prune then forgets it', () => {
    const v = new Venue();
    v.fund(A, '100000');
    const retention = coreConfig({ depositConfirmations: 1 }).linear.limits.clientIdRetentionMs;
    const cids = ['a-1', 'a-2', 'a-3'];
    for (const cid of cids) {
      const placed = v.order(A, { side: 'buy', qty: '0.1', price: '99000', cid });
      ok(v.run({ type: 'perp.cancel', account: A, orderId: Number(placed.order.id) }));
    }
    const ids = () => v.ex.linear.findAccount(v.id(A))!.clientIds.size;
    rejected(v.place(A, { side: 'buy', qty: '0.1', price: '99000', cid: 'a-1' }), 'DUPLICATE_CLIENT_ORDER_ID');
    v.t += retention - 10_000;
    v.tick();
    assert.equal(ids(), 3, 'still within the retention period: kept');
    v.t += 3_600_000;
    v.index('100000');
    v.tick();
    assert.equal(ids(), 0, 'pruned once the retention passed, without being used again');
    assert.equal(v.place(A, { side: 'buy', qty: '0.1', price: '99000', cid: 'a-1' }).ok, true, 'the id is free again');
  });
});
