/**
 * Perp account reads (contract "Perps account reads"): order history, open orders, positions,
 * fills and the margin view. Session, or an API key of scope read (the agent workflow).
 * Lists are newest first; page backwards with `before` = the smallest id already seen.
 */
import { Type } from 'typebox';
import { perpBalanceView, positionViews } from '../../core/linear/views.ts';
import { orderRecord } from '../../core/linear/records.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { histories, type GatewayContext } from '../context.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { IsoTime, listLimit, NullableString, responses, StringEnum } from '../schemas/common.ts';
import { MarginModeSchema, OrderView, orderView, PositionViewSchema, positionView, SideSchema } from '../schemas/orders.ts';

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

export function perpsAccountRoutes(app: TypedApp, ctx: GatewayContext): void {
  const accountId = (address: string) => ctx.exchange.accounts.find(address)?.id;

  app.get('/perps/orders', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s perp orders, newest first (all statuses)',
      querystring: Type.Object(
        {
          limit: listLimit(500, 100),
          marketId: Type.Optional(Type.String({ maxLength: 40 })),
          marginMode: Type.Optional(MarginModeSchema),
          status: Type.Optional(StatusSchema),
          before: Type.Optional(Type.Integer({ minimum: 1 })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(OrderView) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    const q = req.query;
    return (await histories(ctx)).trading
      .orders({ accountId: id, engine: 'linear', limit: q.limit ?? 100, marketId: q.marketId, marginMode: q.marginMode, status: q.status as never, beforeId: q.before })
      .map(orderView);
  });

  app.get('/perps/orders/open', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s resting and untriggered perp orders',
      querystring: Type.Object({ marketId: Type.Optional(Type.String({ maxLength: 40 })) }, { additionalProperties: false }),
      response: responses({ 200: Type.Array(OrderView) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    const account = id === undefined ? undefined : ctx.exchange.linear.findAccount(id);
    if (account === undefined) return [];
    return [...account.orders.values()]
      .filter((o) => req.query.marketId === undefined || o.market.spec.id === req.query.marketId)
      .sort((a, b) => b.id - a.id)
      .map((o) => orderView(orderRecord(o)));
  });

  app.get('/perps/positions', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s open positions valued at the mark',
      description: 'liquidationPrice estimates the mark at which the position would reach maintenance margin with everything else unchanged; leverage is notional over the margin backing it.',
      response: responses({ 200: Type.Array(PositionViewSchema) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    return id === undefined ? [] : positionViews(ctx.exchange.linear, id, ctx.now()).map(positionView);
  });

  app.get('/perps/trades', {
    config: { access: 'read' },
    schema: {
      tags: ['perps'],
      summary: 'The caller\'s perp fills, newest first',
      querystring: Type.Object(
        { limit: listLimit(500, 100), marketId: Type.Optional(Type.String({ maxLength: 40 })), before: Type.Optional(Type.Integer({ minimum: 1 })) },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(TradeView) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    return (await histories(ctx)).trading
      .trades({ accountId: id, engine: 'linear', limit: req.query.limit ?? 100, marketId: req.query.marketId, beforeId: req.query.before })
      .map((t) => ({
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
      description: 'balance is the cash in the perps bucket; equity adds unrealised PnL of cross positions; availableMargin is what new orders can use; withdrawable what a transfer out may take now; marginRatio is maintenance margin over equity (liquidation at 1).',
      response: responses({
        200: Type.Object({
          asset: Type.String(),
          balance: Type.String(),
          unrealizedPnl: Type.String(),
          equity: Type.String(),
          initialMargin: Type.String(),
          maintenanceMargin: Type.String(),
          orderMargin: Type.String(),
          isolatedMargin: Type.String(),
          availableMargin: Type.String(),
          withdrawable: Type.String(),
          marginRatio: NullableString,
        }),
      }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req)) ?? -1;
    const v = perpBalanceView(ctx.exchange.linear, id, ctx.exchange.config.settlementAsset);
    return {
      asset: v.asset,
      balance: dec(v.balance),
      unrealizedPnl: dec(v.unrealizedPnl),
      equity: dec(v.equity),
      initialMargin: dec(v.initialMargin),
      maintenanceMargin: dec(v.maintenanceMargin),
      orderMargin: dec(v.orderMargin),
      isolatedMargin: dec(v.isolatedMargin),
      availableMargin: dec(v.availableMargin),
      withdrawable: dec(v.withdrawable),
      marginRatio: decOrNull(v.marginRatio),
    };
  });
}
