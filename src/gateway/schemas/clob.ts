/**
 * Wire shapes of the options and spot venue (contract "Options and spot trading" and "account
 * reads"; decisions.md "Orders and positions"): order, amend, cancel-all, strategy, market-maker
 * protection, positions, portfolio and balances bodies, plus the formatters of core read models
 * into them. Order, fill and quote-result shapes are shared with the perp routes (orders.ts).
 */
import { Type } from 'typebox';
import type { MmpView } from '../../core/clob/mmp.ts';
import type { OptionAccountView, OptionInstrument, OptionPositionView } from '../../core/clob/views.ts';
import type { LegFigures } from '../../core/clob/strategy.ts';
import type { FillRecord } from '../../core/records.ts';
import { dec, decOrNull, iso, isoOrNull } from '../format.ts';
import { Decimal } from '../validation.ts';
import { IsoTime, NullableIsoTime, NullableString, OrNull, StringEnum } from './common.ts';
import {
  CLIENT_ID_PATTERN, ClientOrderId, fillView, FillView, OrderTypeSchema, OrderView, PositionViewSchema, PreviewView, SideSchema,
  StpSchema, TifSchema,
} from './orders.ts';

const MarketId = Type.String({
  maxLength: 40,
  description: 'instrument id from the market endpoints, e.g. BTC-USDC or BTC-25DEC26-100000-C',
});
const Underlying = Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'e.g. BTC' });

export const ClobOrderBody = Type.Object(
  {
    marketId: MarketId,
    side: SideSchema,
    quantity: Decimal('contracts (options) or base units (spot)'),
    price: Type.Optional(Decimal('limit price (required for limit orders); on a market order the worst price accepted')),
    type: Type.Optional(OrderTypeSchema),
    timeInForce: Type.Optional(TifSchema),
    postOnly: Type.Optional(Type.Boolean()),
    reduceOnly: Type.Optional(Type.Boolean({ description: 'options, ioc/fok/market only' })),
    clientOrderId: Type.Optional(ClientOrderId),
    selfTradePrevention: Type.Optional(StpSchema),
  },
  { additionalProperties: false },
);

export const ModifyBody = Type.Object(
  {
    price: Type.Optional(Decimal('new limit price')),
    quantity: Type.Optional(Decimal('new total size of the order, filled part included')),
  },
  { additionalProperties: false },
);

export const ClobCancelAllBody = Type.Union([
  Type.Object(
    {
      marketId: Type.Optional(MarketId),
      underlying: Type.Optional(Underlying),
      quoteId: Type.Optional(Type.String({ pattern: CLIENT_ID_PATTERN })),
      clientOrderId: Type.Optional(Type.String({ pattern: CLIENT_ID_PATTERN })),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);

export const ClobQuoteLevel = Type.Object(
  {
    side: SideSchema,
    price: Decimal(),
    quantity: Decimal(),
    clientOrderId: Type.Optional(ClientOrderId),
    timeInForce: Type.Optional(TifSchema),
    postOnly: Type.Optional(Type.Boolean()),
    reduceOnly: Type.Optional(Type.Boolean()),
    // The contract's ladder entry carries it (as the perp one): accepted so a shared client's
    // ladder is not refused whole; the engine's shape check refuses anything but cross per level.
    marginMode: Type.Optional(StringEnum(['isolated', 'cross'] as const, {
      description: 'default cross, the only mode of spot and options: a level with isolated is listed in '
        + '`rejected` with VALIDATION_ERROR, the other levels stand',
    })),
  },
  { additionalProperties: false },
);

const StrategyLegBody = Type.Object(
  {
    market: MarketId,
    side: SideSchema,
    quantity: Decimal(),
    price: Decimal('limit price of the leg'),
    timeInForce: Type.Optional(Type.String({ maxLength: 8, description: 'ignored: strategies are fok' })),
  },
  { additionalProperties: false },
);

export const StrategyBody = Type.Object(
  {
    strategyName: Type.Optional(Type.String({ maxLength: 64 })),
    allOrNone: Type.Optional(Type.Boolean({ description: 'default true; false is refused' })),
    cancelOnFailure: Type.Optional(Type.Boolean({ description: 'no effect: nothing of a strategy rests' })),
    legs: Type.Array(StrategyLegBody, { minItems: 2, maxItems: 8 }),
  },
  { additionalProperties: false },
);

export const StrategyResultView = Type.Object({
  strategyId: Type.String(),
  strategyName: NullableString,
  fullyFilled: Type.Boolean(),
  legs: Type.Array(
    Type.Object({ orderId: Type.String(), marketId: Type.String(), fills: Type.Array(FillView) }),
    { description: 'one filled order per leg, in the request\'s order' },
  ),
});

const LegPreview = Type.Object({
  marketId: Type.String(),
  side: SideSchema,
  quantity: Type.String(),
  price: Type.String(),
  fillableQuantity: Type.String({ description: 'what the book would fill now at the leg price' }),
  notional: Type.String({ description: 'premium or quote notional of that fill, at the makers\' prices' }),
  estFee: Type.String(),
  feeBps: Type.String(),
});

export const StrategyPreviewView = Type.Object({
  approved: Type.Boolean(),
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  legs: Type.Array(LegPreview),
});

export const ClobPreviewView = Type.Object({
  ...PreviewView.properties,
  lockAsset: Type.String({ description: 'asset of marginRequired: USDC, or the base asset of a spot sell' }),
});

export const MmpConfigBody = Type.Object(
  {
    underlying: Underlying,
    windowMs: Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'sliding window; 0 removes it' }),
    frozenMs: Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'freeze; 0 = until reset' }),
    quantityLimit: Decimal('contracts filled as maker within the window'),
    deltaLimit: Type.Optional(Decimal('|Σ signed contracts x delta| within the window')),
    vegaLimit: Type.Optional(Decimal('|Σ signed contracts x vega| within the window')),
  },
  { additionalProperties: false },
);

export const MmpStatusView = Type.Object({
  underlying: Type.String(),
  windowMs: Type.Integer(),
  frozenMs: Type.Integer(),
  quantityLimit: Type.String(),
  deltaLimit: NullableString,
  vegaLimit: NullableString,
  frozen: Type.Boolean(),
  frozenUntil: NullableIsoTime,
  triggeredAt: NullableIsoTime,
  quantity: Type.String({ description: 'contracts counted in the current window' }),
  delta: Type.String(),
  vega: Type.String(),
});

export const OptionPositionSchema = Type.Object({
  ...PositionViewSchema.properties,
  underlying: Type.String(),
  expiry: IsoTime,
  strike: Type.String(),
  optionType: StringEnum(['call', 'put']),
  riskPrice: NullableString,
  delta: NullableString,
  vega: NullableString,
  initialMargin: Type.String(),
  maintenanceMargin: Type.String(),
});

const Bucket = Type.Object({ available: Type.String(), locked: Type.String(), total: Type.String() });

export const PortfolioBalancesView = Type.Object({
  wallet: Bucket,
  perps: Bucket,
  options: Bucket,
  spot: Bucket,
  pendingWithdrawalTotal: Type.String(),
  updatedAt: IsoTime,
  spotAssets: Type.Array(Type.Object({
    asset: Type.String(), available: Type.String(), locked: Type.String(), total: Type.String(),
  }), {
    description: 'additive: the spot bucket\'s other assets (BTC, ETH) in their own units',
  }),
});

export const InstrumentView = Type.Object({
  id: Type.String(),
  underlying: Type.String(),
  expiry: IsoTime,
  strike: Type.String(),
  type: StringEnum(['call', 'put']),
  status: Type.String({ description: 'open, or settling between expiry and settlement' }),
  priceDecimals: Type.Integer(),
  sizeDecimals: Type.Integer(),
  tickSize: Type.String(),
  stepSize: Type.String(),
  minSize: Type.String(),
  maxSize: Type.String(),
  bestBid: NullableString,
  bestAsk: NullableString,
});

export function optionPositionView(p: OptionPositionView) {
  return {
    id: p.id,
    marketId: p.marketId,
    side: p.side,
    size: dec(p.size),
    entryPrice: decOrNull(p.entryPrice),
    markPrice: decOrNull(p.markPrice),
    unrealizedPnl: decOrNull(p.unrealizedPnl),
    realizedPnl: dec(p.realizedPnl),
    funding: '0', // options pay no funding
    liquidationPrice: null,
    leverage: null,
    marginMode: p.marginMode,
    margin: p.side === 'short' ? dec(p.initialMargin) : null,
    status: p.status,
    updatedAt: iso(p.updatedAt),
    underlying: p.underlying,
    expiry: iso(p.expiry),
    strike: dec(p.strike),
    optionType: p.optionType,
    riskPrice: decOrNull(p.riskPrice),
    delta: decOrNull(p.delta),
    vega: decOrNull(p.vega),
    initialMargin: dec(p.initialMargin),
    maintenanceMargin: dec(p.maintenanceMargin),
  };
}

export function mmpStatusView(m: MmpView) {
  return {
    underlying: m.underlying,
    windowMs: m.config.windowMs,
    frozenMs: m.config.frozenMs,
    quantityLimit: dec(m.config.quantityLimit),
    deltaLimit: decOrNull(m.config.deltaLimit),
    vegaLimit: decOrNull(m.config.vegaLimit),
    frozen: m.frozen,
    frozenUntil: isoOrNull(m.frozenUntil),
    triggeredAt: isoOrNull(m.triggeredAt),
    quantity: dec(m.quantity),
    delta: dec(m.delta),
    vega: dec(m.vega),
  };
}

export function legPreviewView(l: LegFigures) {
  return {
    marketId: l.marketId,
    side: l.side === 0 ? ('buy' as const) : ('sell' as const),
    quantity: dec(l.quantity),
    price: dec(l.price),
    fillableQuantity: dec(l.fillableQuantity),
    notional: dec(l.notional),
    estFee: dec(l.estFee),
    feeBps: dec(l.feeBps),
  };
}

export function strategyLegView(l: { orderId: string; marketId: string; fills: FillRecord[] }, id: number) {
  return { orderId: l.orderId, marketId: l.marketId, fills: l.fills.map((f) => fillView(f, id)) };
}

export function optionAccountSummary(v: OptionAccountView) {
  return {
    balance: dec(v.balance),
    reserved: dec(v.reserved),
    initialMargin: dec(v.initialMargin),
    maintenanceMargin: dec(v.maintenanceMargin),
    available: dec(v.available),
    unrealizedPnl: dec(v.unrealizedPnl),
    greeks: v.greeks.map((g) => ({ underlying: g.underlying, delta: dec(g.delta), vega: dec(g.vega) })),
  };
}

export function instrumentView(
  i: OptionInstrument, top: { bestBid: bigint | null; bestAsk: bigint | null }, tick: bigint, step: bigint,
) {
  return {
    id: i.id,
    underlying: i.underlying,
    expiry: iso(i.expiry),
    strike: dec(i.strike),
    type: i.type,
    status: i.status,
    priceDecimals: i.priceDecimals,
    sizeDecimals: i.sizeDecimals,
    tickSize: dec(tick),
    stepSize: dec(step),
    minSize: dec(i.minSize),
    maxSize: dec(i.maxSize),
    bestBid: decOrNull(top.bestBid),
    bestAsk: decOrNull(top.bestAsk),
  };
}

/**
 * An options/spot order, the whole Order object: order actions answer it with this request's fills
 * and the resulting option position, reads with every fill so far and the position now.
 */
export const ClobOrderResultView = Type.Object({
  ...OrderView.properties,
  fills: Type.Array(FillView, {
    description: 'order actions: the fills of this request; reads: every fill of the order so far, oldest first',
  }),
  position: OrNull(OptionPositionSchema, {
    description: 'the option position after the order (or now, for a read); null when flat, and for spot (holdings are balances)',
  }),
});

export const ClobQuoteResult = Type.Object({
  quoteId: NullableString,
  cancelled: Type.Array(Type.String()),
  orders: Type.Array(ClobOrderResultView),
  rejected: Type.Array(Type.Object({ index: Type.Integer(), error: Type.String(), message: Type.String() })),
});
