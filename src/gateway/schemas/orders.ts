/**
 * Wire shapes of orders, fills, positions and quotes (contract "Order", "Preview result", "Quote
 * ladder entry"; decisions.md "Orders and positions"), shared by the perp and the options/spot
 * routes, plus the functions that format core records into them.
 */
import { Type } from 'typebox';
import type { FillRecord, OrderRecord, SideName } from '../../core/records.ts';
import type { PositionView } from '../../core/linear/views.ts';
import type { Fixed } from '../../core/money.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { Decimal } from '../validation.ts';
import { IsoTime, NullableString, OrNull, StringEnum } from './common.ts';


export const SideSchema = StringEnum(['buy', 'sell'] as const);
export const OrderTypeSchema = StringEnum(['limit', 'market'] as const);
export const TifSchema = StringEnum(['gtc', 'ioc', 'fok'] as const);
export const MarginModeSchema = StringEnum(['isolated', 'cross'] as const);
export const StpSchema = StringEnum(['cancel_maker', 'cancel_taker', 'cancel_both'] as const);
/** A client's idempotency tag: 1-36 of [A-Za-z0-9._:/-] (orders, quotes, transfers, withdrawals). */
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9._:/-]{1,36}$';

export const ClientOrderId = Type.String({
  pattern: CLIENT_ID_PATTERN,
  description: 'idempotency tag, 1-36 of [A-Za-z0-9._:/-], unique per account among live orders and for 24 h after an order ends',
});
export const QuoteId = Type.String({ pattern: CLIENT_ID_PATTERN });

export const PerpOrderBody = Type.Object(
  {
    marketId: Type.String({ maxLength: 40 }),
    side: SideSchema,
    quantity: Decimal(),
    type: Type.Optional(OrderTypeSchema),
    price: Type.Optional(Decimal('limit price; required for limit orders')),
    timeInForce: Type.Optional(TifSchema),
    postOnly: Type.Optional(Type.Boolean()),
    reduceOnly: Type.Optional(Type.Boolean()),
    marginMode: Type.Optional(MarginModeSchema),
    clientOrderId: Type.Optional(ClientOrderId),
    stopPrice: Type.Optional(Decimal('trigger: the order waits until the mark reaches this price')),
    takeProfitPrice: Type.Optional(Decimal('attaches a reduce-only take-profit exit to the resulting position')),
    stopLossPrice: Type.Optional(Decimal('attaches a reduce-only stop-loss exit to the resulting position')),
    selfTradePrevention: Type.Optional(StpSchema),
    leverage: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Decimal()], {
      description: 'isolated orders only (400 for a cross order: a cross position draws on the whole account\'s equity): 1 up to the margin tier\'s maximum leverage for the order\'s notional (400 above it), a whole number or a decimal string of at most 2 places. The isolated margin posted for the order\'s fills is notional / leverage, never less than the tier\'s initial margin, and the margin gate reserves that while the order rests. Without it, the tier\'s initial margin (the market\'s maximum leverage).',
    })),
  },
  { additionalProperties: false },
);

export const FillView = Type.Object({
  tradeId: Type.String(),
  price: Type.String(),
  quantity: Type.String(),
  liquidity: StringEnum(['maker', 'taker'] as const),
  fee: Type.String({ description: 'negative for a rebate' }),
  feeBps: Type.String(),
  createdAt: IsoTime,
});

export const PositionViewSchema = Type.Object({
  id: Type.String(),
  marketId: Type.String(),
  side: StringEnum(['long', 'short'] as const, { description: 'the side of the open size; a closed position keeps the side it had' }),
  size: Type.String(),
  entryPrice: OrNull(Type.String(), {
    description: 'cost basis / size. It also moves when the venue settles this position\'s profit to pay a loss, fee or funding the account\'s cash could not (realized_pnl ledger entry, ref pnl_settlement:<market>)',
  }),
  markPrice: NullableString,
  unrealizedPnl: NullableString,
  realizedPnl: Type.String({ description: 'realised over the position\'s life, including profit settled into cash (see entryPrice)' }),
  funding: Type.String({ description: 'funding received (positive) or paid (negative) over the position\'s life' }),
  liquidationPrice: NullableString,
  leverage: NullableString,
  marginMode: MarginModeSchema,
  margin: OrNull(Type.String(), {
    description: 'isolated: the allocation behind the position, its whole initial margin at open (opening fees come out of the cross pool as far as its cash holds them), then moved by funding, realised PnL and the fees of reducing fills; cross: the position\'s initial margin at the mark (null while the mark is stale)',
  }),
  status: StringEnum(['open', 'closed', 'liquidated'] as const),
  updatedAt: IsoTime,
});

const orderFields = {
  id: Type.String(),
  clientOrderId: NullableString,
  marketId: Type.String(),
  side: SideSchema,
  type: OrderTypeSchema,
  price: NullableString,
  quantity: Type.String(),
  filledQuantity: Type.String(),
  remainingQuantity: Type.String(),
  avgFillPrice: NullableString,
  status: StringEnum(['untriggered', 'open', 'filled', 'cancelled', 'rejected', 'expired'] as const),
  timeInForce: TifSchema,
  postOnly: Type.Boolean(),
  reduceOnly: Type.Boolean(),
  marginMode: MarginModeSchema,
  stopPrice: NullableString,
  takeProfitPrice: NullableString,
  stopLossPrice: NullableString,
  quoteId: NullableString,
  rejectReason: NullableString,
  createdAt: IsoTime,
  updatedAt: IsoTime,
  leverage: OrNull(Type.String(), { description: 'an isolated perp order\'s chosen leverage (POST /perps/orders `leverage`); null: the margin tiers\' (always null for options and spot)' }),
};

/** An order as lists return it. */
export const OrderView = Type.Object(orderFields);

/**
 * The whole Order object (decisions.md): an order action answers it with this request's fills and
 * the resulting position; a read with every fill of the order so far and the position now.
 */
export const OrderResultView = Type.Object({
  ...orderFields,
  fills: Type.Array(FillView, {
    description: 'order actions: the fills of this request; reads: every fill of the order so far, oldest first',
  }),
  position: OrNull(PositionViewSchema, {
    description: 'the caller\'s position in the order\'s market and margin mode (after the action, or now for a read); null when flat',
  }),
});

export const PreviewView = Type.Object({
  notional: Type.String({ description: 'quote currency' }),
  marginRequired: Type.String({ description: 'collateral the order would lock' }),
  estFee: Type.String({
    description: 'feeBps on notional, rounded up to the settlement unit once. The order pays it fill by fill, each fill ' +
      'rounded up on its own, so an order matched in n fills may pay up to n − 1 units (0.000001 USDC each) more',
  }),
  feeBps: Type.String({
    description: 'the rate every fill of the order is charged as taker: fixed when it starts to match, even where its ' +
      'own fills take its 30-day volume into the next tier (a resting remainder is charged as maker at fill time)',
  }),
  feeRole: StringEnum(['maker', 'taker'] as const),
  user30dVolume: Type.String(),
  approved: Type.Boolean(),
  reason: Type.Optional(Type.String({ description: 'error code of the first check that fails, when not approved' })),
  message: Type.Optional(Type.String()),
});

/**
 * The perps preview: the preview result plus the order's position as it would stand had the order
 * filled in full (additive to the contract's preview result; null where the preview cannot tell).
 */
export const PerpPreviewView = Type.Object({
  ...PreviewView.properties,
  estimatedPositionSize: OrNull(Type.String(), {
    description: 'the order\'s position (its market and margin mode) had the order filled in full at its expected ' +
      'average price: signed base units, long positive, short negative, 0 when it leaves the position flat. The expected ' +
      'average price is notional over the quantity it values: a limit order\'s own price, a market or ioc/fok order\'s ' +
      'walk of the book now (what it can take; a reduce-only order no further than the position), a stop-market order\'s ' +
      'mark. Null when the preview stops before the order\'s figures are known or the market has no fresh mark',
  }),
  estimatedEntryPrice: OrNull(Type.String(), { description: 'entry price of that position; null when flat' }),
  estimatedLiquidationPrice: OrNull(Type.String(), {
    description: 'liquidation price of that position at the current mark, by the formula GET /perps/positions uses ' +
      '(isolated: its allocation after the fill; cross: the account\'s cross equity after the fill\'s realised PnL ' +
      'and fee, every other position at its mark): the order filled as assumed, the position then shows this price. ' +
      'Null when flat or when no positive price would liquidate it',
  }),
  estimatedLeverage: OrNull(Type.String(), {
    description: 'that position\'s notional at the mark over the equity behind it (isolated: its allocation plus ' +
      'unrealised PnL; cross: the account\'s cross equity), two decimals as in GET /perps/positions; null when flat or without equity',
  }),
});

export const QuoteLevel = Type.Object(
  {
    side: SideSchema,
    price: Decimal(),
    quantity: Decimal(),
    clientOrderId: Type.Optional(ClientOrderId),
    timeInForce: Type.Optional(TifSchema),
    postOnly: Type.Optional(Type.Boolean()),
    reduceOnly: Type.Optional(Type.Boolean()),
    marginMode: Type.Optional(MarginModeSchema),
  },
  { additionalProperties: false },
);

/**
 * What order reads from the history say of retention (docs/architecture.md "History"): orders that
 * ended without a fill are pruned, and a pruned order reads as one that never existed.
 */
export const UNFILLED_RETENTION_NOTE = 'Orders that ended without any fill (cancelled, expired, rejected; replaced '
  + 'quotes included) leave the history once a retention has passed since they ended: by default 3 days, and 1 hour '
  + 'for orders placed by a bulk quote (quoteId set) (HISTORY_UNFILLED_ORDER_RETENTION_MS, '
  + 'HISTORY_UNFILLED_QUOTE_RETENTION_MS). A pruned order is answered as an unknown one. Orders with any fill, and '
  + 'fills, are kept.';

export const BulkQuoteResult = Type.Object({
  quoteId: NullableString,
  cancelled: Type.Array(Type.String()),
  orders: Type.Array(OrderResultView),
  rejected: Type.Array(Type.Object({ index: Type.Integer(), error: Type.String(), message: Type.String() })),
});

export function orderView(o: OrderRecord) {
  return {
    id: o.id,
    clientOrderId: o.clientOrderId,
    marketId: o.marketId,
    side: o.side,
    type: o.type,
    price: decOrNull(o.price),
    quantity: dec(o.quantity),
    filledQuantity: dec(o.filledQuantity),
    remainingQuantity: dec(o.remainingQuantity),
    avgFillPrice: decOrNull(o.avgFillPrice),
    status: o.status,
    timeInForce: o.timeInForce,
    postOnly: o.postOnly,
    reduceOnly: o.reduceOnly,
    marginMode: o.marginMode,
    stopPrice: decOrNull(o.stopPrice),
    takeProfitPrice: decOrNull(o.takeProfitPrice),
    stopLossPrice: decOrNull(o.stopLossPrice),
    quoteId: o.quoteId,
    rejectReason: o.rejectReason,
    createdAt: iso(o.createdAt),
    updatedAt: iso(o.updatedAt),
    leverage: decOrNull(o.leverage),
  };
}

/** A fill as the given account saw it. */
export function fillView(f: FillRecord, accountId: number) {
  const mine = f.taker.accountId === accountId ? f.taker : f.maker;
  return {
    tradeId: f.tradeId,
    price: dec(f.price),
    quantity: dec(f.quantity),
    liquidity: mine.liquidity,
    fee: dec(mine.fee),
    feeBps: dec(mine.feeBps),
    createdAt: iso(f.at),
  };
}

export function positionView(p: PositionView) {
  return {
    id: p.id,
    marketId: p.marketId,
    side: p.side,
    size: dec(p.size),
    entryPrice: decOrNull(p.entryPrice),
    markPrice: decOrNull(p.markPrice),
    unrealizedPnl: decOrNull(p.unrealizedPnl),
    realizedPnl: dec(p.realizedPnl),
    funding: dec(p.funding),
    liquidationPrice: decOrNull(p.liquidationPrice),
    leverage: leverageText(p.leverage),
    marginMode: p.marginMode,
    margin: decOrNull(p.margin),
    status: p.status,
    updatedAt: iso(p.updatedAt),
  };
}

/** A leverage as the API shows it: two decimals, the rest cut off. */
export function leverageText(leverage: Fixed | null): string | null {
  return leverage === null ? null : dec((leverage / 10n ** 16n) * 10n ** 16n);
}

export const sideName = (side: 0 | 1): SideName => (side === 0 ? 'buy' : 'sell');
