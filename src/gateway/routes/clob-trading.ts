/**
 * Options and spot order actions (contract "Options and spot trading"): place, preview, amend,
 * cancel one, cancel all, single two-sided and bulk quotes, each under its `/options/` alias too.
 * Every action is one core command, answered once durable; a bulk `cancelAll` replace is atomic.
 *
 * Access: order actions accept a session or an API key with scope `trade` (the agent workflow
 * sends keys on single-order and cancel-one); preview accepts scope `read`; the single two-sided
 * quote is session only, as the contract lists `POST /quotes` without a key.
 */
import { Type } from 'typebox';
import type { MarketSpec } from '../../core/markets.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, histories, type GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { dec } from '../format.ts';
import { amendChange, checkOrderBodies, orderRequest } from '../order-requests.ts';
import {
  ClobCancelAllBody, ClobOrderBody, ClobOrderResultView, ClobPreviewView, ClobQuoteLevel, ClobQuoteResult,
  ModifyBody,
} from '../schemas/clob.ts';
import { EmptyBody, OrderIdParams, responses } from '../schemas/common.ts';
import { ClientOrderId, orderView, QuoteId } from '../schemas/orders.ts';
import { Decimal } from '../validation.ts';
import { clobPlaceView, optionPositionOf } from './clob-views.ts';

const ORDER_ERRORS = [400, 401, 403, 404, 409, 422, 429] as const;
const TAGS = ['options-spot'];

export function clobMarketSpec(ctx: GatewayContext, marketId: string): MarketSpec {
  const market = ctx.core.clobMarkets().get(marketId);
  if (market === undefined || market.status === 'expired') {
    throw apiError('NOT_FOUND', `market ${marketId} not found`);
  }
  return market.spec;
}

/** Registers `path` and its `/options` alias. */
function both(path: string, register: (p: string) => void): void {
  register(path);
  register(`/options${path}`);
}

export function clobTradingRoutes(app: TypedApp, ctx: GatewayContext): void {
  placeRoutes(app, ctx);
  amendAndCancelRoutes(app, ctx);
  quoteRoutes(app, ctx);
}

function placeRoutes(app: TypedApp, ctx: GatewayContext): void {
  both('/orders', (path) => app.post(path, {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: TAGS, summary: 'Place an option or spot order', description: ORDER_DESCRIPTION,
      body: ClobOrderBody, response: responses({ 201: ClobOrderResultView }, ORDER_ERRORS),
    },
  }, async (req, reply) => {
    const address = callerAddress(req);
    checkOrderBodies([req.body]);
    const request = orderRequest(req.body, clobMarketSpec(ctx, req.body.marketId));
    const placed = await execute(ctx, { type: 'clob.place', account: address, request });
    reply.status(201);
    return clobPlaceView(ctx, placed, address);
  }));

  both('/orders/preview', (path) => app.post(path, {
    config: { access: 'read' },
    schema: {
      tags: TAGS,
      summary: 'Dry-run an option or spot order: what it would lock, its fee and the gate decision',
      description: PREVIEW_DESCRIPTION,
      body: ClobOrderBody,
      response: responses({ 200: ClobPreviewView }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    checkOrderBodies([req.body]);
    const request = orderRequest(req.body, clobMarketSpec(ctx, req.body.marketId));
    const id = ctx.core.accountId(address) ?? -1;
    const { plan, rejection } = ctx.core.previewClobOrder(id, request, ctx.now());
    return {
      notional: dec(plan?.notional ?? 0n),
      marginRequired: dec(plan?.marginRequired ?? 0n),
      estFee: dec(plan?.estFee ?? 0n),
      feeBps: dec(plan?.feeBps ?? 0n),
      feeRole: plan?.feeRole ?? 'taker',
      user30dVolume: dec(plan?.volume30d ?? 0n),
      lockAsset: plan?.reserveAsset ?? ctx.core.config.settlementAsset,
      approved: rejection === null,
      ...(rejection === null ? {} : { reason: rejection.code, message: rejection.message }),
    };
  }));
}

function amendAndCancelRoutes(app: TypedApp, ctx: GatewayContext): void {
  both('/orders/:id/modify', (path) => app.post(path, {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: TAGS,
      summary: 'Amend a resting order: new price and/or new total quantity',
      description: MODIFY_DESCRIPTION,
      params: OrderIdParams, body: ModifyBody, response: responses({ 200: ClobOrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = Number(req.params.id);
    const change = await amendChange(req.body, () => liveOrderSpec(ctx, address, id));
    const outcome = await ctx.sequencer.submit({ type: 'clob.modify', account: address, orderId: id, ...change });
    if (!outcome.ok && outcome.code === 'NOT_FOUND') throw await finishedOrNotFound(ctx, address, id);
    if (!outcome.ok) throw apiError(outcome.code, outcome.message);
    return clobPlaceView(ctx, outcome.result, address);
  }));

  both('/orders/:id/cancel', (path) => app.post(path, {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: TAGS,
      summary: 'Cancel one resting option or spot order; returns the cancelled order',
      description: '404 for an unknown order or another account\'s; 409 CONFLICT when it already ended (404 once an '
        + 'order that ended without a fill has left the history: see GET /orders/me).',
      params: OrderIdParams, body: EmptyBody, response: responses({ 200: ClobOrderResultView }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = Number(req.params.id);
    const outcome = await ctx.sequencer.submit({ type: 'clob.cancel', account: address, orderId: id });
    if (!outcome.ok) throw await finishedOrNotFound(ctx, address, id);
    const position = optionPositionOf(ctx, address, outcome.result.marketId);
    return { ...orderView(outcome.result), fills: [], position };
  }));

  both('/orders/cancel-all', (path) => app.post(path, {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: TAGS,
      summary: 'Cancel the caller\'s resting option and spot orders, optionally filtered',
      description: 'No body cancels everything. Filters combine: marketId, underlying (every instrument on '
        + 'it, spot pair included), quoteId, clientOrderId. A marketId that names no listed instrument or '
        + 'pair is 404 NOT_FOUND, as on /perps/orders/cancel-all.',
      body: ClobCancelAllBody,
      response: responses({ 200: Type.Object({ cancelled: Type.Array(Type.String()) }) }),
    },
  }, async (req) => {
    const filter = req.body ?? {};
    // A typo in the filter must not read as "nothing to cancel".
    if (filter.marketId !== undefined && !ctx.core.clobMarkets().has(filter.marketId)) {
      throw apiError('NOT_FOUND', `market ${filter.marketId} not found`);
    }
    return execute(ctx, { type: 'clob.cancel_all', account: callerAddress(req), filter });
  }));
}

const QuoteSide = Type.Object(
  { price: Decimal(), quantity: Decimal(), clientOrderId: Type.Optional(ClientOrderId) },
  { additionalProperties: false },
);
const SingleQuoteBody = Type.Object(
  {
    marketId: Type.String({ maxLength: 40 }),
    bid: Type.Optional(QuoteSide),
    ask: Type.Optional(QuoteSide),
    postOnly: Type.Optional(Type.Boolean()),
    quoteId: Type.Optional(QuoteId),
  },
  { additionalProperties: false },
);
const BulkQuoteBody = Type.Object(
  {
    marketId: Type.String({ maxLength: 40 }),
    quoteId: Type.Optional(QuoteId),
    cancelAll: Type.Optional(Type.Boolean()),
    quotes: Type.Array(ClobQuoteLevel, { maxItems: 50 }),
  },
  { additionalProperties: false },
);

function quoteRoutes(app: TypedApp, ctx: GatewayContext): void {
  both('/quotes', (path) => app.post(path, {
    config: { access: 'session', orderAction: true },
    schema: {
      tags: TAGS,
      summary: 'Place a two-sided quote (replaces the caller\'s resting orders tagged with the same quoteId)',
      description: 'Quote orders count for market-maker protection; while it is frozen for the '
        + 'underlying the request is refused with 422 MMP_TRIGGERED. A bid at or above the ask is refused '
        + 'whole with 400 VALIDATION_ERROR (the ask would meet the bid and self-trade).',
      body: SingleQuoteBody, response: responses({ 200: ClobQuoteResult }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const { bid, ask, postOnly } = req.body;
    const sides = [bid && { ...bid, side: 'buy' as const }, ask && { ...ask, side: 'sell' as const }].filter((l) => l !== undefined);
    checkOrderBodies(sides);
    const spec = clobMarketSpec(ctx, req.body.marketId);
    const quoteId = req.body.quoteId ?? null;
    const levels = sides.map((l) => orderRequest({ ...l, postOnly }, spec, quoteId));
    if (levels.length === 0) throw apiError('VALIDATION_ERROR', 'give a bid, an ask or both');
    const quote = { marketId: spec.id, quoteId, cancelAll: false, replaceQuoteId: quoteId, levels };
    const q = await execute(ctx, { type: 'clob.quote', account: address, quote });
    return { ...q, orders: q.orders.map((o) => clobPlaceView(ctx, o, address)) };
  }));

  both('/quotes/bulk', (path) => app.post(path, {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: TAGS,
      summary: 'Place a quote ladder; with cancelAll, replace the caller\'s resting quotes atomically',
      description: BULK_DESCRIPTION,
      body: BulkQuoteBody, response: responses({ 200: ClobQuoteResult }, ORDER_ERRORS),
    },
  }, async (req) => {
    const address = callerAddress(req);
    checkOrderBodies(req.body.quotes);
    const spec = clobMarketSpec(ctx, req.body.marketId);
    const quoteId = req.body.quoteId ?? null;
    const levels = req.body.quotes.map((l) => orderRequest({ ...l, type: 'limit' }, spec, quoteId));
    const cancelAll = req.body.cancelAll ?? false;
    const quote = { marketId: spec.id, quoteId, cancelAll, replaceQuoteId: null, levels };
    const q = await execute(ctx, { type: 'clob.quote', account: address, quote });
    return { ...q, orders: q.orders.map((o) => clobPlaceView(ctx, o, address)) };
  }));
}

/** The market of one of the caller's live orders, for parsing an amend; 404/409 otherwise. */
async function liveOrderSpec(ctx: GatewayContext, address: string, id: number): Promise<MarketSpec> {
  const accountId = ctx.core.accountId(address);
  const spec = accountId === undefined ? undefined : ctx.core.liveOrderMarket('clob', accountId, id);
  if (spec === undefined) throw await finishedOrNotFound(ctx, address, id);
  return spec;
}

/** 409 when the order is the caller's and already ended, 404 when unknown or someone else's. */
async function finishedOrNotFound(ctx: GatewayContext, address: string, id: number) {
  const accountId = ctx.core.accountId(address);
  const past = accountId === undefined ? undefined : await (await histories(ctx)).trading.order(id);
  const mine = past !== undefined && past.accountId === accountId && past.engine === 'clob';
  if (mine && past.status !== 'open') {
    return apiError('CONFLICT', `order ${id} is already ${past.status}`);
  }
  return apiError('NOT_FOUND', `order ${id} not found`);
}

const PREVIEW_DESCRIPTION = `Runs exactly the checks of POST /orders, in the same order, against the
current state, with no side effect; \`approved\` false carries the code of the first failing check in
\`reason\`. \`marginRequired\` is what the order would lock: premium and fee (buys), the initial margin
it adds (option sells), USDC or the base asset for spot (see \`lockAsset\`).`;

const MODIFY_DESCRIPTION = `quantity is the new total size (filled part included) and must exceed what
has filled. Time priority is kept only when the price is unchanged and the quantity decreases (always
allowed, even where the price band has moved away from the order: it adds nothing to the book); otherwise
the order is re-queued with the same id after the tick, step, size and band checks (a crossing price trades
like a new order; post-only is refused with POST_ONLY_WOULD_CROSS). Increases pass the funding gate. 404 for an unknown order or another
account's; 409 CONFLICT when the order no longer rests.`;

const BULK_DESCRIPTION = `Levels are placed in order as one sequenced command. A level that fails its
checks (e.g. POST_ONLY_WOULD_CROSS, INSUFFICIENT_MARGIN, or VALIDATION_ERROR for \`marginMode\`
\`isolated\`: spot and options are cross only) is listed in \`rejected\` with its index; the other
levels stand. \`cancelAll\` cancels every resting order the caller placed through a quote endpoint
on this market before the ladder is placed; no reader, stream or match sees the book between the two.
The client ids of the quotes a replace cancels pass to the new levels that reuse them (a retried or
repeated ladder with fixed ids replaces itself; elsewhere an id stays reserved for 24 hours). Refused whole with 422 MMP_TRIGGERED while market-maker protection is frozen for the underlying, and
with 400 VALIDATION_ERROR when its highest bid is not below its lowest ask (its levels would self-trade).`;

const ORDER_DESCRIPTION = `Checks run in this order and the first failure is returned (nothing changes on
a rejection): schema and decimals (400 VALIDATION_ERROR, INVALID_DECIMAL), market (404), market state
(422 MARKET_CLOSED: an option at or after its expiry), tick and step (400 INVALID_TICK, INVALID_STEP),
size range (422 SIZE_OUT_OF_RANGE), the market's price ceiling (422 PRICE_OUT_OF_BAND: the largest price at
which the maximum size is an exact integer of ticks times lots), price band (422 PRICE_OUT_OF_BAND: spot within the market's band
around a fresh index, no band while the index is stale; options within static bounds, a call at most the
underlying, a put at most its strike), open-order limits (422 TOO_MANY_OPEN_ORDERS; they bound resting orders, so an ioc, fok or market order
passes at a limit), duplicate
clientOrderId (409 DUPLICATE_CLIENT_ORDER_ID, unique among live orders and for 24 h after an order ends),
reduce-only feasibility (422 REDUCE_ONLY_REJECTED), funding gate, post-only (422 POST_ONLY_WOULD_CROSS),
fill-or-kill (422 FOK_NOT_FILLED), immediate-or-cancel liquidity (422 NO_LIQUIDITY).

Funding gate. Spot is funded, not margined: a buy locks quantity x limit plus the fee at the schedule's
highest rate (a market or immediate buy: the cost of what it takes from the book now plus fees), a sell
locks the base; a spot bucket that cannot hold the lock is 400 INSUFFICIENT_BALANCE (selling what is not
held included). Options pass a margin gate (422 INSUFFICIENT_MARGIN): a resting buy locks premium plus
the fee at its cap (12.5 % of the premium), an immediate buy premium plus fee; a sell needs the initial
margin it can add (standard margin: short call max(15 % S − OTM, 10 % S) + mark, short put additionally
at least its maintenance margin), with every resting sell counted as if filled. Long options add no
collateral. Without a fresh pricing-layer mark an option is valued for risk at max(intrinsic, the last
mark the pricing layer fitted for it), or max(intrinsic, best bid) if it never had one; never at the
last trade, which two accounts can print at any price for two fees. Holds are released exactly as fills pay (price improvement and unused fee reserve) and on cancel;
/wallet/assets shows them as locked.

Market orders. The contract has every order carry a price; on a market order (ioc or fok, the default ioc)
it is the worst price accepted: the sweep stops there, or at the band edge (spot, fresh index) or an option's
static bound if that comes first, and is not band-checked. A market order sent without a price sweeps to that
edge.

Trades happen at the maker's price; fees: spot in basis points of the quote notional, options per GET
/options/fees. reduceOnly: refused on spot (a holding is a balance); on options it is for immediate
orders (ioc, fok, market), clipped to the position. Self-trade prevention (selfTradePrevention):
cancel_maker (default), cancel_taker, cancel_both. Options trade without a mark; they stop at expiry and
settle in cash at the 30-minute index TWAP before it.`;
