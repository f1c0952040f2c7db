/**
 * A spot or option order as the CLOB engine keeps it while it is live. Like the linear engine's
 * order it is the book's node too (extends BookOrder). It reuses the linear OrderRequest shape
 * (one order model for clients); the fields that do not apply on this venue (stop and exit prices,
 * isolated margin) are refused by the checks.
 *
 * Holds: `reserve` is what this order keeps locked now, in `reserveAsset` of the market's bucket
 * (spot or options). Limit buys and spot sells release `reservePerLot` per filled lot, so the hold
 * is always remainingLots x reservePerLot; market buys (reservePerLot null) release exactly what a
 * fill paid. Option sell orders hold no funds: their margin is counted from the resting sell lots
 * (risk.ts). Terminal orders leave memory; their history lives in the store.
 */
import { BookOrder } from '../book/order-book.ts';
import type { OrderRequest } from '../linear/order.ts';
import type { Fixed } from '../money.ts';
import type { FillRecord, OrderStatus } from '../records.ts';
import type { ClobMarket } from './market.ts';

export class ClobOrder extends BookOrder {
  readonly market: ClobMarket;
  readonly request: OrderRequest;
  /** Lots ordered (the order's total size, filled part included). */
  originalLots: number;
  filledLots = 0;
  /** Sum of price x quantity over fills (exact), for the average fill price. */
  filledNotional: Fixed = 0n;
  status: OrderStatus = 'open';
  rejectReason: string | null = null;
  /** Placed through a quote endpoint (bulk `cancelAll` replaces these; MMP counts their maker fills). */
  readonly isQuote: boolean;
  reserve: Fixed = 0n;
  reservePerLot: Fixed | null = null;
  /** Fills this order took as the taker in the current command (its result); null after the command. */
  takerFills: FillRecord[] | null = null;
  /** Lots counted in the account's resting option sell lots (margin), 0 otherwise. */
  restingSellLots = 0;
  readonly createdAt: number;
  updatedAt: number;

  constructor(o: {
    id: number;
    accountId: number;
    market: ClobMarket;
    request: OrderRequest;
    priceTicks: number;
    lots: number;
    isQuote: boolean;
    now: number;
    createdAt?: number;
  }) {
    super(o.id, o.accountId, o.request.side, o.priceTicks, o.lots);
    this.market = o.market;
    this.request = o.request;
    this.originalLots = o.lots;
    this.isQuote = o.isQuote;
    this.createdAt = o.createdAt ?? o.now;
    this.updatedAt = o.now;
  }

  /** Copies the fill history of the order this one replaces (an amend that re-queues). */
  inherit(from: ClobOrder): void {
    this.filledLots = from.filledLots;
    this.filledNotional = from.filledNotional;
  }
}
