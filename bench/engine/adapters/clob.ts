/**
 * Adapter for the CLOB engine's full path on a spot pair: every workload op is a `clob.place` /
 * `clob.cancel` command applied by `Exchange.execute`, so it runs the ordered checks, the funding
 * locks of the spot bucket (quote for buys, base for sells), matching, the atomic two-asset swap
 * with fees in the double-entry ledger, and event emission — everything but the journal and HTTP.
 *
 * Market BTC-USDC (tick 0.01, step 0.00001, minimum 0.0001): workload ticks map one to one (the
 * index is published at 1,000.00, tick 100,000, inside the 10 % band) and one workload lot is ten
 * engine lots (0.0001 BTC, the minimum size); the end state is divided back. Buys come from two
 * accounts holding USDC and sells from two holding BTC (granted from the treasury), so self-trade
 * prevention never fires; balances are large enough that no lock is refused. The per-account
 * open-order limits are lifted (four accounts hold the whole book). Commands are built ahead.
 */
import { coreConfig } from '../../../src/config/core.ts';
import { BUY, SELL } from '../../../src/core/book/order-book.ts';
import type { Command } from '../../../src/core/commands.ts';
import { Exchange } from '../../../src/core/exchange.ts';
import type { OrderRequest } from '../../../src/core/linear/order.ts';
import { fx } from '../../../src/core/money.ts';
import type { Adapter, EndState, WorkloadOp } from './adapter.ts';
import { EngineIds, T_CANCEL, T_IOC, T_LIMIT, T_MARKET } from './adapter.ts';
import { bookEndState } from './book-state.ts';

const MARKET = 'BTC-USDC';
const TICK = 10n ** 16n; // 0.01
const LOT_SCALE = 10; // engine lots per workload lot
const STEP = 10n ** 13n; // 0.00001
const BUYERS = ['0x' + '5'.repeat(40), '0x' + '6'.repeat(40)];
const SELLERS = ['0x' + '7'.repeat(40), '0x' + '8'.repeat(40)];
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

export interface ClobUnderTest {
  exchange: Exchange;
  ids: EngineIds;
  fills: number;
  filledLots: number;
  now: number;
}

export interface ClobPrepared {
  kind: Uint8Array;
  workloadId: Int32Array;
  commands: (Command | null)[];
  accounts: string[];
}

function request(op: WorkloadOp): OrderRequest {
  const market = op.type === 'market';
  return {
    marketId: MARKET, side: op.side === 'buy' ? BUY : SELL, type: market ? 'market' : 'limit',
    quantity: BigInt(op.size * LOT_SCALE) * STEP, price: market ? null : BigInt(op.price) * TICK,
    timeInForce: op.type === 'limit' ? 'gtc' : 'ioc', postOnly: false, reduceOnly: false, marginMode: 'cross',
    clientOrderId: null, stopPrice: null, takeProfitPrice: null, stopLossPrice: null,
    selfTradePrevention: 'cancel_maker', quoteId: null,
  };
}

function prepare(ops: readonly WorkloadOp[]): ClobPrepared {
  const n = ops.length;
  const p: ClobPrepared = { kind: new Uint8Array(n), workloadId: new Int32Array(n), commands: new Array(n).fill(null), accounts: new Array(n) };
  const KIND = { limit: T_LIMIT, ioc: T_IOC, market: T_MARKET, cancel: T_CANCEL } as const;
  for (let i = 0; i < n; i++) {
    const op = ops[i]!;
    p.kind[i] = KIND[op.type];
    p.workloadId[i] = op.id;
    const account = (op.side === 'buy' ? BUYERS : SELLERS)[op.id & 1]!;
    p.accounts[i] = account;
    if (op.type !== 'cancel') p.commands[i] = { type: 'clob.place', account, request: request(op) };
  }
  return p;
}

function newBook(): ClobUnderTest {
  const base = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 86_400_000 });
  const limits = { ...base.clob.limits, maxOpenOrdersPerMarket: 1e9, maxOpenOrdersPerAccount: 1e9 };
  const exchange = new Exchange({ ...base, clob: { ...base.clob, limits } });
  let now = T0;
  const run = (c: Command) => {
    const outcome = exchange.execute(c, now++);
    if (!outcome.ok) throw new Error(`setup command ${c.type} failed: ${outcome.code} ${outcome.message}`);
  };
  for (const [i, account] of BUYERS.entries()) {
    run({ type: 'chain.deposit_observed', txHash: `0xc${i}`, account, amount: fx('1000000000'), confirmations: 1 });
    run({ type: 'wallet.transfer', account, from: 'wallet', to: 'spot', amount: fx('1000000000') });
  }
  for (const account of SELLERS) run({ type: 'treasury.grant', account, asset: 'BTC', amount: fx('10000000') });
  run({ type: 'index.publish', underlying: 'BTC', price: fx('1000'), sourceTs: now });
  return { exchange, ids: new EngineIds(), fills: 0, filledLots: 0, now };
}

function apply(t: ClobUnderTest, p: ClobPrepared, i: number): number {
  const wid = p.workloadId[i]!;
  if (p.kind[i] === T_CANCEL) {
    const orderId = t.ids.take(wid);
    if (orderId === 0) return 1;
    return t.exchange.execute({ type: 'clob.cancel', account: p.accounts[i]!, orderId }, t.now).ok ? 0 : 1;
  }
  const out = t.exchange.execute(p.commands[i] as Command & { type: 'clob.place' }, t.now);
  if (!out.ok) return 0; // a market/ioc order that found no liquidity
  if (out.result.order.status === 'open') t.ids.set(wid, Number(out.result.order.id));
  for (const e of out.events) {
    if (e.type !== 'fill') continue;
    t.fills++;
    t.filledLots += Number(e.fill.quantity / STEP);
  }
  return 0;
}

function replay(t: ClobUnderTest, p: ClobPrepared): number {
  let misses = 0;
  for (let i = 0; i < p.kind.length; i++) misses += apply(t, p, i);
  return misses;
}

function endState(t: ClobUnderTest): EndState {
  return bookEndState(t.exchange.clob.markets.get(MARKET)!.book, t.fills, t.filledLots, LOT_SCALE);
}

export const clobAdapter: Adapter<ClobUnderTest, ClobPrepared> = {
  name: 'clob',
  engine: 'Exchange.execute(clob.place/clob.cancel) on BTC-USDC: checks, spot locks, matching, two-asset swaps, fees, ledger, events',
  prepare,
  newBook,
  apply,
  replay,
  endState,
};
