/**
 * Perpetual and dated-future order actions (contract "Perpetuals and futures trading"):
 * place, preview, single and bulk quotes, cancel one, cancel all, close position. Every action is
 * one core command: answered after it is durable, and atomic (a bulk `cancelAll` replace is never
 * seen half done by any reader, stream or match).
 *
 * Access: order actions accept a session or an API key with scope `trade` (the contract's agent
 * workflow sends keys on single-order, cancel-one and close-position too); preview accepts scope
 * `read`; the single two-sided `POST /perps/quotes` is session only, as the contract lists it.
 */
import { Type } from 'typebox';
import type { PlaceResult } from '../../core/linear/engine.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, histories, type GatewayContext } from '../context.ts';
import { parsePrice, parseSize } from '../decimals.ts';
import { apiError } from '../errors.ts';
import { dec } from '../format.ts';
import { orderRequest } from '../order-requests.ts';
import { OrderIdParams, responses } from '../schemas/common.ts';
import {
  BulkQuoteResult,
  ClientOrderId,
  fillView,
  MarginModeSchema,
  OrderResultView,
  OrderTypeSchema,
  orderView,
  PerpOrderBody,
  positionView,
  PreviewView,
  QuoteId,
  QuoteLevel,
  TifSchema,
} from '../schemas/orders.ts';
import { Decimal } from '../validation.ts';
import { positionViewOf } from './perps-views.ts';

const ORDER_ERRORS = [400, 401, 403, 404, 409, 422, 429] as const;

export function perpsTradingRoutes(app: TypedApp, ctx: GatewayContext): void {
  const marketSpec = (marketId: string) => {
    const market = ctx.exchange.linear.markets.get(marketId);
    if (market === undefined || market.status !== 'open') throw apiError('NOT_FOUND', `market ${marketId} not found`);
    return market.spec;
  };
  const result = (r: PlaceResult, address: string) => placeView(ctx, r, address);

  app.post('/perps/orders', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Place a perpetual or dated-future order',
      description: ORDER_DESCRIPTION,
      body: PerpOrderBody,
      response: responses({ 201: OrderResultView }, ORDER_ERRORS),
    },
  }, async (req, reply) => {
    const address = callerAddress(req);
    const request = orderRequest(req.body, marketSpec(req.body.marketId));
    const placed = await execute(ctx, { type: 'perp.place', account: address, request });
    reply.status(201);
    return result(placed, address);
  });

  app.post('/perps/orders/preview', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'Dry-run an order: margin, fee and the gate decision, with no side effect',
      description: 'Runs exactly the checks a live order runs, in the same order, against the current state; `approved` false carries the code of the first failing check in `reason`.',
      body: PerpOrderBody,
      response: responses({ 200: PreviewView }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const request = orderRequest(req.body, marketSpec(req.body.marketId));
    const { plan, rejection } = ctx.exchange.previewPerpOrder(address, request, ctx.now());
    return {
      notional: dec(plan?.notional ?? 0n),
      marginRequired: dec(plan?.marginRequired ?? 0n),
      estFee: dec(plan?.estFee ?? 0n),
      feeBps: dec(plan?.feeBps ?? 0n),
      feeRole: plan?.feeRole ?? 'taker',
      user30dVolume: dec(plan?.volume30d ?? 0n),
      approved: rejection === null,
      ...(rejection === null ? {} : { reason: rejection.code, message: rejection.message }),
    };
  });

  app.post('/perps/quotes', {
    config: { access: 'session', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Place a two-sided quote (replaces the caller\'s resting orders tagged with the same quoteId)',
      body: Type.Object(
        {
          marketId: Type.String({ maxLength: 40 }),
          bid: Type.Optional(Type.Object({ price: Decimal(), quantity: Decimal(), clientOrderId: Type.Optional(ClientOrderId) }, { additionalProperties: false })),
          ask: Type.Optional(Type.Object({ price: Decimal(), quantity: Decimal(), clientOrderId: Type.Optional(ClientOrderId) }, { additionalProperties: false })),
          postOnly: Type.Optional(Type.Boolean()),
          quoteId: Type.Optional(QuoteId),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: BulkQuoteResult }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const spec = marketSpec(req.body.marketId);
    const quoteId = req.body.quoteId ?? null;
    const levels = [
      req.body.bid && { ...req.body.bid, side: 'buy' as const },
      req.body.ask && { ...req.body.ask, side: 'sell' as const },
    ].filter((l) => l !== undefined).map((l) => orderRequest({ ...l, postOnly: req.body.postOnly }, spec, quoteId));
    if (levels.length === 0) throw apiError('VALIDATION_ERROR', 'give a bid, an ask or both');
    const q = await execute(ctx, {
      type: 'perp.quote',
      account: address,
      quote: { marketId: spec.id, quoteId, cancelAll: false, replaceQuoteId: quoteId, levels },
    });
    return { ...q, orders: q.orders.map((o) => result(o, address)) };
  });

  app.post('/perps/quotes/bulk', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Place a quote ladder; with cancelAll, replace the caller\'s resting quotes in one atomic step',
      description: 'Levels are placed in order as one sequenced command. A level that fails its checks (e.g. POST_ONLY_WOULD_CROSS, INSUFFICIENT_MARGIN) is listed in `rejected` with its index; the other levels stand. `cancelAll` cancels every resting order the caller placed through a quote endpoint on this market before the ladder is placed; no reader, stream or match sees the book between the two.',
      body: Type.Object(
        {
          marketId: Type.String({ maxLength: 40 }),
          quoteId: Type.Optional(QuoteId),
          cancelAll: Type.Optional(Type.Boolean()),
          quotes: Type.Array(QuoteLevel, { maxItems: 50 }),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: BulkQuoteResult }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const spec = marketSpec(req.body.marketId);
    const quoteId = req.body.quoteId ?? null;
    const levels = req.body.quotes.map((l) => orderRequest({ ...l, type: 'limit' }, spec, quoteId));
    const q = await execute(ctx, {
      type: 'perp.quote',
      account: address,
      quote: { marketId: spec.id, quoteId, cancelAll: req.body.cancelAll ?? false, replaceQuoteId: null, levels },
    });
    return { ...q, orders: q.orders.map((o) => result(o, address)) };
  });

  app.post('/perps/orders/:id/cancel', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Cancel one open or untriggered order; returns the cancelled order',
      params: OrderIdParams,
      response: responses({ 200: OrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = Number(req.params.id);
    const account = ctx.exchange.accounts.find(address);
    const outcome = await ctx.sequencer.submit({ type: 'perp.cancel', account: address, orderId: id });
    if (!outcome.ok) {
      const past = account === undefined ? undefined : (await histories(ctx)).trading.order(id);
      if (past !== undefined && past.accountId === account?.id && past.engine === 'linear') {
        throw apiError('CONFLICT', `order ${id} is already ${past.status}`);
      }
      throw apiError('NOT_FOUND', `order ${id} not found`);
    }
    return { ...orderView(outcome.result), fills: [], position: positionViewOf(ctx, address, outcome.result.marketId, outcome.result.marginMode) };
  });

  app.post('/perps/orders/cancel-all', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Cancel the caller\'s open and untriggered perp orders, optionally filtered; no body cancels everything',
      body: Type.Union([
        Type.Object(
          {
            marketId: Type.Optional(Type.String({ maxLength: 40 })),
            quoteId: Type.Optional(QuoteId),
            clientOrderId: Type.Optional(Type.String({ maxLength: 36 })),
            marginMode: Type.Optional(MarginModeSchema),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
      response: responses({ 200: Type.Object({ cancelled: Type.Array(Type.String()) }) }),
    },
  }, async (req) => {
    const filter = req.body ?? {};
    return execute(ctx, { type: 'perp.cancel_all', account: callerAddress(req), filter });
  });

  app.post('/perps/positions/close', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Close a position (fully without quantity) with a reduce-only order; returns the closing order',
      body: Type.Object(
        {
          marketId: Type.String({ maxLength: 40 }),
          quantity: Type.Optional(Decimal()),
          marginMode: Type.Optional(MarginModeSchema),
          orderType: Type.Optional(OrderTypeSchema),
          price: Type.Optional(Decimal()),
          timeInForce: Type.Optional(TifSchema),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: OrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const spec = marketSpec(req.body.marketId);
    const type = req.body.orderType ?? (req.body.price === undefined ? 'market' : 'limit');
    if (type === 'limit' && req.body.price === undefined) throw apiError('VALIDATION_ERROR', 'price is required for a limit close');
    const placed = await execute(ctx, {
      type: 'perp.close',
      account: address,
      close: {
        marketId: spec.id,
        marginMode: req.body.marginMode ?? 'cross',
        quantity: req.body.quantity === undefined ? null : parseSize(req.body.quantity, 'quantity', spec.sizeDecimals),
        type,
        price: req.body.price === undefined ? null : parsePrice(req.body.price, 'price', spec.priceDecimals),
        timeInForce: req.body.timeInForce ?? (type === 'market' ? 'ioc' : 'gtc'),
      },
    });
    return result(placed, address);
  });
}

function placeView(ctx: GatewayContext, r: PlaceResult, address: string) {
  const accountId = ctx.exchange.accounts.find(address)?.id ?? -1;
  return {
    ...orderView(r.order),
    fills: r.fills.map((f) => fillView(f, accountId)),
    position: positionViewOf(ctx, address, r.order.marketId, r.order.marginMode) ?? (r.position && positionView({
      ...r.position,
      markPrice: null,
      unrealizedPnl: null,
      liquidationPrice: null,
      leverage: null,
      margin: null,
    })),
  };
}

const ORDER_DESCRIPTION = `Checks run in this order and the first failure is returned (nothing changes on a rejection):
schema and decimals (400 VALIDATION_ERROR, INVALID_DECIMAL), market (404), market state (422 MARKET_CLOSED:
expired market, or no fresh mark, where only reduce-only orders are accepted), tick and step (400 INVALID_TICK,
INVALID_STEP), size range (422 SIZE_OUT_OF_RANGE), price band around the mark (422 PRICE_OUT_OF_BAND), open-order
limits (422 TOO_MANY_OPEN_ORDERS), duplicate clientOrderId (409 DUPLICATE_CLIENT_ORDER_ID: a retry never trades
twice), reduce-only feasibility (422 REDUCE_ONLY_REJECTED), margin gate (422 INSUFFICIENT_MARGIN), post-only
(422 POST_ONLY_WOULD_CROSS), fill-or-kill (422 FOK_NOT_FILLED), immediate-or-cancel liquidity (422 NO_LIQUIDITY).

Trades happen at the maker's price. Market orders sweep no further than the price band and cancel the rest.
Self-trade prevention (additive field selfTradePrevention): cancel_maker (default: the resting order is cancelled
and matching continues), cancel_taker, cancel_both. A stopPrice order waits (status untriggered) until the mark
reaches stopPrice, then runs these checks and executes. takeProfitPrice/stopLossPrice attach reduce-only market
exits triggered by the mark, sized to what the order filled; one firing cancels the other, and both are
cancelled when the position closes. Reduce-only orders never exceed the position and reserve no margin.`;
