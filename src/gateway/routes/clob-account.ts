/**
 * Options and spot account reads (contract "Options and spot account reads"): order history and
 * resting orders, option positions, option and spot fills, the portfolio and the unified balances
 * (shapes in clob-portfolio.ts). Session, or an API key of scope read. Lists are newest first; page
 * backwards with `before` = the smallest id already seen. Reads served from history or balances
 * wait for durability (no figure a crash could still take back).
 */
import { Type } from 'typebox';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { histories, type GatewayContext } from '../context.ts';
import { HISTORY_ONLY } from '../durable-reads.ts';
import { dec, iso } from '../format.ts';
import { ClobOrderResultView, OptionPositionSchema, optionPositionView, PortfolioBalancesView } from '../schemas/clob.ts';
import { UNFILLED_RETENTION_NOTE } from '../schemas/orders.ts';
import { listLimit, responses, StringEnum } from '../schemas/common.ts';
import { balancesView, PortfolioView, portfolioView } from './clob-portfolio.ts';
import { clobOrderReads } from './order-reads.ts';
import { TradeView } from './perps-account.ts';

const STATUSES = ['untriggered', 'open', 'filled', 'cancelled', 'rejected', 'expired'] as const;
const StatusSchema = StringEnum(STATUSES);
const MarketFilter = Type.Optional(Type.String({ maxLength: 40 }));
const Before = Type.Optional(Type.Integer({ minimum: 1 }));
const TAGS = ['options-spot'];

const POSITIONS_DESCRIPTION = 'markPrice and unrealizedPnl are null while the pricing layer has no mark for '
  + 'the instrument; riskPrice is what margin values it at (the mark; without a fresh one, max(intrinsic, the '
  + 'last mark the pricing layer fitted), or max(intrinsic, best bid) for an instrument it never marked; never '
  + 'the last trade). delta and vega are position Greeks (null without Greeks). margin and initialMargin are the '
  + 'initial margin of a short. Spot holdings are balances: see /portfolio/balances and /wallet/assets.';

export function clobAccountRoutes(app: TypedApp, ctx: GatewayContext): void {
  orderListRoutes(app, ctx);
  tradeListRoutes(app, ctx);
  positionRoutes(app, ctx);
}

function orderListRoutes(app: TypedApp, ctx: GatewayContext): void {
  const accountId = (address: string) => ctx.core.accountId(address);
  for (const path of ['/orders/me', '/options/orders/me']) {
    app.get(path, {
      config: { access: 'read', ...HISTORY_ONLY },
      schema: {
        tags: TAGS,
        summary: 'The caller\'s option and spot orders, newest first (all statuses)',
        description: `${UNFILLED_RETENTION_NOTE} A pruned order is absent from this list.`,
        querystring: Type.Object(
          {
            limit: listLimit(500, 100),
            marketId: MarketFilter,
            status: Type.Optional(StatusSchema),
            before: Before,
          },
          { additionalProperties: false },
        ),
        response: responses({ 200: Type.Array(ClobOrderResultView) }),
      },
    }, async (req) => {
      const address = callerAddress(req);
      const id = accountId(address);
      if (id === undefined) return [];
      const { limit, marketId, status, before } = req.query;
      const query = { accountId: id, engine: 'clob' as const, limit: limit ?? 100, marketId, status };
      return clobOrderReads(ctx, address, await (await histories(ctx)).trading.orders({ ...query, beforeId: before }));
    });
  }

  for (const path of ['/orders/open', '/options/orders/open']) {
    app.get(path, {
      config: { access: 'read' },
      schema: {
        tags: TAGS,
        summary: 'The caller\'s resting option and spot orders (additive)',
        querystring: Type.Object({ marketId: MarketFilter }, { additionalProperties: false }),
        response: responses({ 200: Type.Array(ClobOrderResultView) }),
      },
    }, async (req) => {
      const address = callerAddress(req);
      const id = accountId(address);
      const orders = id === undefined ? [] : ctx.core.openOrders('clob', id, req.query.marketId);
      return clobOrderReads(ctx, address, orders);
    });
  }

}

function tradeListRoutes(app: TypedApp, ctx: GatewayContext): void {
  const accountId = (address: string) => ctx.core.accountId(address);
  app.get('/options/trades/me', {
    config: { access: 'read', ...HISTORY_ONLY },
    schema: {
      tags: TAGS,
      summary: 'The caller\'s option and spot fills, newest first',
      querystring: Type.Object(
        { limit: listLimit(500, 100), marketId: MarketFilter, before: Before },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(TradeView) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    const { limit, marketId, before } = req.query;
    const query = { accountId: id, engine: 'clob' as const, limit: limit ?? 100, marketId, beforeId: before };
    const rows = await (await histories(ctx)).trading.trades(query);
    return rows.map((t) => ({
      ...t,
      price: dec(t.price),
      quantity: dec(t.quantity),
      fee: dec(t.fee),
      feeBps: dec(t.feeBps),
      realizedPnl: dec(t.realizedPnl),
      createdAt: iso(t.createdAt),
    }));
  });
}

function positionRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/positions/me', {
    config: { access: 'read' },
    schema: {
      tags: TAGS,
      summary: 'The caller\'s open option positions, valued at the mark',
      description: POSITIONS_DESCRIPTION,
      response: responses({ 200: Type.Array(OptionPositionSchema) }),
    },
  }, async (req) => {
    const id = ctx.core.accountId(callerAddress(req));
    if (id === undefined) return [];
    return ctx.core.optionPositions(id, ctx.now()).map(optionPositionView);
  });

  app.get('/portfolio/balances', {
    config: { access: 'read' },
    schema: {
      tags: TAGS,
      summary: 'Unified balances: per bucket available, locked and total in USDC',
      description: 'The payload of GET /portfolio/balances/stream. locked is what order holds and margin in '
        + 'use keep in the bucket; available = total − locked. spotAssets (additive) lists the spot '
        + 'bucket\'s other assets in their own units.',
      response: responses({ 200: PortfolioBalancesView }),
    },
  }, async (req) => {
    return balancesView(ctx, callerAddress(req));
  });

  app.get('/portfolio/me', {
    config: { access: 'read' },
    schema: {
      tags: TAGS,
      summary: 'The caller\'s portfolio: options (funds, Greeks, positions), spot holdings, perps, wallet',
      response: responses({ 200: PortfolioView }),
    },
  }, async (req) => {
    return portfolioView(ctx, callerAddress(req));
  });
}
