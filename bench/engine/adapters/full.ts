/**
 * Adapter for the full linear-engine path: every workload op is a `perp.place` / `perp.cancel`
 * command applied by `Exchange.execute`, so it runs the ordered pre-trade checks, the margin gate,
 * matching, position and PnL updates, fee postings in the double-entry ledger, and event emission
 * (order, fill, position and ledger events) — everything but the journal write and HTTP.
 *
 * Market BTC-PERP (tick 0.1, step 0.0001): workload ticks and lots map one to one, the index is
 * published at 10,000.0 (tick 100,000, the workload's start mid) so every price is inside the 5 %
 * band. Buys come from two accounts and sells from two others, so self-trade prevention never
 * fires and the end state must equal the generator's shadow book. Accounts hold 1e9 USDC each, so
 * the margin gate is evaluated in full on every order but never binds. The per-account open-order
 * limits are lifted (four accounts hold the whole ~5,000-order book). Command objects are built
 * ahead of time (prepare); the timed loop is `execute` plus reading the outcome.
 */
import { coreConfig } from '../../../src/config/core.ts';
import { BUY, SELL } from '../../../src/core/book/order-book.ts';
import type { Command } from '../../../src/core/commands.ts';
import { Exchange } from '../../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../../src/core/linear/order.ts';
import { fx } from '../../../src/core/money.ts';
import type { Adapter, EndState, WorkloadOp } from './adapter.ts';
import { bookEndState } from './book-state.ts';
import { EngineIds, T_CANCEL, T_IOC, T_LIMIT, T_MARKET } from './adapter.ts';

const MARKET = 'BTC-PERP';
const TICK = 10n ** 17n; // 0.1
const STEP = 10n ** 14n; // 0.0001
const BUYERS = ['0x' + '1'.repeat(40), '0x' + '2'.repeat(40)];
const SELLERS = ['0x' + '3'.repeat(40), '0x' + '4'.repeat(40)];
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

export interface FullUnderTest {
  exchange: Exchange;
  /** workload id -> engine order id */
  ids: EngineIds;
  fills: number;
  filledLots: number;
  now: number;
}

export interface FullPrepared {
  kind: Uint8Array;
  workloadId: Int32Array;
  size: Int32Array;
  /** The place command of order ops; cancels are built in the loop (they need the engine id). */
  commands: (Command | null)[];
  accounts: string[];
}

function request(op: WorkloadOp): OrderRequest {
  const market = op.type === 'market';
  return {
    marketId: MARKET,
    side: op.side === 'buy' ? BUY : SELL,
    type: market ? 'market' : 'limit',
    quantity: BigInt(op.size) * STEP,
    price: market ? null : BigInt(op.price) * TICK,
    timeInForce: op.type === 'limit' ? 'gtc' : 'ioc',
    postOnly: false,
    reduceOnly: false,
    marginMode: 'cross',
    ...PLAIN_ORDER,
  };
}

function prepare(ops: readonly WorkloadOp[]): FullPrepared {
  const n = ops.length;
  const p: FullPrepared = {
    kind: new Uint8Array(n),
    workloadId: new Int32Array(n),
    size: new Int32Array(n),
    commands: new Array(n).fill(null),
    accounts: new Array(n),
  };
  const KIND = { limit: T_LIMIT, ioc: T_IOC, market: T_MARKET, cancel: T_CANCEL } as const;
  for (let i = 0; i < n; i++) {
    const op = ops[i]!;
    p.kind[i] = KIND[op.type];
    p.workloadId[i] = op.id;
    p.size[i] = op.size;
    const account = (op.side === 'buy' ? BUYERS : SELLERS)[op.id & 1]!;
    p.accounts[i] = account;
    if (op.type !== 'cancel') p.commands[i] = { type: 'perp.place', account, request: request(op) };
  }
  return p;
}

function newBook(): FullUnderTest {
  const base = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 86_400_000 });
  // Two accounts per side hold the whole book (~2,500 resting orders each): lift only the
  // open-order limits, which exist to protect the venue from one client, not to shape this run.
  const limits = { ...base.linear.limits, maxOpenOrdersPerMarket: 1e9, maxOpenOrdersPerAccount: 1e9 };
  const exchange = new Exchange({ ...base, linear: { ...base.linear, limits } });
  let now = T0;
  const run = (c: Command) => {
    const outcome = exchange.execute(c, now++);
    if (!outcome.ok) throw new Error(`setup command ${c.type} failed: ${outcome.code} ${outcome.message}`);
  };
  for (const [i, account] of [...BUYERS, ...SELLERS].entries()) {
    run({ type: 'chain.deposit_observed', txHash: `0x${i}`, account, amount: fx('1000000000'), confirmations: 1 });
    run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx('1000000000') });
  }
  run({ type: 'index.publish', underlying: 'BTC', price: fx('10000'), sourceTs: now });
  return { exchange, ids: new EngineIds(), fills: 0, filledLots: 0, now };
}

function apply(t: FullUnderTest, p: FullPrepared, i: number): number {
  const k = p.kind[i]!;
  const wid = p.workloadId[i]!;
  if (k === T_CANCEL) {
    const orderId = t.ids.take(wid);
    if (orderId === 0) return 1;
    const out = t.exchange.execute({ type: 'perp.cancel', account: p.accounts[i]!, orderId }, t.now);
    return out.ok ? 0 : 1;
  }
  const out = t.exchange.execute(p.commands[i] as Command & { type: 'perp.place' }, t.now);
  if (!out.ok) return 0; // a market/ioc order that found no liquidity: nothing rests, as in the shadow book
  const order = out.result.order;
  if (order.status === 'open') t.ids.set(wid, Number(order.id));
  for (const e of out.events) {
    if (e.type !== 'fill') continue;
    t.fills++;
    t.filledLots += Number(e.fill.quantity / STEP);
  }
  return 0;
}

function replay(t: FullUnderTest, p: FullPrepared): number {
  let misses = 0;
  const n = p.kind.length;
  for (let i = 0; i < n; i++) misses += apply(t, p, i);
  return misses;
}

function endState(t: FullUnderTest): EndState {
  return bookEndState(t.exchange.linear.markets.get(MARKET)!.book, t.fills, t.filledLots);
}

export const fullAdapter: Adapter<FullUnderTest, FullPrepared> = {
  name: 'full',
  engine: 'Exchange.execute(perp.place/perp.cancel): checks, margin gate, matching, positions, fees, ledger, events',
  prepare,
  newBook,
  apply,
  replay,
  endState,
};
