/**
 * Adapter for nodejs-order-book (npm), driven exactly as /work/shared/bench/nob-driver.mjs drives it:
 * one argument object per op built ahead of time (string ids, 'buy'/'sell' sides, timeInForce 'IOC'
 * for ioc), book.limit() for limit and ioc, book.market() for market, book.cancel(id) for cancel.
 * The package is loaded with createRequire from the repository root (its CommonJS build), as the
 * driver does from the folder it was installed in. Exercised by bench/engine/book-bench.ts.
 */

import { createRequire } from 'node:module';
import type { Adapter, EndState, WorkloadOp } from './adapter.ts';
import { T_CANCEL, T_IOC, T_LIMIT, T_MARKET } from './adapter.ts';

/** The slice of nodejs-order-book's API the benchmark uses (its shipped typings path is broken). */
interface NobBook {
  limit(a: object): unknown;
  market(a: object): unknown;
  cancel(id: string): unknown;
  depth(): [asks: [number, number][], bids: [number, number][]];
  orders: Record<string, unknown>;
}
interface NobModule { OrderBook: new () => NobBook }

const require = createRequire(new URL('../../../package.json', import.meta.url));
const { OrderBook } = require('nodejs-order-book') as NobModule;
const version = (require('nodejs-order-book/package.json') as { version: string }).version;

export interface NobPrepared { kind: Uint8Array; arg: unknown[] }

function prepare(ops: readonly WorkloadOp[]): NobPrepared {
  const kind = new Uint8Array(ops.length);
  const arg = new Array<unknown>(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as WorkloadOp;
    switch (op.type) {
      case 'limit':
        kind[i] = T_LIMIT;
        arg[i] = { side: op.side, id: String(op.id), size: op.size, price: op.price };
        break;
      case 'ioc':
        kind[i] = T_IOC;
        arg[i] = { side: op.side, id: String(op.id), size: op.size, price: op.price, timeInForce: 'IOC' };
        break;
      case 'market':
        kind[i] = T_MARKET;
        arg[i] = { side: op.side, size: op.size };
        break;
      case 'cancel':
        kind[i] = T_CANCEL;
        arg[i] = String(op.id);
        break;
      default:
        throw new Error(`unknown op type ${(op as { type: string }).type}`);
    }
  }
  return { kind, arg };
}

function applyOne(book: NobBook, k: number, a: unknown): number {
  switch (k) {
    case T_LIMIT: book.limit(a as object); return 0;
    case T_IOC: book.limit(a as object); return 0;
    case T_MARKET: book.market(a as object); return 0;
    default: return book.cancel(a as string) === undefined ? 1 : 0;
  }
}

function replay(book: NobBook, p: NobPrepared): number {
  const { kind, arg } = p;
  let misses = 0;
  for (let i = 0; i < kind.length; i++) misses += applyOne(book, kind[i] as number, arg[i]);
  return misses;
}

function endState(book: NobBook): EndState {
  const [asks, bids] = book.depth();
  let bidQty = 0;
  let askQty = 0;
  for (const [, q] of bids) bidQty += q;
  for (const [, q] of asks) askQty += q;
  return {
    restingOrders: Object.keys(book.orders).length, // private field, read only for the check
    bidQty,
    askQty,
    bestBid: bids.length ? (bids[0] as [number, number])[0] : null,
    bestAsk: asks.length ? (asks[0] as [number, number])[0] : null,
  };
}

export const nobAdapter: Adapter<NobBook, NobPrepared> = {
  name: 'nob',
  engine: `nodejs-order-book@${version}`,
  prepare,
  newBook: () => new OrderBook(),
  apply: (book, p, i) => applyOne(book, p.kind[i] as number, p.arg[i]),
  replay,
  endState,
};
