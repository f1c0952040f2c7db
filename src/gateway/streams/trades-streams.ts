/**
 * The public trades stream (docs/architecture.md "Streams"):
 *
 *   GET /markets/{marketId}/trades/stream   public   intervalMs 50-2000 (100)
 *
 * Any market trading now, of the four kinds (perpetual, dated future, spot pair, option); the REST
 * tape of the same market is `GET /markets/{marketId}/trades` (routes/trade-tape.ts). `event:
 * snapshot` (TradesSnapshot) with the newest trades, then `event: update` (TradesUpdate) with the
 * trades since the previous message, in the envelope `{ eventId, eventType, eventSeq, engineTs,
 * sourceTs, payload }` (trades-view.ts). Public like the book stream: the connection caps per
 * address and per server apply (admission.ts), no credentials. Refusals before the stream opens
 * (open.ts): 400 for a malformed or out-of-range parameter, 404 for an unknown market or one no
 * longer trading, 429/503 for the caps, 503 while the history cannot be read.
 * Tested by test/streams/trades-stream.test.ts.
 */
import { Type, type TSchema } from 'typebox';
import type { TypedApp } from '../app.ts';
import { apiError } from '../errors.ts';
import { listedMarket, MarketIdParams, PublicTradeView } from '../routes/trade-tape.ts';
import type { StreamHub } from './hub.ts';
import { openRoute } from './open.ts';
import { Resume, RESUME_NOTE, streamResponses } from './schemas.ts';
import { TAPE_SNAPSHOT_TRADES, TradeViews } from './trades-view.ts';

export const TRADES_STREAM_INTERVAL = { min: 50, max: 2000, default: 100 } as const;

const TradesStreamQuery = Type.Object(
  {
    intervalMs: Type.Optional(Type.Integer({
      minimum: TRADES_STREAM_INTERVAL.min,
      maximum: TRADES_STREAM_INTERVAL.max,
      default: TRADES_STREAM_INTERVAL.default,
      description: `coalescing interval in ms, ${TRADES_STREAM_INTERVAL.min} to ${TRADES_STREAM_INTERVAL.max}`,
    })),
    resume: Resume,
  },
  { additionalProperties: false },
);

const envelope = (payload: TSchema) => Type.Object({
  eventId: Type.String({ description: 'unique id of this message' }),
  eventType: Type.String({ description: 'TradesSnapshot or TradesUpdate' }),
  eventSeq: Type.Integer({ description: 'strictly increasing per connection; equals the SSE id' }),
  engineTs: Type.Integer({ description: 'Unix ms: time of the newest trade the message reflects' }),
  sourceTs: Type.Integer({ description: 'Unix ms: equals engineTs (the engine is the source)' }),
  payload,
});
const TradesMessage = envelope(Type.Object({
  marketId: Type.String(),
  trades: Type.Array(PublicTradeView, { description: 'oldest first' }),
}));

const DESCRIPTION = `The public trade tape of one market, live: a perpetual, a dated future, a spot pair
or an option. event: snapshot (TradesSnapshot) { marketId, trades } with the market's newest
${TAPE_SNAPSHOT_TRADES} trades, then event: update (TradesUpdate) { marketId, trades } with every
trade made since the previous message, both oldest first (append them; GET /markets/{marketId}/trades
lists newest first and pages further back). A trade is { tradeId, marketId, price, quantity,
takerSide, createdAt }, takerSide being the aggressor's side; no account, order or fee. Only durable
trades are sent, each once; eventSeq is strictly increasing per connection and equals the SSE id.
An interval without trades sends nothing but the :heartbeat. When the market stops trading (expiry),
its last trades are sent, then event: error INVALID_PARAMS (retryable false) ends the stream.
${RESUME_NOTE} Resumed, the updates after Last-Event-ID come first: each trade missed, once.`;

interface TradesStreamInput {
  readonly marketId: string;
  readonly intervalMs?: number;
}

export function tradeStreamRoutes(app: TypedApp, hub: StreamHub): void {
  const views = new TradeViews(hub);
  const trading = (id: string) => listedMarket(hub.ctx, id)?.open === true;
  const check = (q: TradesStreamInput) => {
    if (!trading(q.marketId)) throw apiError('NOT_FOUND', `market ${q.marketId} not found or no longer trading`);
  };
  const route = hub.addRoute<TradesStreamInput>({
    name: 'markets.trades',
    private: false,
    check,
    async open(q) {
      check(q);
      if (hub.isClosed || !hub.ctx.sequencer.isHealthy()) throw apiError('UNAVAILABLE', 'the exchange core is unavailable');
      const group = await views.group(q.marketId, q.intervalMs ?? TRADES_STREAM_INTERVAL.default, () => trading(q.marketId));
      // The join runs in the same turn as the head is written; a stream refused before it leaves the group idle.
      setImmediate(() => views.dropIfIdle(group));
      return (conn, _address, resumeAfter) => group.join(conn, resumeAfter);
    },
  });
  app.get('/markets/:marketId/trades/stream', {
    exposeHeadRoute: false,
    config: { access: 'public' },
    schema: {
      tags: ['streams'],
      summary: 'Public trades stream of a market: snapshot of the newest trades, then every new trade',
      description: DESCRIPTION,
      params: MarketIdParams,
      querystring: TradesStreamQuery,
      response: streamResponses(TradesMessage, [400, 404, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, { marketId: req.params.marketId, intervalMs: req.query.intervalMs }));
}
