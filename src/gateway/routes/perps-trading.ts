/**
 * Perpetual and dated-future order actions (contract "Perpetuals and futures trading"):
 * place, preview, single and bulk quotes, amend one, cancel one, cancel all, close position. Every action is
 * one core command: answered after it is durable, and atomic (a bulk `cancelAll` replace is never
 * seen half done by any reader, stream or match).
 *
 * Access: order actions accept a session or an API key with scope `trade` (the contract's agent
 * workflow sends keys on single-order, cancel-one and close-position too); preview accepts scope
 * `read`; the single two-sided `POST /perps/quotes` is session only, as the contract lists it.
 */
import { Type } from 'typebox';
import type { PlaceResult } from '../../core/linear/engine.ts';
import type { MarginMode } from '../../core/records.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, histories, type GatewayContext } from '../context.ts';
import { parsePrice, parseSize } from '../decimals.ts';
import { apiError } from '../errors.ts';
import { dec, decOrNull } from '../format.ts';
import { amendChange, checkOrderBodies, orderRequest } from '../order-requests.ts';
import { ModifyBody } from '../schemas/clob.ts';
import { EmptyBody, OrderIdParams, responses } from '../schemas/common.ts';
import {
  BulkQuoteResult,
  ClientOrderId,
  fillView,
  leverageText,
  MarginModeSchema,
  OrderResultView,
  OrderTypeSchema,
  orderView,
  PerpOrderBody,
  positionView,
  PerpPreviewView,
  QuoteId,
  QuoteLevel,
  TifSchema,
} from '../schemas/orders.ts';
import { Decimal } from '../validation.ts';
import { checkMarketFilter, positionViewOf } from './perps-views.ts';

const ORDER_ERRORS = [400, 401, 403, 404, 409, 422, 429] as const;

export function perpsTradingRoutes(app: TypedApp, ctx: GatewayContext): void {
  const marketSpec = (marketId: string) => {
    const market = ctx.core.linearMarkets().get(marketId);
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
    checkOrderBodies([req.body]);
    const request = orderRequest(req.body, marketSpec(req.body.marketId));
    const placed = await execute(ctx, { type: 'perp.place', account: address, request });
    reply.status(201);
    return result(placed, address);
  });

  app.post('/perps/orders/preview', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'Dry-run an order: margin, fee, the gate decision and the resulting position, with no side effect',
      description: 'Runs exactly the checks a live order runs, in the same order, against the current state; `approved` false carries the code of the first failing check in `reason`. The `estimated*` fields describe the order\'s position as it would stand had the order filled in full at its expected average price, valued at the current mark: size, entry price, leverage and the liquidation price GET /perps/positions would then show (same formula). They are estimates: a fill at other prices, a mark that moves or funding paid in between change the real figures.',
      body: PerpOrderBody,
      response: responses({ 200: PerpPreviewView }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    checkOrderBodies([req.body]);
    const request = orderRequest(req.body, marketSpec(req.body.marketId));
    const { plan, rejection, volume30d, feeRole, feeBps, estimate } = ctx.core.previewPerpOrder(address, request, ctx.now());
    // A check that fails before the order's figures are known leaves notional, margin and fee at 0.
    return {
      notional: dec(plan?.notional ?? 0n),
      marginRequired: dec(plan?.marginRequired ?? 0n),
      estFee: dec(plan?.estFee ?? 0n),
      feeBps: dec(feeBps),
      feeRole,
      user30dVolume: dec(volume30d),
      approved: rejection === null,
      ...(rejection === null ? {} : { reason: rejection.code, message: rejection.message }),
      estimatedPositionSize: estimate === null ? null : dec(estimate.size),
      estimatedEntryPrice: decOrNull(estimate?.entryPrice ?? null),
      estimatedLiquidationPrice: decOrNull(estimate?.liquidationPrice ?? null),
      estimatedLeverage: leverageText(estimate?.leverage ?? null),
    };
  });

  app.post('/perps/quotes', {
    config: { access: 'session', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Place a two-sided quote (replaces the caller\'s resting orders tagged with the same quoteId)',
      description: 'A bid at or above the ask is refused whole with 400 VALIDATION_ERROR before anything changes (the ask would meet the bid and self-trade prevention would cancel it). A side that fails its checks is listed in `rejected`; the other stands.',
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
    const sides = [
      req.body.bid && { ...req.body.bid, side: 'buy' as const },
      req.body.ask && { ...req.body.ask, side: 'sell' as const },
    ].filter((l) => l !== undefined);
    checkOrderBodies(sides);
    const spec = marketSpec(req.body.marketId);
    const quoteId = req.body.quoteId ?? null;
    const levels = sides.map((l) => orderRequest({ ...l, postOnly: req.body.postOnly }, spec, quoteId));
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
      description: 'Levels are placed in order as one sequenced command. A level that fails its checks (e.g. POST_ONLY_WOULD_CROSS, INSUFFICIENT_MARGIN) is listed in `rejected` with its index; the other levels stand. `cancelAll` cancels every resting order the caller placed through a quote endpoint on this market before the ladder is placed; no reader, stream or match sees the book between the two. The client ids of the quotes a replace cancels pass to the new levels that reuse them (a retried or repeated ladder with fixed ids replaces itself; elsewhere an id stays reserved for 24 hours). A ladder whose highest bid is not below its lowest ask is refused whole with 400 VALIDATION_ERROR before anything changes (its levels would self-trade).',
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
    checkOrderBodies(req.body.quotes);
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

  app.post('/perps/orders/:id/modify', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Amend a resting perp or futures order: new price and/or new total quantity, one atomic step',
      description: MODIFY_DESCRIPTION,
      params: OrderIdParams,
      body: ModifyBody,
      response: responses({ 200: OrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = Number(req.params.id);
    const change = await amendChange(req.body, () => liveOrderSpec(ctx, address, id));
    const outcome = await ctx.sequencer.submit({ type: 'perp.modify', account: address, orderId: id, ...change });
    if (!outcome.ok && outcome.code === 'NOT_FOUND') throw await endedOrNotFound(ctx, address, id);
    if (!outcome.ok) throw apiError(outcome.code, outcome.message);
    return result(outcome.result, address);
  });

  app.post('/perps/orders/:id/cancel', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Cancel one open or untriggered order; returns the cancelled order',
      params: OrderIdParams,
      body: EmptyBody,
      response: responses({ 200: OrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = Number(req.params.id);
    const outcome = await ctx.sequencer.submit({ type: 'perp.cancel', account: address, orderId: id });
    if (!outcome.ok) throw await endedOrNotFound(ctx, address, id);
    return { ...orderView(outcome.result), fills: [], position: positionViewOf(ctx, address, outcome.result.marketId, outcome.result.marginMode) };
  });

  app.post('/perps/orders/cancel-all', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Cancel the caller\'s open and untriggered perp orders, optionally filtered; no body cancels everything',
      description: 'Filters combine: marketId (404 when no such market is listed), quoteId, clientOrderId, marginMode. Returns the ids of the orders cancelled.',
      body: Type.Union([
        Type.Object(
          {
            marketId: Type.Optional(Type.String({ maxLength: 40 })),
            quoteId: Type.Optional(QuoteId),
            clientOrderId: Type.Optional(ClientOrderId),
            marginMode: Type.Optional(MarginModeSchema),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
      response: responses({ 200: Type.Object({ cancelled: Type.Array(Type.String()) }) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const filter = req.body ?? {};
    checkMarketFilter(ctx, filter.marketId);
    return execute(ctx, { type: 'perp.cancel_all', account: callerAddress(req), filter });
  });

  app.post('/perps/positions/close', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['perps'],
      summary: 'Close a position (fully without quantity) with a reduce-only order; returns the closing order',
      description: 'One reduce-only order of at most the position and at most the market\'s maximum order size (a larger position is closed by further requests; the order shows what it closed). Without `marginMode` it closes the cross position of the market, or the isolated one when only that is open (404 when neither is). Without `orderType` it is a market order (ioc) unless a `price` is given; a market close sweeps no further than the price band around the mark (around the last mark while the index is stale).',
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
        marginMode: req.body.marginMode ?? openMode(ctx, address, spec.id),
        quantity: req.body.quantity === undefined ? null : parseSize(req.body.quantity, 'quantity', spec.sizeDecimals),
        type,
        price: req.body.price === undefined ? null : parsePrice(req.body.price, 'price', spec.priceDecimals),
        timeInForce: req.body.timeInForce ?? (type === 'market' ? 'ioc' : 'gtc'),
      },
    });
    return result(placed, address);
  });
}

/** The market of one of the caller's live perp orders, for parsing an amend; 404/409 otherwise. */
async function liveOrderSpec(ctx: GatewayContext, address: string, id: number) {
  const accountId = ctx.core.accountId(address);
  const spec = accountId === undefined ? undefined : ctx.core.liveOrderMarket('linear', accountId, id);
  if (spec === undefined) throw await endedOrNotFound(ctx, address, id);
  return spec;
}

/** 409 CONFLICT when the order is the caller's and already ended, 404 when unknown or someone else's. */
async function endedOrNotFound(ctx: GatewayContext, address: string, id: number) {
  const accountId = ctx.core.accountId(address);
  const past = accountId === undefined ? undefined : await (await histories(ctx)).trading.order(id);
  if (past !== undefined && past.accountId === accountId && past.engine === 'linear' && past.status !== 'open' && past.status !== 'untriggered') {
    return apiError('CONFLICT', `order ${id} is already ${past.status}`);
  }
  return apiError('NOT_FOUND', `order ${id} not found`);
}

/** The margin mode a close without one means: the cross position, or the isolated one when only that is open. */
function openMode(ctx: GatewayContext, address: string, marketId: string): MarginMode {
  const accountId = ctx.core.accountId(address);
  if (accountId === undefined) return 'cross';
  const open = (mode: MarginMode) => ctx.core.hasOpenPerpPosition(accountId, marketId, mode);
  return !open('cross') && open('isolated') ? 'isolated' : 'cross';
}

function placeView(ctx: GatewayContext, r: PlaceResult, address: string) {
  const accountId = ctx.core.accountId(address) ?? -1;
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

const MODIFY_DESCRIPTION = `The CLOB's amend (POST /orders/{id}/modify) for perps and dated futures, as one journaled
command: \`quantity\` is the new total size (filled part included) and must exceed what has filled (400
VALIDATION_ERROR). An unchanged price and quantity is a no-op. Time priority is kept only when the price is
unchanged and the quantity decreases (always allowed: it adds nothing to the book). Any other change re-queues the
order with the same id, a new time priority and its fill history, after every check of POST /perps/orders
except the open-order limits and the client id, which it already holds (the margin gate counts the old order as
gone; price band, reduce-only clipping, bankruptcy bound, post-only: 422 POST_ONLY_WOULD_CROSS); a price that
crosses the book trades at once as a taker (fills in the response). When a check refuses, nothing changes: the
order keeps its price, size and place in the queue, and the error is the one a new order would get. A conditional
order still waiting for its trigger (stop, take-profit / stop-loss exit) cannot be amended (400
VALIDATION_ERROR: cancel it and place a new one). 404 for an unknown order or another account's; 409 CONFLICT when
the order has already ended (filled, cancelled, expired).`;

const ORDER_DESCRIPTION = `Checks run in this order and the first failure is returned (nothing changes on a rejection):
schema and decimals (400 VALIDATION_ERROR, INVALID_DECIMAL; a price or size with more fractional digits than the
market's priceDecimals / sizeDecimals, trailing zeros included, is 400 INVALID_TICK / INVALID_STEP), market (404),
market state (422 MARKET_CLOSED: expired market, or no fresh mark, where only reduce-only orders are accepted), tick
and step (400 INVALID_TICK, INVALID_STEP), size range (422 SIZE_OUT_OF_RANGE), the market's price ceiling (422
PRICE_OUT_OF_BAND: a price above it can never trade, nor a stopPrice, takeProfitPrice or stopLossPrice above it
trigger; it is the largest price at which the maximum size is still an
exact integer of ticks times lots), price band around the mark (422 PRICE_OUT_OF_BAND: a buy at most, a sell at
least, the band away from the mark), take-profit and stop-loss on the right side of a market order's mark (400
VALIDATION_ERROR; of a limit or stop order's price, with the schema checks), open-order
limits (422 TOO_MANY_OPEN_ORDERS; they bound what an order can leave live: a take-profit or stop-loss counts as an open
and a conditional order from its parent's placement, before the fill that creates it, and an ioc, fok or market order
without exits passes at a limit, so a position can always be closed), duplicate clientOrderId (409 DUPLICATE_CLIENT_ORDER_ID: a retry never trades
twice), reduce-only feasibility (422 REDUCE_ONLY_REJECTED), the position's bankruptcy price (422
INSUFFICIENT_MARGIN: a resting order that would reduce a position may not be priced past it), an isolated order's
leverage (400 VALIDATION_ERROR above the margin tier's maximum for its notional; on a cross order or below 1, with
the schema checks), margin gate (422
INSUFFICIENT_MARGIN; an isolated order is also funded from cross cash, never from unrealised profit alone), post-only
(422 POST_ONLY_WOULD_CROSS), fill-or-kill (422 FOK_NOT_FILLED), immediate-or-cancel liquidity (422 NO_LIQUIDITY).

Trades happen at the maker's price. Market orders sweep no further than the price band and cancel the rest;
while the index is stale (only reduce-only orders pass) the band is around the last mark, never unbounded. An order
that reduces a position (reduce-only or not, closes included) is bounded, when it is placed, by the position's
bankruptcy price, the price at which the equity behind it (an isolated position's margin and PnL; for cross, the
account's cross equity), less a fee set aside for closing it, is gone: an immediate order matches no further than
that price and cancels the rest (422 NO_LIQUIDITY when nothing is within it), and a resting one may not be priced
past it. The bound moves while an order rests (funding, fees, the account's other positions), so it is checked again
with every mark update and every clock tick, and at every maker fill: a resting order then past it is cancelled
(status cancelled, rejectReason INSUFFICIENT_MARGIN, on the orders stream), so it leaves the book, and a taker that
reaches it first matches on past it. A loss past it would be the
insurance fund's; liquidation takes such positions instead. An order that opens a position (or the part of a larger
one beyond the position it closes) is checked the same way, at the same moments: its fill may not leave the
account's cross equity below zero after its loss at the mark (a bid above it, an ask below it) and its maker fee (for
an isolated order, also the initial margin the cross pool moves into the new position); one that would is cancelled
with rejectReason INSUFFICIENT_MARGIN. Unrealised profit at a stale mark (its index down) does not count in these
bounds: it cannot be realised to pay a loss until the index returns. A fill-or-kill order counts what each fill takes from
a maker before that maker's next order, so it is never filled in part. A resting reduce-only order reserves no initial margin,
but its open loss at the mark is kept out of availableMargin (and so out of withdrawable and what new orders may
use), so the position's equity always covers it.
Self-trade prevention (additive field selfTradePrevention): cancel_maker (default: the resting order is cancelled
and matching continues), cancel_taker, cancel_both. A stopPrice order waits (status untriggered) until the mark
reaches stopPrice, then runs these checks and executes. takeProfitPrice/stopLossPrice attach reduce-only market
exits triggered by the mark, sized to what the order's fills opened (lots that closed an opposite position get
none); one firing cancels the other, and both are cancelled when the position closes or flips. Once none of the
pair waits (fired, cancelled, or gone with the position), the order's next fill that opens starts a new pair. Reduce-only orders never exceed the position and reserve no margin: one
larger than the position is clipped to it on entry (its quantity is then the clipped size), and a resting one
shrinks with the position.`;
