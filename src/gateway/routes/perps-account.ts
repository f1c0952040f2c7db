/**
 * Perp account reads (contract "Perps account reads"): order history, open orders, positions,
 * fills and the margin view. Session, or an API key of scope read (the agent workflow).
 * Lists are newest first; page backwards with `before` = the smallest id already seen.
 */
import { Type } from 'typebox';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { histories, type GatewayContext } from '../context.ts';
import { HISTORY_ONLY } from '../durable-reads.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { IsoTime, listLimit, NullableString, OrderIdParams, responses, StringEnum } from '../schemas/common.ts';
import {
  ClientOrderId, MarginModeSchema, OrderResultView, PositionViewSchema, positionView, SideSchema, UNFILLED_RETENTION_NOTE,
} from '../schemas/orders.ts';
import { apiError } from '../errors.ts';
import { perpOrderReads } from './order-reads.ts';
import { checkMarketFilter } from './perps-views.ts';

const StatusSchema = StringEnum(['untriggered', 'open', 'filled', 'cancelled', 'rejected', 'expired']);

export const TradeView = Type.Object({
  tradeId: Type.String(),
  orderId: Type.String(),
  marketId: Type.String(),
  side: SideSchema,
  price: Type.String(),
  quantity: Type.String(),
  liquidity: StringEnum(['maker', 'taker']),
  fee: Type.String(),
  feeBps: Type.String(),
  realizedPnl: Type.String(),
  marginMode: MarginModeSchema,
  createdAt: IsoTime,
});

/** A market filter: any listed perp or future id, expired futures included (their history stays readable). */
const MarketFilter = Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'a listed perp or future id; 404 when none is listed under it' }));
const Before = Type.Optional(Type.Integer({ minimum: 1, description: 'page backwards: only entries with an id below this (pass the smallest id of the page already read)' }));

export function perpsAccountRoutes(app: TypedApp, ctx: GatewayContext): void {
  const accountId = (address: string) => ctx.core.accountId(address);

  app.get('/perps/orders', {
    config: { access: 'read', ...HISTORY_ONLY },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s perp orders, newest first (all statuses)',
      description: `${UNFILLED_RETENTION_NOTE} A pruned order is absent from this list.`,
      querystring: Type.Object(
        {
          limit: listLimit(500, 100),
          marketId: MarketFilter,
          marginMode: Type.Optional(MarginModeSchema),
          status: Type.Optional(StatusSchema),
          clientOrderId: Type.Optional(ClientOrderId),
          before: Before,
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(OrderResultView) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const q = req.query;
    checkMarketFilter(ctx, q.marketId);
    const address = callerAddress(req);
    const id = accountId(address);
    if (id === undefined) return [];
    const orders = await (await histories(ctx)).trading.orders({
      accountId: id, engine: 'linear', limit: q.limit ?? 100, marketId: q.marketId, marginMode: q.marginMode, status: q.status as never,
      clientOrderId: q.clientOrderId, beforeId: q.before,
    });
    return perpOrderReads(ctx, address, orders);
  });

  app.get('/perps/orders/:id', {
    config: { access: 'read', ...HISTORY_ONLY },
    schema: {
      tags: ['perps'],
      summary: 'One of the caller\'s perp orders, in any status (reconcile after a lost response)',
      description: 'Includes everything answered before the read. 404 for an unknown id or another account\'s order. To find an order by the clientOrderId sent with it, use GET /perps/orders?clientOrderId=. '
        + `${UNFILLED_RETENTION_NOTE} A pruned order's id is 404.`,
      params: OrderIdParams,
      response: responses({ 200: OrderResultView }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const id = accountId(address);
    const order = id === undefined ? undefined : await (await histories(ctx)).trading.order(Number(req.params.id));
    if (order === undefined || order.accountId !== id || order.engine !== 'linear') throw apiError('NOT_FOUND', `order ${req.params.id} not found`);
    return (await perpOrderReads(ctx, address, [order]))[0]!;
  });

  app.get('/perps/orders/open', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s resting and untriggered perp orders',
      querystring: Type.Object({ marketId: MarketFilter }, { additionalProperties: false }),
      response: responses({ 200: Type.Array(OrderResultView) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    checkMarketFilter(ctx, req.query.marketId);
    const address = callerAddress(req);
    const id = accountId(address);
    const orders = id === undefined ? [] : ctx.core.openOrders('linear', id, req.query.marketId);
    return perpOrderReads(ctx, address, orders);
  });

  app.get('/perps/positions', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s open positions valued at the mark',
      description: 'liquidationPrice estimates the mark at which the position would reach maintenance margin with everything else unchanged; leverage is notional over the margin backing it. Without a fresh mark, markPrice, unrealizedPnl, liquidationPrice, leverage and a cross position\'s margin are null (an isolated position\'s margin is its allocation).',
      querystring: Type.Object({ marketId: MarketFilter }, { additionalProperties: false }),
      response: responses({ 200: Type.Array(PositionViewSchema) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const { marketId } = req.query;
    checkMarketFilter(ctx, marketId);
    const id = accountId(callerAddress(req));
    const views = id === undefined ? [] : ctx.core.perpPositions(id, ctx.now());
    return views.filter((p) => marketId === undefined || p.marketId === marketId).map(positionView);
  });

  app.get('/perps/trades', {
    config: { access: 'read', ...HISTORY_ONLY },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s perp fills, newest first',
      querystring: Type.Object(
        { limit: listLimit(500, 100), marketId: MarketFilter, before: Before },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(TradeView) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    checkMarketFilter(ctx, req.query.marketId);
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    const query = { accountId: id, engine: 'linear' as const, limit: req.query.limit ?? 100, marketId: req.query.marketId, beforeId: req.query.before };
    const trades = await (await histories(ctx)).trading.trades(query);
    return trades.map((t) => ({
      tradeId: t.tradeId,
      orderId: t.orderId,
      marketId: t.marketId,
      side: t.side,
      price: dec(t.price),
      quantity: dec(t.quantity),
      liquidity: t.liquidity,
      fee: dec(t.fee),
      feeBps: dec(t.feeBps),
      realizedPnl: dec(t.realizedPnl),
      marginMode: t.marginMode,
      createdAt: iso(t.createdAt),
    }));
  });

  app.get('/perps/balances', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'Perp collateral and margin view',
      description: 'balance is the cash in the perps bucket; equity adds unrealised PnL of cross positions; availableMargin is what new orders can use; withdrawable what a transfer out may take now (whole USDC units: the lesser of availableMargin and the cross cash); availableMargin keeps out the open loss at the mark of resting cross reduce-only orders, which reserve no initial margin but must stay covered; marginRatio is maintenance margin over equity (liquidation at 1). While a market the account has a position or resting orders in has no fresh mark, the figures valued at a mark (unrealizedPnl, equity, initialMargin, maintenanceMargin, orderMargin, marginRatio) are null (a stale mark is never shown); availableMargin and withdrawable stay, valued at the last mark, because they are what the venue acts on (reduce-only orders, transfers out).',
      response: responses({
        200: Type.Object({
          asset: Type.String(),
          balance: Type.String(),
          unrealizedPnl: NullableString,
          equity: NullableString,
          initialMargin: NullableString,
          maintenanceMargin: NullableString,
          orderMargin: NullableString,
          isolatedMargin: Type.String(),
          availableMargin: Type.String(),
          withdrawable: Type.String(),
          marginRatio: NullableString,
        }),
      }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req)) ?? -1;
    const v = ctx.core.perpBalance(id, ctx.now());
    return {
      asset: v.asset,
      balance: dec(v.balance),
      unrealizedPnl: decOrNull(v.unrealizedPnl),
      equity: decOrNull(v.equity),
      initialMargin: decOrNull(v.initialMargin),
      maintenanceMargin: decOrNull(v.maintenanceMargin),
      orderMargin: decOrNull(v.orderMargin),
      isolatedMargin: dec(v.isolatedMargin),
      availableMargin: dec(v.availableMargin),
      withdrawable: dec(v.withdrawable),
      marginRatio: decOrNull(v.marginRatio),
    };
  });
}
