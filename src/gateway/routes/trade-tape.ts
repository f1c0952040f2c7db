/**
 * The public trade tape of every market (docs/architecture.md "History", "Market data"):
 *
 *   GET /markets/{marketId}/trades   public   limit 1-500 (100); before: a tradeId (the cursor)
 *
 * One path for the four kinds of market, whichever engine trades them: perpetuals and dated futures
 * (linear engine), spot pairs and option instruments (CLOB engine). Its stream is
 * `GET /markets/{marketId}/trades/stream` (streams/trades-view.ts), with the same trade shape.
 *
 * A trade is `{ tradeId, marketId, price, quantity, takerSide, createdAt }`: the taker's (aggressor's)
 * side, no account, order or fee. Newest first; trade ids are unique and increase with time across
 * all markets, so the cursor is a trade id: `before` = the smallest tradeId of the page read gives
 * the next, older page (an empty page: the start of the tape). The tape is the durable history
 * (`market_trades`, TradingHistory), read through `histories(ctx)`, so it holds every trade
 * acknowledged before the read; it is kept forever, like the fills (no retention). It includes the
 * trades the venue makes outside the book (a backstop takeover, deleveraging), as the candles do.
 *
 * A market is known while the core lists it, and afterwards while the tape holds trades of it (an
 * expired future, a settled option): an unknown id is 404. Tested by test/api/trade-tape.test.ts.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { MarketSpec, MarketType } from '../../core/markets.ts';
import type { TypedApp } from '../app.ts';
import { histories, type GatewayContext } from '../context.ts';
import type { PublicTrade } from '../history-port.ts';
import { HISTORY_ONLY } from '../durable-reads.ts';
import { apiError } from '../errors.ts';
import { dec, iso } from '../format.ts';
import { IsoTime, listLimit, responses, StringEnum } from '../schemas/common.ts';
import { wholeNumbers } from './market-data.ts';

export const PublicTradeView = Type.Object({
  tradeId: Type.String({ description: 'unique; increases with time across all markets (the paging cursor)' }),
  marketId: Type.String(),
  price: Type.String(),
  quantity: Type.String({ description: 'base units (contracts of an option)' }),
  takerSide: StringEnum(['buy', 'sell'] as const, { description: 'the taker\'s (aggressor\'s) side' }),
  createdAt: IsoTime,
});

export const MarketIdParams = Type.Object({
  marketId: Type.String({ minLength: 1, maxLength: 40, description: 'e.g. BTC-PERP, BTC-25DEC26, BTC-USDC, BTC-25DEC26-100000-C' }),
});

const TAPE_DESCRIPTION = `The public trades of a perpetual, dated future, spot pair or option, newest
first: { tradeId, marketId, price, quantity, takerSide, createdAt }, takerSide being the aggressor's
side; no account, order or fee. Paging: trade ids increase with time across all markets; pass the
smallest tradeId of a page as \`before\` for the next (older) page, until a page comes back empty.
The tape is durable history: it includes every trade acknowledged before the request, and is kept
forever (fills have no retention). Trades the venue makes outside the book (a backstop takeover,
deleveraging) are on it, as in the candles. An expired future or settled option stays readable while
the tape holds its trades; an id never listed is 404.`;

/** A market of either engine, as the tape and the UDF routes see it. */
export interface ListedMarket {
  readonly spec: MarketSpec;
  readonly kind: MarketType;
  /** Trading now (not expired, settling or settled). */
  readonly open: boolean;
}

/** The market the core lists under `id` (any kind, any status), or undefined. */
export function listedMarket(ctx: GatewayContext, id: string): ListedMarket | undefined {
  const linear = ctx.core.linearMarkets().get(id);
  if (linear !== undefined) return { spec: linear.spec, kind: linear.spec.type, open: linear.status === 'open' };
  const clob = ctx.core.clobMarkets().get(id);
  if (clob !== undefined) return { spec: clob.spec, kind: clob.spec.type, open: clob.status === 'open' };
  return undefined;
}

/** A tape trade as the wire carries it (REST and the stream's JSON). */
export function publicTradeView(t: PublicTrade) {
  return {
    tradeId: t.tradeId,
    marketId: t.marketId,
    price: dec(t.price),
    quantity: dec(t.quantity),
    takerSide: t.takerSide,
    createdAt: iso(t.createdAt),
  };
}

export function tradeTapeRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/markets/:marketId/trades', {
    config: { access: 'public', ...HISTORY_ONLY },
    schema: {
      tags: ['market-data'],
      summary: 'Public trade tape of a market, newest first (all four kinds of market)',
      description: TAPE_DESCRIPTION,
      params: MarketIdParams,
      querystring: Type.Object(
        {
          limit: listLimit(500, 100),
          before: Type.Optional(Type.Integer({
            minimum: 1,
            description: 'cursor: only trades with a tradeId below this (the smallest tradeId of the page already read)',
          })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(PublicTradeView) }, [400, 404, 429]),
    },
    preValidation: async (req: FastifyRequest) => wholeNumbers(req, ['limit', 'before']),
  }, async (req) => {
    const id = req.params.marketId;
    const tape = (await histories(ctx)).trading;
    const trades = await tape.publicTrades(id, req.query.limit ?? 100, req.query.before);
    if (trades.length === 0 && listedMarket(ctx, id) === undefined && (await tape.lastPublicTrade(id)) === undefined) {
      throw apiError('NOT_FOUND', `market ${id} not found`);
    }
    return trades.map(publicTradeView);
  });
}
