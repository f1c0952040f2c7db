/**
 * The option stream routes (contract "Events", decisions.md "Streams"):
 *
 *   GET /markets/board/stream    public   underlying (default BTC); about one message a second
 *   GET /options/stream/events   private  marketId (one option instrument); depth 1-250 (25);
 *                                         intervalMs 50-2000 (100); includeReference (false);
 *                                         cancelOnDisconnect (false)
 *
 * The board stream sends data-only messages (no `event:` field), each the full board snapshot of
 * GET /markets/board in the envelope with eventType OptionsBoardSnapshot (board-view.ts). The
 * events stream sends `snapshot` (OptionsStreamSnapshot) then `delta` (OptionsStreamDelta) with
 * the tradable book, the public trade tape and, on request, the reference overlay
 * (options-view.ts).
 *
 * Refusals before a stream opens (open.ts): 400 for a malformed or out-of-range parameter, and
 * for a spot pair on /options/stream/events (the stream is for option instruments; a spot pair
 * exists but is the wrong kind of market); 404 for an unknown underlying, an unknown option or
 * one that no longer trades (settling or expired); 401 without a session cookie, Bearer token or
 * API key on the private stream. Tested by test/streams/board-stream.test.ts and
 * test/streams/options-events-stream.test.ts.
 */
import type { Static } from 'typebox';
import type { ClobMarketView } from '../../core/queries.ts';
import type { TypedApp } from '../app.ts';
import { apiError } from '../errors.ts';
import type { BookMirrors } from './book-mirror.ts';
import { BOARD_INTERVAL_MS, BoardViews } from './board-view.ts';
import type { StreamHub } from './hub.ts';
import { openRoute } from './open.ts';
import { OptionsViews } from './options-view.ts';
import {
  BoardMessage,
  BoardStreamQuery,
  OptionsEventsMessage,
  OptionsEventsQuery,
  RESUME_NOTE,
  STREAM_BOUNDS,
  streamResponses,
} from './schemas.ts';

const PRIMARY_UNDERLYING = 'BTC';
const BOARD_200 = 'text/event-stream: data-only messages, each the full board snapshot';

export interface OptionsStreamOptions {
  /** Board stream cadence (default BOARD_INTERVAL_MS); tests may shorten it. */
  readonly boardIntervalMs?: number;
}

/** `clobBooks`: the CLOB engine's book mirrors, shared with the book stream's spot pairs. */
export function optionsStreamRoutes(app: TypedApp, hub: StreamHub, clobBooks: BookMirrors, options: OptionsStreamOptions = {}): void {
  const boards = new BoardViews(hub, options.boardIntervalMs ?? BOARD_INTERVAL_MS);
  const views = new OptionsViews(hub, clobBooks);
  boardStreamRoute(app, hub, boards);
  optionsEventsRoute(app, hub, views);
}

/** The underlying, if the service lists it (its perpetual is configured), else 404. */
function knownUnderlying(hub: StreamHub, underlying: string | undefined): string {
  const u = underlying ?? PRIMARY_UNDERLYING;
  const listed = hub.ctx.core.config.linear.perps.some((p) => p.underlying === u);
  if (!listed) throw apiError('NOT_FOUND', `underlying ${u} not found`);
  return u;
}

/** The option instrument, trading now: 404 when unknown or not trading, 400 for a spot pair. */
function optionMarket(hub: StreamHub, id: string): ClobMarketView {
  const m = hub.ctx.core.clobMarkets().get(id);
  if (m === undefined || m.status !== 'open') throw apiError('NOT_FOUND', `market ${id} not found`);
  if (!m.isOption) {
    const message = `${id} is a spot pair; /options/stream/events takes an option instrument`;
    throw apiError('VALIDATION_ERROR', message);
  }
  return m;
}

function boardStreamRoute(app: TypedApp, hub: StreamHub, boards: BoardViews): void {
  const route = hub.addRoute<Static<typeof BoardStreamQuery>>({
    name: 'options.board',
    private: false,
    check: (q) => void knownUnderlying(hub, q.underlying),
    open: (q) => {
      const underlying = knownUnderlying(hub, q.underlying);
      return (conn, _address, resumeAfter) => boards.join(conn, underlying, resumeAfter);
    },
  });
  app.get('/markets/board/stream', {
    exposeHeadRoute: false,
    config: { access: 'public' },
    schema: {
      tags: ['streams'],
      summary: 'Option board stream: the full board snapshot about once a second',
      description:
        'Data-only messages (no `event:` field; EventSource delivers them as `message`), `id:` = eventSeq, ' +
        'data { eventId, eventType: "OptionsBoardSnapshot", eventSeq, engineTs, sourceTs, payload }. ' +
        'payload is exactly what GET /markets/board returns (forwards per expiry, every option with top of ' +
        'book and reference mark, IV and Greeks), with volatilityIndex { underlying, dvol, tenorDays, ' +
        'computedAt }. Every message is a full snapshot; eventSeq is strictly increasing per connection. ' +
        'sourceTs is the source time of the index the board shows (engineTs when there is none). The first ' +
        'message is sent on connect. Reference data only: orders route against the order books. ' +
        RESUME_NOTE + ' Resumed, the boards after Last-Event-ID come first, each a full snapshot as always.',
      querystring: BoardStreamQuery,
      response: streamResponses(BoardMessage, [400, 404, 429, 503], BOARD_200),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query));
}

function optionsEventsRoute(app: TypedApp, hub: StreamHub, views: OptionsViews): void {
  const route = hub.addRoute<Static<typeof OptionsEventsQuery>>({
    name: 'options.events',
    private: true,
    budget: 'options',
    check: (q) => void optionMarket(hub, q.marketId),
    open: (q) => {
      const query = {
        market: optionMarket(hub, q.marketId),
        depth: q.depth ?? STREAM_BOUNDS.options.depth.default,
        intervalMs: q.intervalMs ?? STREAM_BOUNDS.options.intervalMs.default,
        includeReference: q.includeReference ?? false,
      };
      return (conn, _address, resumeAfter) => views.join(conn, query, resumeAfter);
    },
  });
  app.get('/options/stream/events', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: {
      tags: ['streams'],
      summary: 'One option instrument: tradable book, public trade tape, optional reference overlay',
      description:
        'snapshot { marketId, orderbook: { bids, asks }, trades: [], reference? }, then delta { marketId, ' +
        'orderbook (changed levels only; size "0" = removed), trades (the public tape since the last ' +
        'frame), reference? }. Levels { price, size, total } best first. A tape entry is { side, price, ' +
        'quantity, liquidity, createdAt } from the aggressor\'s view (side = the taker\'s side, liquidity ' +
        '"taker"), with no account, order or counterparty data. With includeReference=true every message ' +
        'carries reference { markPrice, source, tradable: false }: the option board\'s fresh mark from the ' +
        'SVI fit (source "svi-fit"), both null while the board has no fresh mark; it is never tradable. A ' +
        'spot pair is refused with 400. Authenticate with the session cookie, Authorization: Bearer or ' +
        'x-api-key (scope read is enough); a revoked or expired credential ends the stream with event: ' +
        'error UNAUTHENTICATED (retryable false). cancelOnDisconnect=true (session or trade-scope key) cancels ' +
        'every live order of the account, on every venue, when the stream closes. ' +
        RESUME_NOTE + ' Resumed, the deltas missed carry their trades (a snapshot carries no past trades).',
      querystring: OptionsEventsQuery,
      response: streamResponses(OptionsEventsMessage, [400, 401, 403, 404, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query, req.query.cancelOnDisconnect));
}
