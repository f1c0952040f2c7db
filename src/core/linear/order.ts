/**
 * A perp/futures order as the linear engine keeps it while it is live (untriggered or resting).
 * It is the book's node too (extends BookOrder), so a resting order costs one object. Terminal
 * orders leave memory; their history lives in the store's orders table.
 */
import { BookOrder } from '../book/order-book.ts';
import type { SelfTradePrevention, Side } from '../book/order-book.ts';
import type { Fixed } from '../money.ts';
import type { FillRecord, MarginMode, OrderStatus, OrderType, TimeInForce } from '../records.ts';
import type { LinearMarket } from './market.ts';
import type { Position } from './position.ts';

/** An order request with every field parsed and defaulted (the gateway validated the wire form). */
export interface OrderRequest {
  readonly marketId: string;
  readonly side: Side;
  readonly type: OrderType;
  readonly quantity: Fixed;
  readonly price: Fixed | null;
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
  readonly reduceOnly: boolean;
  readonly marginMode: MarginMode;
  readonly clientOrderId: string | null;
  readonly stopPrice: Fixed | null;
  readonly takeProfitPrice: Fixed | null;
  readonly stopLossPrice: Fixed | null;
  readonly selfTradePrevention: SelfTradePrevention;
  readonly quoteId: string | null;
  /**
   * An isolated order's chosen leverage (fixed-point, 1 up to the tier's maximum): its fills post
   * notional / leverage of margin, never less than the tiers' initial margin. Absent: the tiers'
   * margin (and in every journal written before it).
   */
  readonly leverage?: Fixed;
}

/** The optional parts of a request, left out: no client id, trigger, exits or quote; default self-trade prevention. */
export const PLAIN_ORDER = {
  clientOrderId: null,
  stopPrice: null,
  takeProfitPrice: null,
  stopLossPrice: null,
  selfTradePrevention: 'cancel_maker',
  quoteId: null,
} as const satisfies Partial<OrderRequest>;

/** What makes a conditional order fire: the mark reaching `price` from below (+1) or above (-1). */
export interface Trigger {
  readonly price: Fixed;
  readonly direction: 1 | -1;
}

export class LinearOrder extends BookOrder {
  readonly market: LinearMarket;
  /** What was asked; an amend replaces it (price, quantity) while the order is out of the book. */
  request: OrderRequest;
  /** Lots ordered; grows only for take-profit/stop-loss exits as their parent fills. */
  originalLots: number;
  filledLots = 0;
  /** Sum of price x quantity over fills (exact), for the average fill price. */
  filledNotional: Fixed = 0n;
  status: OrderStatus;
  trigger: Trigger | null;
  rejectReason: string | null = null;
  /** Placed through a quote endpoint (bulk `cancelAll` replaces these). */
  readonly isQuote: boolean;
  /** For take-profit / stop-loss children: the other half of the pair, cancelled when one fires. */
  sibling: LinearOrder | null = null;
  /** For take-profit / stop-loss children: the order whose fills they protect. */
  parent: LinearOrder | null = null;
  /** The take-profit / stop-loss exits protecting what this order's fills opened (null: none waiting). */
  exits: LinearOrder[] | null = null;
  /** Exits it declares but has not created, counted against its account's limits (account.ts). */
  pendingExits = 0;
  /** Lots counted in the account's resting-order totals (0 when not resting or reduce-only). */
  reservedLots = 0;
  /** Its share of its totals' leverageSurcharge (margin.ts), for its reservedLots. */
  reservedSurcharge: Fixed = 0n;
  /** For a reduce-only order: lots counted in its position's restingReduceOnlyLots, and that position. */
  countedReduceOnlyLots = 0;
  countedIn: Position | null = null;
  /** Fills this order took as the taker in the current command (its result); null after the command. */
  takerFills: FillRecord[] | null = null;
  readonly createdAt: number;
  updatedAt: number;

  constructor(o: {
    id: number;
    accountId: number;
    market: LinearMarket;
    request: OrderRequest;
    priceTicks: number;
    lots: number;
    trigger: Trigger | null;
    isQuote: boolean;
    now: number;
  }) {
    super(o.id, o.accountId, o.request.side, o.priceTicks, o.lots);
    this.market = o.market;
    this.request = o.request;
    this.originalLots = o.lots;
    this.trigger = o.trigger;
    this.status = o.trigger === null ? 'open' : 'untriggered';
    this.isQuote = o.isQuote;
    this.createdAt = o.now;
    this.updatedAt = o.now;
  }

  get accountId(): number {
    return this.owner;
  }

  private quantityLots = -1;
  private quantityValue: Fixed = 0n;

  /** The ordered quantity as an exact decimal (cached; it changes only for growing exits). */
  quantity(): Fixed {
    if (this.quantityLots !== this.originalLots) {
      this.quantityLots = this.originalLots;
      this.quantityValue = this.market.units.size(this.originalLots);
    }
    return this.quantityValue;
  }
}
