/**
 * In-process test venue for the CLOB engine (spot and options): one `Exchange` built from the real
 * configuration, a clock that moves 1 ms per command unless told otherwise, helpers to fund
 * buckets, grant spot inventory, publish the index, tick, and place orders from short literals.
 *
 * After every command it checks the invariants the engine promises (`checkClobInvariants`):
 * the ledger sums to zero per asset (USDC, BTC, ETH), no user bucket is negative, every account's
 * hold per (bucket, asset) equals the sum of its live orders' reserves and a per-lot order holds
 * exactly remaining x per-lot, resting option sell lots equal the resting sells, spot holds never
 * exceed the balance, option buy holds never exceed the options balance, every book is uncrossed,
 * the engine's kept option margin and order indexes agree with a recomputation (ClobEngine.audit),
 * and a rejected command emitted nothing. Used by src/core/clob/*.test.ts and the property test.
 */
import assert from 'node:assert/strict';
import { coreConfig } from '../../src/config/core.ts';
import { BUY } from '../../src/core/book/order-book.ts';
import type { ClobLimits } from '../../src/core/clob/config.ts';
import type { OptionPricing } from '../../src/core/clob/engine.ts';
import type { ClobMarket } from '../../src/core/clob/market.ts';
import { optionFunds } from '../../src/core/clob/risk.ts';
import { optionInstruments } from '../../src/core/clob/views.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type Outcome } from '../../src/core/exchange.ts';
import type { Bucket } from '../../src/core/ledger/ledger.ts';
import type { PlaceResult } from '../../src/core/linear/engine.ts';
import type { OrderRequest } from '../../src/core/linear/order.ts';
import { formatDecimal, fx, type Fixed } from '../../src/core/money.ts';
import type { TimeInForce } from '../../src/core/records.ts';

export const addr = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;
export const d = (v: Fixed | null | undefined): string | null =>
  (v === null || v === undefined ? null : formatDecimal(v));

export interface ClobOrderFields {
  market: string;
  side: 'buy' | 'sell';
  qty: string;
  price?: string;
  tif?: TimeInForce;
  postOnly?: boolean;
  reduceOnly?: boolean;
  cid?: string;
  quoteId?: string;
  stp?: 'cancel_maker' | 'cancel_taker' | 'cancel_both';
}

export function clobRequest(o: ClobOrderFields): OrderRequest {
  const type = o.price === undefined ? 'market' : 'limit';
  return {
    marketId: o.market,
    side: o.side === 'buy' ? 0 : 1,
    type,
    quantity: fx(o.qty),
    price: o.price === undefined ? null : fx(o.price),
    timeInForce: o.tif ?? (type === 'market' ? 'ioc' : 'gtc'),
    postOnly: o.postOnly ?? false,
    reduceOnly: o.reduceOnly ?? false,
    marginMode: 'cross',
    clientOrderId: o.cid ?? null,
    stopPrice: null,
    takeProfitPrice: null,
    stopLossPrice: null,
    selfTradePrevention: o.stp ?? 'cancel_maker',
    quoteId: o.quoteId ?? null,
  };
}

/** Every invariant of the CLOB engine and the ledger that must hold between commands. */
export function checkClobInvariants(ex: Exchange): void {
  for (const [asset, sum] of ex.ledger.totalsByAsset()) assert.equal(sum, 0n, `ledger unbalanced: ${asset}`);
  assert.deepEqual(ex.ledger.negativeUserAccounts(), []);
  const clob = ex.clob;
  for (const m of clob.markets.values()) m.book.checkInvariants();
  for (const a of clob.allAccounts()) {
    const held = new Map<string, Fixed>();
    const sells = new Map<ClobMarket, number>();
    for (const o of a.orders.values()) {
      assert.equal(o.status, 'open', `live order ${o.id} is ${o.status}`);
      assert.ok(o.level !== null, `live order ${o.id} rests`);
      const key = `${clob.bucketOf(o.market)}:${clob.reserveAsset(o)}`;
      held.set(key, (held.get(key) ?? 0n) + o.reserve);
      if (o.reservePerLot !== null) {
        const expected = o.reservePerLot * BigInt(o.remainingLots);
        assert.equal(o.reserve, expected, `order ${o.id} holds remaining x per lot`);
      }
      if (o.market.isOption && o.side !== BUY) {
        assert.equal(o.restingSellLots, o.remainingLots, `order ${o.id} counts its resting sell lots`);
        sells.set(o.market, (sells.get(o.market) ?? 0) + o.remainingLots);
      }
    }
    for (const bucket of ['spot', 'options'] as Bucket[]) {
      for (const asset of ['USDC', 'BTC', 'ETH']) {
        const h = a.held(bucket, asset);
        assert.equal(
          h,
          held.get(`${bucket}:${asset}`) ?? 0n,
          `account ${a.id} hold ${bucket}:${asset} = sum of reserves`,
        );
        assert.ok(
          h <= ex.ledger.userBalance(a.id, bucket, asset),
          `account ${a.id} ${bucket}:${asset} holds more than it has`,
        );
      }
    }
    for (const m of clob.markets.values()) {
      assert.equal(a.sellLots(m), sells.get(m) ?? 0, `account ${a.id} resting sells on ${m.spec.id}`);
    }
    checkReportedLocks(ex, a.id);
  }
  assert.deepEqual(clob.audit(), [], 'kept option margin and order indexes agree with a recomputation');
}

/** What /wallet/assets reports as locked: spot = the order holds; options = holds + margin, capped. */
function checkReportedLocks(ex: Exchange, accountId: number): void {
  const account = ex.clob.findAccount(accountId)!;
  const rows = ex.assetBalances(ex.accounts.byNumber(accountId)!.address);
  for (const r of rows.filter((x) => x.bucket === 'spot')) {
    assert.equal(r.locked, account.held('spot', r.asset), `account ${accountId} spot ${r.asset} locked`);
  }
  const options = rows.find((x) => x.bucket === 'options' && x.asset === 'USDC')!;
  const f = optionFunds(ex.clob, account, ex.now());
  const used = f.reserved + f.initialMargin;
  assert.equal(options.locked, used > f.balance ? f.balance : used, `account ${accountId} options locked`);
}

export class ClobVenue {
  readonly ex: Exchange;
  t: number;
  private txs = 0;

  constructor(start: number, indexMaxAgeMs = 3_600_000, limits: Partial<ClobLimits> = {}) {
    const config = coreConfig({ depositConfirmations: 1, indexMaxAgeMs });
    this.ex = new Exchange({ ...config, clob: { ...config.clob, limits: { ...config.clob.limits, ...limits } } });
    this.t = start;
  }

  get clob() {
    return this.ex.clob;
  }

  usePricing(p: OptionPricing): void {
    this.ex.clob.usePricing(p);
  }

  run(command: Command, at?: number): Outcome<unknown> {
    this.t = at ?? this.t + 1;
    const outcome = this.ex.execute(command, this.t) as Outcome<unknown>;
    checkClobInvariants(this.ex);
    return outcome;
  }

  ok<T = unknown>(command: Command, at?: number): T {
    const out = this.run(command, at);
    assert.ok(out.ok, `command ${command.type} refused: ${out.ok ? '' : `${out.code} ${out.message}`}`);
    return out.result as T;
  }

  /** Deposits USDC and moves it to `bucket`. */
  fund(address: string, usdc: string, bucket: Bucket = 'spot'): void {
    const txHash = `0x${(++this.txs).toString(16).padStart(64, '0')}`;
    const amount = fx(usdc);
    this.ok({ type: 'chain.deposit_observed', txHash, account: address, amount, confirmations: 1 });
    if (bucket !== 'wallet') this.ok({
      type: 'wallet.transfer',
      account: address,
      from: 'wallet',
      to: bucket,
      amount,
    });
  }

  grant(address: string, asset: string, amount: string): void {
    this.ok({ type: 'treasury.grant', account: address, asset, amount: fx(amount) });
  }

  index(underlying: string, price: string, at?: number): void {
    const t = at ?? this.t + 1;
    this.ok({ type: 'index.publish', underlying, price: fx(price), sourceTs: t }, t);
  }

  tick(at?: number): void {
    this.ok({ type: 'clock.tick' }, at);
  }

  place(address: string, o: ClobOrderFields): Outcome<PlaceResult> {
    return this.run({
      type: 'clob.place',
      account: address,
      request: clobRequest(o),
    }) as Outcome<PlaceResult>;
  }

  order(address: string, o: ClobOrderFields): PlaceResult {
    const out = this.place(address, o);
    assert.ok(out.ok, `order refused: ${out.ok ? '' : `${out.code} ${out.message}`}`);
    return out.result;
  }

  id(address: string): number {
    return this.ex.accounts.find(address)!.id;
  }

  balance(address: string, bucket: Bucket, asset = 'USDC'): string {
    const a = this.ex.accounts.find(address);
    return formatDecimal(a === undefined ? 0n : this.ex.ledger.userBalance(a.id, bucket, asset));
  }

  /** The `locked` figure of /wallet/assets for (bucket, asset). */
  locked(address: string, bucket: Bucket, asset = 'USDC'): string {
    const row = this.ex.assetBalances(address).find((r) => r.bucket === bucket && r.asset === asset);
    return formatDecimal(row?.locked ?? 0n);
  }

  available(address: string, bucket: Bucket, asset = 'USDC'): string {
    const row = this.ex.assetBalances(address).find((r) => r.bucket === bucket && r.asset === asset);
    return formatDecimal(row?.available ?? 0n);
  }

  /** An option instrument id of `underlying`: the nearest expiry (or `expiryIndex`), `type`, strike. */
  option(underlying: string, type: 'call' | 'put', strike: string, expiryIndex = 0): string {
    const all = optionInstruments(this.ex.clob, underlying);
    const expiries = [...new Set(all.map((i) => i.expiry))].sort((a, b) => a - b);
    const expiry = expiries[expiryIndex];
    const found = all.find((i) => i.expiry === expiry && i.type === type && i.strike === fx(strike));
    assert.ok(found !== undefined, `no ${underlying} ${type} ${strike} listed`);
    return found.id;
  }

  position(address: string, market: string): { size: string; entry: string | null; realized: string } | null {
    const m = this.ex.clob.markets.get(market);
    const a = this.ex.accounts.find(address);
    const p = m === undefined || a === undefined ? undefined : this.ex.clob.findAccount(a.id)?.position(m);
    if (p === undefined || p.size === 0) return null;
    return { size: d(m!.units.size(p.size))!, entry: d(p.averagePremium()), realized: d(p.realizedPnl)! };
  }

  system(name: 'insurance' | 'fees' | 'treasury', asset = 'USDC'): string {
    return formatDecimal(this.ex.ledger.balance({ kind: 'system', name, asset }));
  }
}
