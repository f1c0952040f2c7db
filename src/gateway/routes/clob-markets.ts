/**
 * Public market data of the options and spot venue: order book snapshots (`/orderbook/{id}` and
 * its `/options/` alias), the options fee schedule (decisions.md shape), the spot fee schedule and
 * the option instrument list (additive: ids with their terms and top of book, per underlying and
 * expiry, until the option board replaces it as the chain's source). Spot pairs also appear in
 * `/perps/markets` (clob-market-list.ts).
 */
import { Type } from 'typebox';
import { bookDepth, bookTop } from '../../core/clob/views.ts';
import type { TypedApp } from '../app.ts';
import type { GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { dec } from '../format.ts';
import { InstrumentView, instrumentView } from '../schemas/clob.ts';
import { responses } from '../schemas/common.ts';
import { BookSnapshot, MAX_BOOK_LEVELS } from './perps-markets.ts';

const FeeTierView = Type.Object({
  min30dVolumeUsd: Type.String(),
  makerBps: Type.String(),
  takerBps: Type.String(),
});
const DepthQuery = Type.Object(
  { depth: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BOOK_LEVELS })) },
  { additionalProperties: false },
);
const FEES_DESCRIPTION = 'Per contract the fee is min(rateBps / 10 000 x index, maxFeePctOfPremium / 100 x '
  + 'premium), rounded up to 0.000001 USDC per fill; maker or taker rate by the fill\'s role. The 30-day '
  + 'volume is contracts x index.';
const INSTRUMENTS_DESCRIPTION = 'Ladders are listed per expiry of the calendar once the underlying has an '
  + 'index, around the index at listing time; an instrument is `settling` between its expiry and its '
  + 'settlement, then leaves the list.';

export function clobMarketRoutes(app: TypedApp, ctx: GatewayContext): void {
  const book = {
    config: { access: 'public' as const },
    schema: {
      tags: ['market-data'],
      summary: 'Order book snapshot of an option or spot market: levels [price, size], best first',
      description: `depth limits the levels per side (default: the full book, at most ${MAX_BOOK_LEVELS}).`,
      params: Type.Object({ marketId: Type.String({ maxLength: 40 }) }),
      querystring: DepthQuery,
      response: responses({ 200: BookSnapshot }, [400, 404, 429]),
    },
  };
  const bookHandler = async (req: { params: { marketId: string }; query: { depth?: number } }) => {
    const market = ctx.core.clobMarkets().get(req.params.marketId);
    if (market === undefined || market.status === 'expired') {
      throw apiError('NOT_FOUND', `market ${req.params.marketId} not found`);
    }
    const d = bookDepth(market, req.query.depth ?? MAX_BOOK_LEVELS);
    return { bids: d.bids.map(([p, s]) => [dec(p), dec(s)]), asks: d.asks.map(([p, s]) => [dec(p), dec(s)]) };
  };
  app.get('/orderbook/:marketId', book, bookHandler);
  app.get('/options/orderbook/:marketId', book, bookHandler);

  feeAndInstrumentRoutes(app, ctx);
}

function feeAndInstrumentRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/options/fees', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Options fee tiers by rolling 30-day options volume',
      description: FEES_DESCRIPTION,
      response: responses({
        200: Type.Array(Type.Object({ ...FeeTierView.properties, maxFeePctOfPremium: Type.String() })),
      }, [429]),
    },
  }, async () => ctx.core.optionFeeTiers().map((t) => ({
    min30dVolumeUsd: dec(t.min30dVolumeUsd),
    makerBps: dec(t.makerBps),
    takerBps: dec(t.takerBps),
    maxFeePctOfPremium: dec(t.maxFeePctOfPremium),
  })));

  app.get('/spot/fees', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Spot fee tiers (basis points of the quote notional) by rolling 30-day spot volume',
      response: responses({ 200: Type.Array(FeeTierView) }, [429]),
    },
  }, async () => ctx.core.spotFeeTiers().map((t) => ({
    min30dVolumeUsd: dec(t.min30dVolumeUsd), makerBps: dec(t.makerBps), takerBps: dec(t.takerBps),
  })));

  app.get('/options/instruments', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Listed option instruments with their terms and top of book',
      description: INSTRUMENTS_DESCRIPTION,
      querystring: Type.Object(
        {
          underlying: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$' })),
          expiry: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 (08:00 UTC)' })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(InstrumentView) }, [400, 429]),
    },
  }, async (req) => {
    const expiry = req.query.expiry === undefined ? undefined : Date.parse(req.query.expiry);
    if (expiry !== undefined && Number.isNaN(expiry)) {
      throw apiError('VALIDATION_ERROR', 'query.expiry must be an ISO 8601 time');
    }
    return ctx.core.optionInstruments(req.query.underlying, expiry).map((i) => {
      const m = ctx.core.clobMarkets().get(i.id)!;
      return instrumentView(i, bookTop(m), m.units.tick, m.units.step);
    });
  });
}
