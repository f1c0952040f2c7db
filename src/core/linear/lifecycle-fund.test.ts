/**
 * The insurance fund as an account that must be able to carry what it holds (lifecycle.ts
 * `backstop`, `deleverageFund`; research/mechanics.md 1.7 (4)–(5)), found by the lifecycle
 * simulation (test/sim/lifecycle.sim.test.ts), where a fund judged by its cash alone kept taking
 * positions through a crash and ended tens of thousands of USDC below zero:
 *   - the fund takes a position over only if its equity (cash + unrealised PnL of what it holds),
 *     after paying the deficit, covers the maintenance margin of everything it would hold;
 *     otherwise the position is deleveraged at its bankruptcy price;
 *   - a fund below maintenance on what it holds is deleveraged itself: at the mark while its equity
 *     is positive, at the price where its equity is zero when it is not;
 *   - what the fund pays for an isolated shortfall is whole USDC units (isolated margin is exact
 *     to 18 digits; the ledger is in the asset's units).
 * After every command: the ledger sums to zero per asset and no user bucket is negative.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import type { Command } from '../commands.ts';
import type { ExchangeEvent } from '../events.ts';
import { Exchange } from '../exchange.ts';
import { systemAccount, type LedgerEntry } from '../ledger/ledger.ts';
import { formatDecimal, fx, type Fixed } from '../money.ts';
import { FUND_ACCOUNT } from './lifecycle.ts';
import type { MarginMode } from '../records.ts';
import type { OrderRequest } from './order.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const INSURANCE = systemAccount('insurance', 'USDC');

class World {
  readonly ex = new Exchange(coreConfig({
    depositConfirmations: 1, indexMaxAgeMs: 3 * HOUR, fundingIntervalMs: HOUR,
  }));
  now = T0;
  readonly entries: LedgerEntry[] = [];
  /** Trades the venue made outside the book against someone other than the fund (ADL). */
  readonly adl: { price: Fixed; from: number; to: number }[] = [];

  /** Applies `c` (it must be accepted), checks the ledger, and returns its events. */
  run(c: Command) {
    this.now += 1000;
    const out = this.ex.execute(c, this.now);
    for (const [asset, sum] of this.ex.ledger.totalsByAsset()) assert.equal(sum, 0n, `unbalanced ${asset}`);
    assert.deepEqual(this.ex.ledger.negativeUserAccounts(), []);
    assert.ok(out.ok, `command ${c.type} refused: ${!out.ok ? `${out.code} ${out.message}` : ''}`);
    for (const e of out.events) {
      if (e.type === 'ledger') this.entries.push(e.entry);
      if (e.type !== 'fill') continue;
      const { maker, taker, price } = e.fill;
      if (maker.orderId === '0' && maker.accountId !== FUND_ACCOUNT) {
        this.adl.push({ price, from: taker.accountId, to: maker.accountId });
      }
    }
    return out.ok ? out.events : [];
  }

  seedFund(amount: string) {
    this.ex.ledger.move('insurance_fund', systemAccount('treasury', 'USDC'), INSURANCE, fx(amount), this.now);
  }

  fund(n: number, perps: string) {
    const account = addr(n);
    const amount = fx(perps);
    this.run({ type: 'chain.deposit_observed', txHash: `0xd${n}`, account, amount, confirmations: 1 });
    this.run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount });
  }

  index(price: string, underlying = 'BTC') {
    return this.run({ type: 'index.publish', underlying, price: fx(price), sourceTs: this.now + 1000 });
  }

  tick() {
    this.run({ type: 'clock.tick' });
  }

  request(side: 'buy' | 'sell', qty: string, price: string | null, mode: MarginMode = 'cross', marketId = 'BTC-PERP', extra: Partial<OrderRequest> = {}): OrderRequest {
    return {
      marketId, side: side === 'buy' ? 0 : 1, type: price === null ? 'market' : 'limit',
      quantity: fx(qty), price: price === null ? null : fx(price),
      timeInForce: price === null ? 'ioc' : 'gtc',
      postOnly: false, reduceOnly: false, marginMode: mode, clientOrderId: null, stopPrice: null,
      takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null, ...extra,
    };
  }

  order(n: number, side: 'buy' | 'sell', qty: string, price: string | null, mode: MarginMode = 'cross', marketId = 'BTC-PERP', extra: Partial<OrderRequest> = {}) {
    this.run({ type: 'perp.place', account: addr(n), request: this.request(side, qty, price, mode, marketId, extra) });
  }

  /** The refusal code of an order (null when it was accepted); a refused order changes nothing. */
  refusal(n: number, request: OrderRequest): string | null {
    this.now += 1000;
    const out = this.ex.execute({ type: 'perp.place', account: addr(n), request }, this.now);
    if (out.ok) for (const e of out.events) if (e.type === 'ledger') this.entries.push(e.entry);
    return out.ok ? null : out.code;
  }

  position(n: number, mode: MarginMode, marketId = 'BTC-PERP') {
    return this.ex.linear.findAccount(this.id(n))?.position(this.ex.linear.markets.get(marketId)!, mode);
  }

  /** The perps bucket less the isolated allocations in it. */
  crossCash(n: number): Fixed {
    const r = this.ex.linear.risk(this.id(n));
    return r.balance - r.isolatedAllocated;
  }

  /** What the fund paid into user accounts since `entries` was last cleared. */
  fundPaid(): Fixed {
    return this.entries.filter((e) => e.type === 'insurance_fund' && e.account.kind === 'user').reduce((sum, e) => sum + e.amount, 0n);
  }

  id(n: number): number {
    return this.ex.accounts.find(addr(n))!.id;
  }

  size(n: number): number {
    const market = this.ex.linear.markets.get('BTC-PERP')!;
    return this.ex.linear.findAccount(this.id(n))?.position(market, 'cross')?.size ?? 0;
  }

  fundHeld(marketId = 'BTC-PERP'): number {
    const market = this.ex.linear.markets.get(marketId)!;
    return this.ex.linear.findAccount(FUND_ACCOUNT)?.position(market, 'cross')?.size ?? 0;
  }

  cash(): Fixed {
    return this.ex.ledger.balance(INSURANCE);
  }

  perps(n: number): Fixed {
    return this.ex.ledger.userBalance(this.id(n), 'perps', 'USDC');
  }
}

/** BTC at 100 000, a 10 000 fund, account 1 holding `cash` and account 2 a million. */
function btcMarket(cash: string): World {
  const w = new World();
  w.seedFund('10000');
  w.index('100000');
  w.fund(1, cash);
  w.fund(2, '1000000');
  return w;
}

/** BTC at 100 000 and ETH at 4 000, a 10 000 fund, account 1 holding `cash` and account 2 a million. */
function twoMarkets(cash: string): World {
  const w = new World();
  w.seedFund('10000');
  w.index('100000');
  w.index('4000', 'ETH');
  w.fund(1, cash);
  w.fund(2, '1000000');
  return w;
}

/** Account 2 sells `lots` BTC to each of `longs` at 100 000; each long posts `collateral`. */
function longs(w: World, collateral: Record<number, string>) {
  w.index('100000');
  w.fund(2, '1000000');
  for (const [n, cash] of Object.entries(collateral)) {
    w.fund(Number(n), cash);
    w.order(2, 'sell', '1', '100000');
    w.order(Number(n), 'buy', '1', null);
  }
}

describe('the fund takes over only what it can carry', () => {
  test('an empty fund does not take a position over: it is deleveraged at its bankruptcy price', () => {
    const w = new World();
    longs(w, { 1: '3000' });
    // Mark 97 700: equity 2 950 − 2 300 = 650 < 2/3 of maintenance 977, no bids. Before the fix
    // the empty fund took the long (no deficit to pay) and lost 7 745 when the price fell on.
    w.index('97700');
    assert.equal(w.size(1), 0);
    assert.equal(w.fundHeld(), 0, 'the fund holds nothing');
    assert.equal(w.adl.length, 1);
    assert.equal(w.adl[0]!.price, fx('97050'), 'bankruptcy price: (100 000 − 2 950) per BTC');
    assert.equal(w.size(2), 0, 'the short it faced was reduced');
    w.index('90000');
    w.tick();
    assert.equal(w.cash(), 0n, 'the fund neither gained nor lost');
  });

  test('a fund sitting on losses takes nothing more, whatever its cash', () => {
    const w = new World();
    w.seedFund('3000');
    longs(w, { 1: '3000', 3: '4500' });
    w.index('97700'); // account 1 is taken over: fund equity 3 000 ≥ maintenance 977
    assert.equal(w.fundHeld(), 10_000);
    assert.equal(w.size(3), 10_000);
    // Mark 96 000: account 3 (equity 450, severe). The fund has 3 000 of cash but an unrealised
    // loss of 1 700: equity 1 300 < maintenance 960 + 960 of both positions ⇒ deleveraged.
    w.index('96000');
    assert.equal(w.size(3), 0);
    assert.equal(w.fundHeld(), 10_000, 'the fund did not take the second long');
    assert.deepEqual(w.adl.map((a) => [a.from, a.to]), [[w.id(3), w.id(2)]]);
    assert.equal(w.cash(), fx('3000'));
  });
});

describe('deleveraging against the account\'s own opposite position', () => {
  test('a bankrupt cross long whose only counterparty is its own isolated short is closed against it', () => {
    const w = new World(); // an empty fund
    w.index('100000');
    w.fund(1, '5000');
    w.fund(2, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // cross long, fee 50
    w.order(2, 'buy', '1', '100000');
    w.order(1, 'sell', '1', null, 'isolated'); // isolated short 2 000, fee 50: account 2 is flat
    const long = w.position(1, 'cross')!;
    const short = w.position(1, 'isolated')!;
    w.entries.length = 0;
    w.index('96000'); // the long: 2 900 of cross cash, 4 000 down
    // Before: deleverage skipped the account's own short, closed nothing and still marked the long
    // liquidated; its loss grew unrealised and the ladder ran again on every tick.
    assert.deepEqual([long.size, long.status, short.size], [0, 'liquidated', 0]);
    // Netted at the bankruptcy price, 100 000 − 2 900: the long loses its cross cash, the short
    // gains as much. No fill: a fill has one side per account.
    assert.deepEqual([long.realizedPnl, short.realizedPnl], [-fx('2900'), fx('2900')]);
    assert.deepEqual(w.adl, []);
    assert.equal(w.fundPaid(), 0n);
    assert.equal(w.cash(), 0n);
    assert.equal(w.perps(1), fx('4900'), 'the account lost only its fees: the two positions netted');
  });
});

describe('a fund below maintenance on what it holds is deleveraged', () => {
  test('at the mark while its equity is positive', () => {
    const w = new World();
    w.seedFund('1500');
    longs(w, { 1: '3000' });
    w.index('97700');
    assert.equal(w.fundHeld(), 10_000, 'taken over at 97 700');
    w.index('97000'); // fund equity 1 500 − 700 = 800 < maintenance 970
    w.tick();
    assert.equal(w.fundHeld(), 0);
    assert.deepEqual(w.adl.map((a) => a.price), [fx('97000')], 'closed at the mark');
    assert.equal(w.cash(), fx('800'), 'the fund keeps its equity');
    assert.equal(w.size(2), 0);
  });

  test('at the price where its equity is zero when the market gapped through it', () => {
    const w = new World();
    w.seedFund('1000');
    longs(w, { 1: '3000' });
    w.index('97700');
    assert.equal(w.fundHeld(), 10_000);
    w.index('95000'); // fund equity 1 000 − 2 700 = −1 700
    w.tick();
    assert.equal(w.fundHeld(), 0);
    assert.deepEqual(w.adl.map((a) => a.price), [fx('96700')], '95 000 + 1 700: the short absorbs the gap');
    assert.equal(w.cash(), 0n, 'the fund ends at zero, not below');
  });
});

describe('shortfall payments', () => {
  test('what the fund pays for an isolated shortfall is whole USDC units', () => {
    const w = new World();
    w.seedFund('10');
    w.index('100000');
    w.fund(1, '10');
    w.fund(2, '1000000');
    w.order(2, 'sell', '0.0002', '99999.9');
    w.order(1, 'buy', '0.0002', null, 'isolated'); // isolated margin 0.3999996 (2 % of 19.99998)
    const cross = w.perps(1) - fx('0.3999996');
    // A gap with no bids: the fund takes the position at the mark, and the loss exceeds the margin.
    w.index('97000');
    assert.equal(w.fundHeld(), 2, 'the fund took the position over');
    const covers = w.entries.filter((e) => e.type === 'insurance_fund' && e.account.kind === 'user');
    assert.deepEqual(covers.map((e) => e.ref), ['shortfall:BTC-PERP']);
    assert.ok(covers[0]!.amount > 0n);
    for (const e of w.entries) assert.equal(e.amount % 10n ** 12n, 0n, `${e.type} ${e.amount} is not whole micro-USDC`);
    // The fund pays the deficit rounded up: the cross cash pays no part of it, and gains less than a unit.
    const rest = w.perps(1) - cross;
    assert.ok(rest >= 0n && rest < 10n ** 12n, `the cross cash moved by ${rest}`);
  });
});

describe('a cross account solvent through unrealised profit', () => {
  // Cash below zero is not a deficit while other positions carry the profit to pay it: the venue
  // realises that profit at the mark (the position's entry price moves, its equity does not), and
  // the fund pays only what equity cannot.
  /** Account 1 (10 000 USDC) long `btc` BTC at 100 000 and short 10 ETH at 4 000, both cross, from account 2. */
  function longBtcShortEth(btc: string): World {
    const w = twoMarkets('10000');
    w.order(2, 'sell', btc, '100000');
    w.order(1, 'buy', btc, null);
    w.order(2, 'buy', '10', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '10', null, 'cross', 'ETH-PERP');
    return w;
  }

  test('pays a realised loss out of its profit, not out of the fund', () => {
    const w = longBtcShortEth('1');
    w.index('130000');
    w.index('4500', 'ETH');
    // All of the cash leaves (the profit makes it free): equity is now unrealised profit only.
    const cash = w.perps(1);
    w.run({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: cash });
    assert.equal(w.perps(1), 0n);
    const fundBefore = w.cash();
    const market = w.ex.linear.markets.get('BTC-PERP')!;
    const btc = w.ex.linear.findAccount(w.id(1))!.position(market, 'cross')!;
    const equityBefore = btc.unrealized(fx('130000'));
    w.order(2, 'sell', '10', '4500', 'cross', 'ETH-PERP');
    w.entries.length = 0;
    w.order(1, 'buy', '10', null, 'cross', 'ETH-PERP'); // realises −5 000 and the taker fee
    assert.deepEqual(w.entries.filter((e) => e.type === 'insurance_fund'), [], 'the fund paid nothing');
    assert.equal(w.cash(), fundBefore);
    assert.equal(w.perps(1), 0n, 'the cash is made whole exactly');
    const loss = equityBefore - btc.unrealized(fx('130000'));
    const fee = -w.entries.find((e) => e.type === 'trade_fee' && e.account.kind === 'user' && e.account.accountId === w.id(1))!.amount;
    assert.equal(loss, fx('5000') + fee, 'the BTC profit paid the loss and the fee, nothing more');
    assert.equal(btc.size, 10_000, 'the position stays open');
    assert.equal(btc.entryPrice(), fx('100000') + loss, 'its entry price moved by what was realised');
    const settled = w.entries.filter((e) => e.type === 'realized_pnl' && e.ref === 'pnl_settlement:BTC-PERP' && e.account.kind === 'user');
    assert.deepEqual(settled.map((e) => e.amount), [loss], 'one settlement, into the account');
    assert.equal(btc.realizedPnl, loss);
  });

  test('the fund pays only what the profit cannot', () => {
    const w = longBtcShortEth('0.05');
    w.index('105000'); // BTC profit 250
    w.entries.length = 0;
    w.index('5200', 'ETH'); // the ETH short 12 000 down: equity below zero
    assert.equal(w.fundHeld('ETH-PERP'), -10_000, 'the fund took the ETH short over at the mark');
    const toUser = (type: string, ref: string) =>
      w.entries.filter((e) => e.type === type && e.ref === ref && e.account.kind === 'user').reduce((sum, e) => sum + e.amount, 0n);
    assert.equal(toUser('realized_pnl', 'pnl_settlement:BTC-PERP'), fx('250'), 'the BTC profit was realised first');
    // equity: 10 000 cash − 2.5 and 20 taker fees + 250 BTC profit − 12 000 ETH loss = −1 772.5
    assert.equal(toUser('insurance_fund', 'shortfall'), fx('1772.5'), 'the fund paid the equity deficit, not the cash one');
    assert.equal(w.perps(1), 0n);
    assert.equal(w.size(1), 500, 'the BTC position stays, now at its mark');
  });
});


describe('profit at a stale mark', () => {
  test('does not keep a losing position out of liquidation: the fund pays nothing while the profit stays', () => {
    const w = twoMarkets('5000');
    w.fund(3, '1000000');
    w.index('3000', 'ETH');
    w.order(2, 'sell', '10', '3000', 'cross', 'ETH-PERP');
    w.order(1, 'buy', '10', null, 'cross', 'ETH-PERP'); // ETH long, fee 15
    w.order(2, 'buy', '1', '100000');
    w.order(1, 'sell', '1', null); // BTC short, fee 50
    for (const price of ['3140', '3290', '3450', '3620', '3800', '4000']) {
      w.index(price, 'ETH');
      w.tick();
    }
    const eth = w.ex.linear.markets.get('ETH-PERP')!;
    assert.equal(eth.mark, fx('4000'), 'the ETH long carries 10 000 of profit');
    w.now += 3 * HOUR; // the ETH feed stops: its profit sits at the last mark and cannot be realised
    w.index('100000');
    w.order(3, 'sell', '2', '114800');
    w.entries.length = 0;
    for (const price of ['104000', '108000', '111000', '113000', '114000', '114500']) {
      w.index(price);
      w.tick();
    }
    assert.equal(eth.mark, null, 'no ETH mark');
    // Before: the ETH profit kept the BTC short open up to 114 500, whose loss (14 500) the cash
    // could not pay, and the fund paid 9 922.4 to an account still holding 10 000 of ETH profit.
    assert.equal(w.size(1), 0, 'the BTC short was liquidated');
    assert.equal(w.fundPaid(), 0n, 'the fund paid nothing');
    assert.equal(w.position(1, 'cross', 'ETH-PERP')?.size, 10_000, 'the ETH long stays');
  });
});

describe('cross and isolated positions in one account', () => {
  // The isolated allocations sit inside the perps bucket, ring-fenced: a cross loss is paid by the
  // cross cash (the bucket less the allocations), then by the cross profit, then by the fund, never
  // by an isolated position's margin. A bucket that stays positive can still hide a cross deficit.

  test('the fund pays a cross deficit the isolated allocations would otherwise have hidden', () => {
    const w = twoMarkets('4000');
    w.order(2, 'sell', '0.5', '100000');
    w.order(1, 'buy', '0.5', null, 'isolated'); // allocation 1 000 (50×), fee 25 from the cross cash
    w.order(2, 'buy', '10', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '10', null, 'cross', 'ETH-PERP'); // fee 20
    assert.equal(w.ex.linear.risk(w.id(1)).isolatedAllocated, fx('1000'));
    assert.equal(w.crossCash(1), fx('2955'));
    w.entries.length = 0;
    w.index('4400', 'ETH'); // the ETH short 4 000 down: cross equity 2 955 − 4 000 = −1 045
    assert.equal(w.fundHeld('ETH-PERP'), -10_000, 'the fund took the ETH short over at the mark');
    const shortfall = w.entries.filter((e) => e.type === 'insurance_fund' && e.ref === 'shortfall' && e.account.kind === 'user');
    // Before the fix the fund paid only the bucket's deficit (45) and the isolated margin paid 1 000.
    assert.deepEqual(shortfall.map((e) => e.amount), [fx('1045')], 'the fund paid the cross deficit');
    assert.equal(w.crossCash(1), 0n, 'the cross cash ends at zero, not below');
    assert.equal(w.ex.linear.risk(w.id(1)).isolatedAllocated, fx('1000'), 'the isolated margin is untouched');
    assert.equal(w.perps(1), fx('1000'), 'the bucket holds exactly the allocation');
  });

  /** Account 1 (1 000 USDC, less a 5 fee) cross long 0.1 BTC from 100 000, now 110 000: 1 000 of profit. */
  function longBtcInProfit(): World {
    const w = twoMarkets('1000');
    w.order(2, 'sell', '0.1', '100000');
    w.order(1, 'buy', '0.1', null);
    w.index('110000');
    return w;
  }

  test('an isolated order is funded from cash, never from unrealised profit alone', () => {
    const w = longBtcInProfit();
    w.run({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: w.perps(1) });
    w.order(2, 'sell', '4', '4000', 'cross', 'ETH-PERP');
    // Free collateral (780) would cover 640 of margin, but moving profit into an allocation would make
    // it cash that can leave (close the isolated position, withdraw): refused.
    assert.equal(w.refusal(1, w.request('buy', '4', null, 'isolated', 'ETH-PERP')), 'INSUFFICIENT_MARGIN');
    assert.equal(w.refusal(1, w.request('buy', '4', null, 'cross', 'ETH-PERP')), null, 'the same order in cross mode stands');
  });

  test('a resting isolated order whose cash left is funded from cross profit when it fills, not left unbacked', () => {
    const w = longBtcInProfit();
    w.order(1, 'buy', '4', '3999', 'isolated', 'ETH-PERP', { postOnly: true }); // gated on the cash (995)
    // The profit keeps free collateral above the order's reserve, so all the cash may leave.
    w.run({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: w.perps(1) });
    assert.equal(w.perps(1), 0n);
    w.entries.length = 0;
    w.order(2, 'sell', '4', '3999', 'cross', 'ETH-PERP'); // fills the resting order: allocation 639.84, maker fee 1.6
    const eth = w.position(1, 'isolated', 'ETH-PERP')!;
    assert.equal(eth.isolatedMargin, fx('639.84'), 'the position starts with its whole initial margin');
    const settled = w.entries.filter((e) => e.type === 'realized_pnl' && e.ref === 'pnl_settlement:BTC-PERP' && e.account.kind === 'user');
    assert.deepEqual(settled.map((e) => e.amount), [fx('641.4396')], 'the BTC profit paid the allocation and the fee');
    assert.equal(w.crossCash(1), 0n, 'the allocation is backed by cash');
    assert.equal(w.fundPaid(), 0n, 'the fund paid nothing');
    assert.equal(w.size(1), 1_000, 'the BTC position stays open');
  });

  test('profit at a stale mark does not back a close: it cannot be realised to pay the loss', () => {
    const w = twoMarkets('2000');
    w.order(2, 'sell', '0.1', '100000');
    w.order(1, 'buy', '0.1', null); // BTC cross, fee 5
    w.order(2, 'buy', '2', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '2', null, 'cross', 'ETH-PERP'); // ETH cross short, fee 4
    w.index('110000'); // BTC profit 1 000
    w.now += 4 * HOUR; // the BTC index goes stale (3 h); ETH keeps publishing
    // ETH at 4 800: 1 600 of loss leaves 391 of realisable equity, above the maintenance margin of
    // about 302 (the stale BTC profit does not count there: at 4 995 the short would be liquidated).
    w.index('4800', 'ETH');
    assert.equal(w.ex.linear.markAt(w.ex.linear.markets.get('BTC-PERP')!, w.now), null, 'no BTC mark');
    w.order(2, 'sell', '2', '4995', 'cross', 'ETH-PERP', { reduceOnly: true });
    assert.equal(w.position(1, 'cross', 'ETH-PERP')?.size, -2000, 'not liquidated');
    w.entries.length = 0;
    // Closing at 4 995 realises −1 990 and a 4.995 fee against 1 991 of cash: only the BTC profit
    // would cover it, and settleProfit cannot realise it at a stale mark. Before: filled, and the
    // fund paid the 3.995 the cash fell short while the profit stayed with the account.
    const close = w.request('buy', '2', null, 'cross', 'ETH-PERP', { reduceOnly: true });
    assert.equal(w.refusal(1, close), 'NO_LIQUIDITY');
    assert.equal(w.fundPaid(), 0n);
    assert.equal(w.crossCash(1), fx('1991'));
  });
});

describe('a user order never trades a loss onto the fund', () => {
  // A loss past the collateral behind a position is the insurance fund's; a user could choose one
  // (sell far below the mark to an accomplice's bid) and the accomplice would keep it. So a user
  // order never trades a position beyond its bankruptcy price, and an isolated position opens with
  // all the margin the gate reserved for it.
  /** Account 1: an isolated long of 1 BTC at 100 000 (allocation 2 000, bankruptcy 98 000) and `cross` of cross cash. */
  function isolatedLong(cross: string): World {
    const w = btcMarket(formatDecimal(fx(cross) + fx('2050')));
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null, 'isolated'); // fee 50 from the cross cash
    assert.equal(w.position(1, 'isolated')!.isolatedMargin, fx('2000'));
    return w;
  }

  for (const reduceOnly of [true, false]) {
    test(`an isolated close below its bankruptcy price finds no liquidity (reduceOnly ${reduceOnly}); a resting one is refused`, () => {
      const w = isolatedLong('100000');
      w.order(2, 'buy', '1', '95000'); // the accomplice's bid
      w.entries.length = 0;
      const ioc = w.request('sell', '1', '95000', 'isolated', 'BTC-PERP', { timeInForce: 'ioc', reduceOnly });
      assert.equal(w.ex.previewPerpOrder(addr(1), ioc, w.now + 1000).rejection?.code, 'NO_LIQUIDITY', 'the preview agrees');
      assert.equal(w.refusal(1, ioc), 'NO_LIQUIDITY', 'before: filled at 95 000 and the fund paid 3 000');
      assert.equal(w.refusal(1, w.request('sell', '1', null, 'isolated', 'BTC-PERP', { reduceOnly })), 'NO_LIQUIDITY');
      assert.equal(w.refusal(1, w.request('sell', '1', '97000', 'isolated', 'BTC-PERP', { reduceOnly })), 'INSUFFICIENT_MARGIN');
      w.order(2, 'buy', '1', '98100');
      w.order(1, 'sell', '1', null, 'isolated', 'BTC-PERP', { reduceOnly }); // takes the bid inside the bound
      assert.equal(w.position(1, 'isolated'), undefined, 'closed at 98 100');
      assert.equal(w.fundPaid(), 0n);
    });
  }

  test('collateral may not leave so far that a resting reduce-only order ends past the bankruptcy price', () => {
    const w = btcMarket('10000');
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // cross, fee 50: cash 9 950, bankruptcy 90 050
    w.order(1, 'sell', '1', '95000', 'cross', 'BTC-PERP', { reduceOnly: true }); // rests, reserves no margin
    const transferable = w.ex.linear.holds().transferable(w.id(1), 'USDC');
    // 9 950 − initial margin 2 000 − the resting sell's open loss at the mark 5 000. Before: 7 950,
    // which moved the bankruptcy price to 98 000, past the resting sell.
    assert.equal(transferable, fx('2950'));
    assert.equal(w.ex.linear.holds().locked(w.id(1), 'USDC'), fx('7000'), 'the open loss is held like margin (before: 2 000)');
    const more = w.ex.execute({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: transferable + fx('1') }, w.now);
    assert.equal(more.ok ? 'accepted' : more.code, 'INSUFFICIENT_BALANCE');
    w.run({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: transferable });
    w.entries.length = 0;
    w.order(3, 'buy', '1', '95000'); // an accomplice lifts the resting sell
    assert.equal(w.size(1), 0);
    assert.equal(w.fundPaid(), 0n, 'before: the fund paid 3 009.5');
    assert.ok(w.perps(1) > 0n);
  });

  /** Account 1 (`cash`) cross long 1 BTC at 100 000, with a reduce-only sell resting at 95 000 (open loss 5 000). */
  function longWithRestingClose(cash: string): World {
    const w = twoMarkets(cash);
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // fee 50
    w.order(1, 'sell', '1', '95000', 'cross', 'BTC-PERP', { reduceOnly: true });
    return w;
  }

  test('an isolated position may not be funded with the cash a resting reduce-only order needs', () => {
    const w = longWithRestingClose('10000'); // cash 9 950: 5 000 of it covers the resting sell
    w.order(2, 'sell', '45', '4000', 'cross', 'ETH-PERP');
    // Initial margin 7 200 + fee 90 would leave 2 660 of cash; the resting sell would then lose past it.
    assert.equal(w.refusal(1, w.request('buy', '45', null, 'isolated', 'ETH-PERP')), 'INSUFFICIENT_MARGIN');
    w.order(1, 'buy', '15', null, 'isolated', 'ETH-PERP'); // 2 400 + 30: the sell stays covered
    w.entries.length = 0;
    w.order(3, 'buy', '1', '95000'); // an accomplice lifts the resting sell
    assert.equal(w.size(1), 0);
    assert.equal(w.fundPaid(), 0n, 'before: the fund paid 2 349.5');
  });

  test('a resting reduce-only order\'s open loss is kept out of free collateral: no position to lose it with', () => {
    const w = longWithRestingClose('6000'); // equity 5 950: the initial margin (2 000) and the sell's open loss (5 000) exceed it
    w.order(3, 'sell', '10', '4000', 'cross', 'ETH-PERP');
    // Before: the ETH long opened, was sold at a loss into an accomplice's bid, and the resting BTC
    // sell then filled past its bound: the fund paid 998.55.
    assert.equal(w.refusal(1, w.request('buy', '10', null, 'cross', 'ETH-PERP')), 'INSUFFICIENT_MARGIN');
    assert.equal(w.ex.linear.risk(w.id(1)).free, fx('-1050'));
    w.entries.length = 0;
    w.order(3, 'buy', '1', '95000');
    assert.equal(w.fundPaid(), 0n);
  });

  test('a loss sold on another market stops where a resting reduce-only order would end past its bound', () => {
    const w = twoMarkets('6000');
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // cross long 1 BTC, fee 50
    w.order(3, 'sell', '10', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'buy', '10', null, 'cross', 'ETH-PERP'); // long 10 ETH at 4 000, fee 20
    // A reduce-only sell needs no margin: it rests at 95 000 with 5 000 of open loss, equity 5 930.
    w.order(1, 'sell', '1', '95000', 'cross', 'BTC-PERP', { reduceOnly: true });
    w.order(3, 'buy', '10', '3810', 'cross', 'ETH-PERP'); // the accomplice bids 4.75 % under the mark
    // Selling there would realise 1 900 of the 930 the resting BTC sell leaves: bounded, nothing fills.
    assert.equal(w.refusal(1, w.request('sell', '10', null, 'cross', 'ETH-PERP')), 'NO_LIQUIDITY');
    w.entries.length = 0;
    w.order(3, 'buy', '1', '95000');
    assert.equal(w.fundPaid(), 0n, 'before: the fund paid 998.55');
  });

  test('a position\'s own resting reduce-only orders are not counted twice: split closes rest, a full close still fills', () => {
    const w = twoMarkets('6000');
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // cross long 1 BTC, equity 5 950
    w.order(1, 'sell', '0.5', '96000', 'cross', 'BTC-PERP', { reduceOnly: true });
    // The first half is taken as filled: the second is bounded by what is left (before: refused,
    // though one order of 1 at 96 000 was accepted).
    w.order(1, 'sell', '0.5', '96000', 'cross', 'BTC-PERP', { reduceOnly: true });
    w.order(3, 'buy', '1', '95000');
    w.entries.length = 0;
    // A full close (a stop-loss fires the same way) trades the whole position; the resting halves go
    // with it. Before: NO_LIQUIDITY, their loss counted against the whole position as well.
    w.order(1, 'sell', '1', null, 'cross', 'BTC-PERP', { reduceOnly: true });
    assert.equal(w.size(1), 0);
    assert.equal(w.fundPaid(), 0n);
  });

  /** Account 1 (`cash`) cross long 1 BTC at 100 000 and `eth` ETH at 4 000, bought at market; account 3 an accomplice with a million. */
  function longBtcAndEth(cash: string, eth: string): World {
    const w = twoMarkets(cash);
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null);
    w.order(3, 'sell', eth, '4000', 'cross', 'ETH-PERP');
    w.order(1, 'buy', eth, null, 'cross', 'ETH-PERP');
    return w;
  }

  /**
   * Account 1 (7 000) cross long 1 BTC at 100 000 and 10 ETH at 4 000 (fees 70: equity 6 930),
   * with a `reduceOnly` sell of 1 BTC resting at 97 000: within its bound when placed (100 000 −
   * (6 930 − 52.5 set aside for the fee) = 93 122.5). ETH then falls to 3 600: equity 2 930, above
   * maintenance (no liquidation), and the BTC bound is now 97 122.5, past the resting sell.
   */
  for (const reduceOnly of [false, true]) {
    test(`a resting close whose bound the mark moved past it leaves the book with that mark (reduceOnly ${reduceOnly})`, () => {
      const w = longBtcAndEth('7000', '10');
      w.order(1, 'sell', '1', '97000', 'cross', 'BTC-PERP', { reduceOnly });
      w.entries.length = 0;
      const events = w.index('3600', 'ETH');
      assert.equal(w.size(1), 10_000, 'not liquidated');
      assert.equal(w.ex.linear.risk(w.id(1)).crossEquity, fx('2930'));
      // Before: it stayed in the book, as an ask no taker could trade, until a taker reached it.
      assertCancelledPastBound(w, events);
      assert.equal(w.ex.linear.markets.get('BTC-PERP')!.book.bestAsk(), NaN, 'no ask left');
      assert.equal(w.refusal(3, w.request('buy', '1', '97000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' })), 'NO_LIQUIDITY');
      closesInsideNewBound(w, '97200');
    });
  }

  /** Account 1's order among `events` was cancelled as past its bound. */
  function assertCancelledPastBound(w: World, events: readonly ExchangeEvent[]) {
    const sell = events.find((e) => e.type === 'order' && e.order.accountId === w.id(1));
    assert.deepEqual(sell?.type === 'order' && [sell.order.status, sell.order.rejectReason], ['cancelled', 'INSUFFICIENT_MARGIN']);
  }

  /** Nothing for the fund at the next tick, and a close of account 1 into a bid at `bid`, inside the new bound, trades. */
  function closesInsideNewBound(w: World, bid: string) {
    w.tick();
    assert.equal(w.fundPaid(), 0n);
    w.order(2, 'buy', '1', bid);
    w.order(1, 'sell', '1', null, 'cross', 'BTC-PERP', { reduceOnly: true });
    assert.equal(w.size(1), 0);
    assert.equal(w.fundPaid(), 0n);
  }

  /**
   * Account 1 (18 100) cross long 1 BTC at 100 000 and 80 ETH at 4 000 (fees 210: equity 17 890),
   * with a sell of 1 BTC resting at 97 000 (its open loss, 3 000, and its fee are about what the
   * margin gate left free), within its bound (100 000 − (17 890 − 52.5) = 82 162.5). It then sells
   * its ETH at 3 810 into an accomplice's bid: 15 200 lost and 152.4 of fee leave 2 537.6, above
   * maintenance (1 000), and the BTC bound moves to 97 514.9, past the resting sell. No mark
   * moved, so no sweep ran: the match is what must refuse it.
   */
  function boundMovedByOwnLoss(): World {
    const w = longBtcAndEth('18100', '80');
    w.order(1, 'sell', '1', '97000');
    w.order(3, 'buy', '80', '3810', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '80', null, 'cross', 'ETH-PERP', { reduceOnly: true });
    assert.equal(w.perps(1), fx('2537.6'));
    assert.equal(w.ex.linear.markets.get('BTC-PERP')!.book.bestAsk(), 970_000, 'the sell still rests');
    return w;
  }

  test('a resting close whose bound moved past it is refused at the match, not filled', () => {
    const w = boundMovedByOwnLoss();
    w.entries.length = 0;
    const fok = w.request('buy', '1', '97000', 'cross', 'BTC-PERP', { timeInForce: 'fok' });
    assert.equal(w.ex.previewPerpOrder(addr(3), fok, w.now + 1000).rejection?.code, 'FOK_NOT_FILLED', 'the preview agrees');
    assert.equal(w.refusal(3, fok), 'FOK_NOT_FILLED', 'the only maker would be refused: nothing fills');
    assert.equal(w.refusal(3, w.request('buy', '1', '97000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' })), 'NO_LIQUIDITY');
    // A resting bid at that price meets the sell: the sell is cancelled, the bid rests.
    const out = w.ex.execute({ type: 'perp.place', account: addr(3), request: w.request('buy', '1', '97000') }, (w.now += 1000));
    assert.ok(out.ok, 'the bid is accepted');
    assert.equal(out.result.order.status, 'open');
    assert.deepEqual(out.result.fills, []);
    assertCancelledPastBound(w, out.events);
    assert.equal(w.size(1), 10_000);
    // Before: it filled at 97 000, 3 000 lost against 2 537.6 of equity, and the fund paid the rest.
    w.index('100000');
    closesInsideNewBound(w, '97700');
  });

  test('a short closed at its bound above the mark pays its fee out of its equity', () => {
    const w = btcMarket('2100');
    w.order(2, 'buy', '1', '100000');
    w.order(1, 'sell', '1', null); // cross short, fee 50: equity 2 050
    // Bound: 100 000 + (2 050 − 52.5 set aside) = 101 997.5. The fee there is 50.99875: set aside on
    // the value at the mark (50), a close at 102 000 paid 51 against 50 of equity left.
    w.order(2, 'sell', '1', '101997.5');
    w.entries.length = 0;
    w.order(1, 'buy', '1', null, 'cross', 'BTC-PERP', { reduceOnly: true });
    assert.equal(w.size(1), 0);
    assert.equal(w.fundPaid(), 0n);
    assert.equal(w.perps(1), fx('2050') - fx('1997.5') - fx('50.99875'));
  });

  test('an isolated reduce-only order leaves the cross withdrawable alone (its allocation bounds it)', () => {
    const w = isolatedLong('8000');
    const before = w.ex.linear.holds().transferable(w.id(1), 'USDC');
    w.order(1, 'sell', '1', '98500', 'isolated', 'BTC-PERP', { reduceOnly: true }); // open loss 1 500 at the mark
    assert.equal(w.ex.linear.holds().transferable(w.id(1), 'USDC'), before, 'before: 1 500 less');
  });

  test('a cross close below the account\'s bankruptcy price finds no liquidity', () => {
    const w = btcMarket('2100');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null); // cross, fee 50: equity 2 050, bankruptcy 97 950
    w.order(2, 'buy', '1', '95000');
    w.entries.length = 0;
    const close = w.request('sell', '1', '95000', 'cross', 'BTC-PERP', { timeInForce: 'ioc', reduceOnly: true });
    assert.equal(w.refusal(1, close), 'NO_LIQUIDITY', 'before: filled at 95 000 and the fund paid 2 997.5');
    assert.equal(w.fundPaid(), 0n);
    assert.equal(w.size(1), 10_000);
  });

  test('an isolated buy above the mark opens with its open loss in the allocation, as the gate reserved it', () => {
    const w = btcMarket('10000');
    w.order(2, 'sell', '1', '104900'); // the only ask, 4.9 % above the mark
    const preview = w.ex.previewPerpOrder(addr(1), w.request('buy', '1', null, 'isolated'), w.now + 1000);
    assert.equal(preview.plan?.marginRequired, fx('6998'), 'initial margin 2 098 at the price, plus the open loss 4 900');
    w.order(1, 'buy', '1', null, 'isolated');
    assert.equal(w.position(1, 'isolated')!.isolatedMargin, fx('6998'), 'before: 2 098, and the position opened insolvent');
    w.entries.length = 0;
    w.index('100000');
    w.tick();
    assert.equal(w.fundPaid(), 0n, 'before: the fund paid 2 802 when it was liquidated');
    assert.equal(w.cash(), fx('10000'));
  });

  test('an isolated flip reserves the new side\'s whole margin less what the old side releases', () => {
    const w = isolatedLong('0');
    assert.equal(w.crossCash(1), 0n);
    w.index('99000'); // equity 1 000 ≥ maintenance 990
    w.order(2, 'buy', '2', '99000');
    const flip = w.request('sell', '2', '99000', 'isolated', 'BTC-PERP', { timeInForce: 'ioc' });
    const preview = w.ex.previewPerpOrder(addr(1), flip, w.now + 1000);
    // The close releases the equity (1 000); the new short needs 1 980 of initial margin at the mark.
    assert.equal(preview.plan?.marginRequired, fx('980'), 'before: 0, and the short opened below maintenance');
    assert.equal(preview.rejection?.code, 'INSUFFICIENT_MARGIN');
    assert.equal(w.refusal(1, flip), 'INSUFFICIENT_MARGIN');
  });

  test('the fee of a fill that closes an isolated position in full comes out of its allocation', () => {
    const w = isolatedLong('1000');
    assert.equal(w.crossCash(1), fx('1000'));
    w.order(2, 'buy', '1', '98000'); // the only bid: the bankruptcy price
    w.entries.length = 0;
    w.index('98900'); // equity 900 < maintenance 989: liquidated in one chunk at 98 000
    assert.equal(w.position(1, 'isolated'), undefined);
    assert.equal(w.crossCash(1), fx('1000'), 'before: the cross cash paid the 49 fee (951)');
    assert.equal(w.fundPaid(), fx('49'), 'the fund paid the fee the exhausted margin could not');
  });

  test('what may leave the perps bucket is whole units of the asset', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '10');
    w.fund(2, '1000000');
    w.order(2, 'sell', '0.0002', '99999.9');
    w.order(1, 'buy', '0.0002', null, 'isolated'); // isolated margin 0.3999996
    const transferable = w.ex.linear.holds().transferable(w.id(1), 'USDC');
    assert.equal(transferable, fx('9.59'), 'before: 9.5900004, which a transfer request cannot even express');
  });

  /**
   * Account 1 (19 100) cross long 80 ETH at 4 000 (fee 160), with an opening bid of 1 BTC resting
   * 4 % above the mark (`mode`): the gate reserved its initial margin and its open loss, 4 000.
   * It then sells its ETH at a loss into an accomplice's bid (a reducing order: no gate), which
   * leaves 2 788 of cross equity, short of the bid's loss. No mark moved: no sweep ran.
   */
  function openingBidLeftUncovered(mode: MarginMode): World {
    const w = twoMarkets('19100');
    w.fund(3, '1000000');
    w.order(2, 'sell', '80', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'buy', '80', null, 'cross', 'ETH-PERP');
    w.order(1, 'buy', '1', '104000', mode);
    w.order(3, 'buy', '80', '3800', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '80', null, 'cross', 'ETH-PERP', { reduceOnly: true });
    assert.equal(w.ex.linear.risk(w.id(1)).crossEquity, fx('2788'));
    assert.equal(w.ex.linear.markets.get('BTC-PERP')!.book.bestBid(), 1_040_000, 'the bid still rests');
    return w;
  }

  for (const mode of ['cross', 'isolated'] as const) {
    test(`an opening bid whose loss the owner's own loss left uncovered is refused at the match (${mode})`, () => {
      const w = openingBidLeftUncovered(mode);
      w.entries.length = 0;
      const fok = w.request('sell', '1', '104000', 'cross', 'BTC-PERP', { timeInForce: 'fok' });
      assert.equal(w.ex.previewPerpOrder(addr(3), fok, w.now + 1000).rejection?.code, 'FOK_NOT_FILLED', 'the preview agrees');
      assert.equal(w.refusal(3, fok), 'FOK_NOT_FILLED');
      const out = w.ex.execute({ type: 'perp.place', account: addr(3), request: w.request('sell', '1', '104000') }, (w.now += 1000));
      assert.ok(out.ok, 'the ask is accepted');
      assert.deepEqual(out.result.fills, [], 'before: it bought 1 BTC at 104 000, 4 000 lost against 2 788');
      assertCancelledPastBound(w, out.events);
      assert.equal(w.size(1) + (w.position(1, 'isolated')?.size ?? 0), 0);
      w.index('100000');
      w.tick();
      assert.equal(w.fundPaid(), 0n, 'before: the fund paid 1 222.4');
    });
  }

  /**
   * Account 1 (`cash`) long 1 BTC and `eth` ETH bought at 4 000, asks 2 BTC at 97 000 (it closes 1
   * and opens a short of 1), then sells its ETH at 3 800 into an accomplice's bid (reducing: no gate).
   */
  function flipAfterEthLoss(cash: string, eth: string): World {
    const w = longBtcAndEth(cash, eth);
    w.order(1, 'sell', '2', '97000');
    w.order(3, 'buy', eth, '3800', 'cross', 'ETH-PERP');
    w.order(1, 'sell', eth, null, 'cross', 'ETH-PERP', { reduceOnly: true });
    return w;
  }

  test('an order larger than the position it closes is bounded on the part that opens too', () => {
    const w = flipAfterEthLoss('24400', '100'); // 20 000 lost on ETH: 3 960 of cash left
    // Closing the 1 BTC at 97 000 is inside its bound (96 092.5); both lots at 97 000 lose 6 000.
    const events = w.index('100000');
    assertCancelledPastBound(w, events);
    assert.equal(w.refusal(3, w.request('buy', '2', '97000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' })), 'NO_LIQUIDITY', 'before: filled, and the fund paid 2 059.4');
    w.tick();
    assert.equal(w.fundPaid(), 0n);
  });

  // A bid at a falling mark, and its mirror, an ask at a rising one (the sweep's shortcut for an
  // account that covers all its orders bounds both: maker-checks.ts crossOpeningsCovered).
  for (const { side, other, mark, sign, moved } of [
    { side: 'buy', other: 'sell', mark: '96000', sign: 1, moved: 'falls' },
    { side: 'sell', other: 'buy', mark: '104000', sign: -1, moved: 'rises' },
  ] as const) {
    const order = side === 'buy' ? 'bid' : 'ask';
    test(`an opening ${order} leaves the book when the mark ${moved} past what its owner's cash covers`, () => {
      const w = btcMarket('2100');
      w.fund(3, '6100');
      w.order(1, side, '1', '100000'); // initial margin 2 000 and the fee set aside: accepted
      w.order(3, side, '1', '100000'); // the same order with 6 100 behind it
      const events = w.index(mark); // 4 000 of loss at the new mark
      assertCancelledPastBound(w, events);
      assert.deepEqual([...w.ex.linear.findAccount(w.id(3))!.orders.values()].map((o) => o.status), ['open'], `the covered ${order} stays`);
      w.order(2, other, '2', '100000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' });
      assert.equal(w.size(1), 0, `before (the bid): it traded at 100 000 with 2 100 behind a 4 000 loss`);
      assert.equal(w.size(3), sign * 10_000);
      w.tick();
      assert.equal(w.fundPaid(), 0n, 'before (the bid): the fund paid 1 910');
    });
  }

  test('a fill-or-kill order counts what each fill takes from a maker before its next order', () => {
    // Account 1 (2 100, no position) asks 0.5 BTC at 100 000 twice; the mark rises to 103 000.
    // Each ask alone loses 1 500 (and 5 of fee) against 2 100; both lose 3 010.
    const w = btcMarket('2100');
    w.fund(3, '1000000');
    w.order(1, 'sell', '0.5', '100000');
    w.order(1, 'sell', '0.5', '100000');
    w.index('103000');
    assert.equal(w.ex.linear.findAccount(w.id(1))!.orders.size, 2, 'each ask is covered on its own: the sweep keeps both');
    const fok = w.request('buy', '1', '100000', 'cross', 'BTC-PERP', { timeInForce: 'fok' });
    assert.equal(w.ex.previewPerpOrder(addr(3), fok, w.now + 1000).rejection?.code, 'FOK_NOT_FILLED', 'the preview agrees');
    assert.equal(w.refusal(3, fok), 'FOK_NOT_FILLED', 'before: accepted, then filled in part (the second ask refused)');
    w.entries.length = 0;
    const out = w.ex.execute({ type: 'perp.place', account: addr(3), request: w.request('buy', '1', '100000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' }) }, (w.now += 1000));
    assert.ok(out.ok, 'the ioc is accepted');
    assert.deepEqual(out.result.fills.map((f) => f.quantity), [fx('0.5')], 'the first ask fills, the second is refused');
    assertCancelledPastBound(w, out.events.filter((e) => e.type !== 'order' || e.order.status === 'cancelled'));
    w.tick();
    assert.equal(w.size(1), -5_000, 'not liquidated: 595 of equity over 515 of maintenance');
    assert.equal(w.fundPaid(), 0n);
  });

  /** Account 1 long 1 BTC isolated (allocation 2 000) with two reduce-only asks of 0.5 at `price`. */
  function isolatedLongWithTwoAsks(price: string): World {
    const w = twoMarkets('100000');
    w.fund(3, '10000000');
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null, 'isolated');
    assert.equal(w.position(1, 'isolated')!.isolatedMargin, fx('2000'));
    w.order(1, 'sell', '0.5', price, 'isolated', 'BTC-PERP', { reduceOnly: true });
    w.order(1, 'sell', '0.5', price, 'isolated', 'BTC-PERP', { reduceOnly: true });
    return w;
  }

  test('a fill-or-kill order plays each fill of an isolated position forward before the position\'s next order', () => {
    // Both asks at the position's bound, 98 052.5. The first fill pays its fee out of the
    // allocation and gives back the closed half's share, which moves the rest's bound up: the
    // match refuses the second ask.
    const w = isolatedLongWithTwoAsks('98052.5');
    const fok = w.request('buy', '1', '98052.5', 'cross', 'BTC-PERP', { timeInForce: 'fok' });
    assert.equal(w.ex.previewPerpOrder(addr(3), fok, w.now + 1000).rejection?.code, 'FOK_NOT_FILLED', 'the preview agrees');
    assert.equal(w.refusal(3, fok), 'FOK_NOT_FILLED', 'before: accepted, then filled in part (the second ask refused)');
    const ioc = w.ex.execute({ type: 'perp.place', account: addr(3), request: w.request('buy', '1', '98052.5', 'cross', 'BTC-PERP', { timeInForce: 'ioc' }) }, (w.now += 1000));
    assert.ok(ioc.ok, 'the ioc is accepted');
    assert.deepEqual(ioc.result.fills.map((f) => f.quantity), [fx('0.5')], 'the first ask fills, the second is refused');
    assert.equal(w.fundPaid(), 0n);
  });

  test('a fill-or-kill order fills two orders of an isolated position clear of the bound their fills move', () => {
    const w = isolatedLongWithTwoAsks('98200');
    const fok = w.request('buy', '1', '98200', 'cross', 'BTC-PERP', { timeInForce: 'fok' });
    assert.equal(w.ex.previewPerpOrder(addr(3), fok, w.now + 1000).rejection, null, 'the preview accepts it');
    const out = w.ex.execute({ type: 'perp.place', account: addr(3), request: fok }, (w.now += 1000));
    assert.ok(out.ok, `the fill-or-kill order is accepted: ${out.ok ? '' : out.message}`);
    assert.equal(out.result.order.status, 'filled', 'filled in full');
    assert.equal(w.position(1, 'isolated')?.size ?? 0, 0, 'the isolated long is closed');
    assert.equal(w.fundPaid(), 0n);
  });

  test('an isolated opening bid counts the initial margin its fill would move out of the cross pool', () => {
    // Account 1 (57 200) bids 10 BTC isolated at the mark (initial margin 20 000), buys 100 ETH 5 %
    // above the mark (gated) and sells 90 of them at 3 800 (reducing: no gate): 18 819 of cross
    // equity is left, short of the 20 000 the bid's fill would allocate.
    const w = twoMarkets('57200');
    w.seedFund('1000000');
    w.fund(3, '10000000');
    w.order(1, 'buy', '10', '100000', 'isolated');
    w.order(3, 'sell', '100', '4200', 'cross', 'ETH-PERP');
    w.order(1, 'buy', '100', '4200', 'cross', 'ETH-PERP', { timeInForce: 'ioc' });
    w.order(3, 'buy', '90', '3800', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '90', '3800', 'cross', 'ETH-PERP', { reduceOnly: true, timeInForce: 'ioc' });
    assert.equal(w.ex.linear.risk(w.id(1)).crossEquity, fx('18819'));
    w.entries.length = 0;
    const sell = w.request('sell', '10', '100000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' });
    assert.equal(w.refusal(3, sell), 'NO_LIQUIDITY', 'before: filled, the cross equity went to −1 281');
    w.tick();
    assert.equal(w.fundPaid(), 0n, 'before: the fund paid 1 281');
  });

  test('a flip is not charged the open loss of the reduce-only orders its own fill cancels', () => {
    // Account 1 (9 800) realises 2 000 of ETH loss beside its flip, and rests a reduce-only ask at
    // 97 500 behind the flip (2 500 of open loss). The flip filled in full loses 6 000 and 19.40 of
    // fee against 7 711 of equity, and cancels the reduce-only ask with the position it closes.
    const w = flipAfterEthLoss('9800', '10');
    w.order(1, 'sell', '1', '97500', 'cross', 'BTC-PERP', { reduceOnly: true });
    assert.equal(w.ex.linear.risk(w.id(1)).crossEquity, fx('7711'));
    w.order(3, 'buy', '2', '97000', 'cross', 'BTC-PERP', { timeInForce: 'ioc' }); // before: NO_LIQUIDITY
    assert.equal(w.size(1), -10_000, 'flipped short');
    assert.equal(w.ex.linear.findAccount(w.id(1))!.orders.size, 0, 'the reduce-only ask went with the long');
    w.tick();
    assert.equal(w.fundPaid(), 0n);
  });

});
