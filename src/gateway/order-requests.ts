/**
 * From a validated wire body to the core's OrderRequest: decimals parsed at the market's
 * precision (INVALID_TICK / INVALID_STEP beyond it), enums mapped, defaults applied
 * (type `limit`; timeInForce `gtc` for limits and `ioc` for market orders; cross margin;
 * self-trade prevention `cancel_maker`, the resting order is cancelled).
 */
import type { SelfTradePrevention } from '../core/book/order-book.ts';
import type { OrderRequest } from '../core/linear/order.ts';
import type { MarketSpec } from '../core/markets.ts';
import type { MarginMode, OrderType, SideName, TimeInForce } from '../core/records.ts';
import type { Fixed } from '../core/money.ts';
import { checkDecimalFormat, parseAmount, parsePrice, parseSize } from './decimals.ts';
import { apiError } from './errors.ts';

export interface OrderBodyFields {
  readonly side: SideName;
  readonly quantity: string;
  readonly type?: OrderType;
  readonly price?: string;
  readonly timeInForce?: TimeInForce;
  readonly postOnly?: boolean;
  readonly reduceOnly?: boolean;
  readonly marginMode?: MarginMode;
  readonly clientOrderId?: string;
  readonly stopPrice?: string;
  readonly takeProfitPrice?: string;
  readonly stopLossPrice?: string;
  readonly selfTradePrevention?: SelfTradePrevention;
  /** An isolated order's leverage: a whole number or a decimal string (at most 2 places). */
  readonly leverage?: number | string;
}

const DECIMAL_FIELDS = ['quantity', 'price', 'stopPrice', 'takeProfitPrice', 'stopLossPrice'] as const;

/**
 * The contract's first checks, before the market is looked up: every decimal of every order in the
 * request well formed and positive (400 INVALID_DECIMAL), and a limit order's price present.
 */
export function checkOrderBodies(bodies: readonly OrderBodyFields[]): void {
  for (const body of bodies) {
    for (const field of DECIMAL_FIELDS) {
      const value = body[field];
      if (value !== undefined) checkDecimalFormat(value, field);
    }
    if ((body.type ?? 'limit') === 'limit' && body.price === undefined) throw apiError('VALIDATION_ERROR', 'price is required for a limit order');
  }
}

/** The core's request for one order of a market; the caller ran checkOrderBodies on the whole request first. */
export function orderRequest(body: OrderBodyFields, spec: MarketSpec, quoteId: string | null = null): OrderRequest {
  const type = body.type ?? 'limit';
  const price = body.price === undefined ? null : parsePrice(body.price, 'price', spec.priceDecimals);
  const optionalPrice = (v: string | undefined, name: string) => (v === undefined ? null : parsePrice(v, name, spec.priceDecimals));
  return {
    marketId: spec.id,
    side: body.side === 'buy' ? 0 : 1,
    type,
    quantity: parseSize(body.quantity, 'quantity', spec.sizeDecimals),
    price,
    timeInForce: body.timeInForce ?? (type === 'market' ? 'ioc' : 'gtc'),
    postOnly: body.postOnly ?? false,
    reduceOnly: body.reduceOnly ?? false,
    marginMode: body.marginMode ?? 'cross',
    clientOrderId: body.clientOrderId ?? null,
    stopPrice: optionalPrice(body.stopPrice, 'stopPrice'),
    takeProfitPrice: optionalPrice(body.takeProfitPrice, 'takeProfitPrice'),
    stopLossPrice: optionalPrice(body.stopLossPrice, 'stopLossPrice'),
    selfTradePrevention: body.selfTradePrevention ?? 'cancel_maker',
    quoteId,
    // Only when given: a request without it keeps the journal's compact shape of every older request.
    ...(body.leverage === undefined ? {} : { leverage: parseLeverage(body.leverage) }),
  };
}

/** A leverage as the core takes it: fixed-point, positive, at most 2 decimal places (the core bounds it). */
function parseLeverage(value: number | string): Fixed {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    throw apiError('VALIDATION_ERROR', 'leverage must be a whole number or a decimal string such as "2.5"');
  }
  return parseAmount(String(value), 'leverage', 2);
}

/**
 * An amend's change (POST /orders/{id}/modify and /perps/orders/{id}/modify, the same body): the
 * new price and the new total quantity at the precision of the order's market (`specOf` finds the
 * order, answering 404/409 when it is not live), null where unchanged. An empty change is refused
 * before the order is looked up.
 */
export async function amendChange(
  body: { readonly price?: string; readonly quantity?: string },
  specOf: () => Promise<MarketSpec>,
): Promise<{ price: Fixed | null; quantity: Fixed | null }> {
  if (body.price === undefined && body.quantity === undefined) throw apiError('VALIDATION_ERROR', 'give a price, a quantity or both');
  const spec = await specOf();
  return {
    price: body.price === undefined ? null : parsePrice(body.price, 'price', spec.priceDecimals),
    quantity: body.quantity === undefined ? null : parseSize(body.quantity, 'quantity', spec.sizeDecimals),
  };
}
