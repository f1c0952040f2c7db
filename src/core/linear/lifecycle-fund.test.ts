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
import { Exchange } from '../exchange.ts';
import { systemAccount, type LedgerEntry } from '../ledger/ledger.ts';
import { fx, type Fixed } from '../money.ts';
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
    this.run({ type: 'index.publish', underlying, price: fx(price), sourceTs: this.now + 1000 });
  }

  tick() {
    this.run({ type: 'clock.tick' });
  }

  order(n: number, side: 'buy' | 'sell', qty: string, price: string | null, mode: MarginMode = 'cross', marketId = 'BTC-PERP') {
    const request: OrderRequest = {
      marketId, side: side === 'buy' ? 0 : 1, type: price === null ? 'market' : 'limit',
      quantity: fx(qty), price: price === null ? null : fx(price),
      timeInForce: price === null ? 'ioc' : 'gtc',
      postOnly: false, reduceOnly: false, marginMode: mode, clientOrderId: null, stopPrice: null,
      takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null,
    };
    this.run({ type: 'perp.place', account: addr(n), request });
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
    w.order(2, 'buy', '0.0001', '99999.9');
    w.order(2, 'buy', '0.0001', '97000');
    w.order(1, 'sell', '0.0002', null, 'isolated'); // the second lot loses 0.29999 > its margin left
    const covers = w.entries.filter((e) => e.type === 'insurance_fund');
    assert.ok(covers.length > 0, 'the fund paid a shortfall');
    for (const e of covers) assert.equal(e.amount % 10n ** 12n, 0n, `${e.amount} is not whole micro-USDC`);
    for (const e of w.entries) assert.equal(e.amount % 10n ** 12n, 0n, `${e.type} ${e.amount}`);
    assert.ok(w.perps(1) >= 0n);
  });
});

describe('a cross account solvent through unrealised profit', () => {
  // Cash below zero is not a deficit while other positions carry the profit to pay it: the venue
  // realises that profit at the mark (the position's entry price moves, its equity does not), and
  // the fund pays only what equity cannot.
  /** Account 1 (10 000 USDC) long `btc` BTC at 100 000 and short 10 ETH at 4 000, both cross, from account 2. */
  function longBtcShortEth(btc: string): World {
    const w = new World();
    w.seedFund('10000');
    w.index('100000');
    w.index('4000', 'ETH');
    w.fund(1, '10000');
    w.fund(2, '1000000');
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


describe('cross and isolated positions in one account', () => {
  // The isolated allocations sit inside the perps bucket, ring-fenced: a cross loss is paid by the
  // cross cash (the bucket less the allocations), then by the cross profit, then by the fund, never
  // by an isolated position's margin. A bucket that stays positive can still hide a cross deficit.
  const crossCash = (w: World, n: number) => {
    const r = w.ex.linear.risk(w.id(n));
    return r.balance - r.isolatedAllocated;
  };

  test('the fund pays a cross deficit the isolated allocations would otherwise have hidden', () => {
    const w = new World();
    w.seedFund('10000');
    w.index('100000');
    w.index('4000', 'ETH');
    w.fund(1, '4000');
    w.fund(2, '1000000');
    w.order(2, 'sell', '0.5', '100000');
    w.order(1, 'buy', '0.5', null, 'isolated'); // allocation 1 000 (50×), fee 25 from the cross cash
    w.order(2, 'buy', '10', '4000', 'cross', 'ETH-PERP');
    w.order(1, 'sell', '10', null, 'cross', 'ETH-PERP'); // fee 20
    assert.equal(w.ex.linear.risk(w.id(1)).isolatedAllocated, fx('1000'));
    assert.equal(crossCash(w, 1), fx('2955'));
    w.entries.length = 0;
    w.index('4400', 'ETH'); // the ETH short 4 000 down: cross equity 2 955 − 4 000 = −1 045
    assert.equal(w.fundHeld('ETH-PERP'), -10_000, 'the fund took the ETH short over at the mark');
    const shortfall = w.entries.filter((e) => e.type === 'insurance_fund' && e.ref === 'shortfall' && e.account.kind === 'user');
    // Before the fix the fund paid only the bucket's deficit (45) and the isolated margin paid 1 000.
    assert.deepEqual(shortfall.map((e) => e.amount), [fx('1045')], 'the fund paid the cross deficit');
    assert.equal(crossCash(w, 1), 0n, 'the cross cash ends at zero, not below');
    assert.equal(w.ex.linear.risk(w.id(1)).isolatedAllocated, fx('1000'), 'the isolated margin is untouched');
    assert.equal(w.perps(1), fx('1000'), 'the bucket holds exactly the allocation');
  });

  test('an isolated allocation the cross cash cannot fund is paid from cross profit, not left unbacked', () => {
    const w = new World();
    w.seedFund('10000');
    w.index('100000');
    w.index('4000', 'ETH');
    w.fund(1, '1000');
    w.fund(2, '1000000');
    w.order(2, 'sell', '0.1', '100000');
    w.order(1, 'buy', '0.1', null); // cross, fee 5
    w.index('110000'); // BTC profit 1 000
    // All the cash leaves: what remains free is unrealised profit only.
    w.run({ type: 'wallet.transfer', account: addr(1), from: 'perps', to: 'wallet', amount: w.perps(1) });
    assert.equal(w.perps(1), 0n);
    w.order(2, 'sell', '4', '4000', 'cross', 'ETH-PERP');
    w.entries.length = 0;
    w.order(1, 'buy', '4', null, 'isolated', 'ETH-PERP'); // allocation 640 (25×), fee 8; free 780
    const eth = w.ex.linear.findAccount(w.id(1))!.position(w.ex.linear.markets.get('ETH-PERP')!, 'isolated')!;
    assert.equal(eth.isolatedMargin, fx('640'), 'the position starts with its whole initial margin');
    assert.equal(crossCash(w, 1), 0n, 'the allocation is backed by cash');
    const settled = w.entries.filter((e) => e.type === 'realized_pnl' && e.ref === 'pnl_settlement:BTC-PERP' && e.account.kind === 'user');
    assert.deepEqual(settled.map((e) => e.amount), [fx('648')], 'the BTC profit paid the allocation and the fee');
    assert.deepEqual(w.entries.filter((e) => e.type === 'insurance_fund'), [], 'the fund paid nothing');
    assert.equal(w.size(1), 1_000, 'the BTC position stays open');
  });
});
