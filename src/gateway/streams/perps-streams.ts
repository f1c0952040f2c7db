/**
 * The perp stream routes (contract "Events", decisions.md "Streams"):
 *
 *   GET /perps/book-stream   public   marketId (perp, future or spot pair); depth 1-100 (25); intervalMs 50-2000 (100)
 *   GET /perps/stream/events private  marketId; depth 1-250 (25); openOnly; intervalMs 100-5000 (500); cancelOnDisconnect
 *   GET /perps/stream/user   private  openOnly; intervalMs 50-5000 (250); cancelOnDisconnect
 *
 * Each opens with `event: snapshot`, then sends `update` (book) or `delta` (private) frames with
 * diffs only, in the envelope `{ eventId, eventType, eventSeq, engineTs, sourceTs, payload }`.
 * The views live in book-view.ts and account-view.ts; opening rules in open.ts.
 * Tested by test/streams/book-stream.test.ts and test/streams/perps-private.test.ts.
 */
import type { Static } from 'typebox';
import type { LinearMarketView } from '../../core/queries.ts';
import type { TypedApp } from '../app.ts';
import { apiError } from '../errors.ts';
import { AccountViews } from './account-view.ts';
import type { BookMarket, BookMirrors } from './book-mirror.ts';
import { BookViews } from './book-view.ts';
import type { StreamHub } from './hub.ts';
import { openRoute } from './open.ts';
import {
  BookMessage,
  BookStreamQuery,
  EventsMessage,
  EventsStreamQuery,
  NO_RESUME_NOTE,
  RESUME_NOTE,
  STREAM_BOUNDS,
  streamResponses,
  UserMessage,
  UserStreamQuery,
} from './schemas.ts';

const PRIVATE_NOTE =
  'Authenticate with the session cookie, Authorization: Bearer or x-api-key (scope read is enough); ' +
  'a token in the query string is never accepted. A revoked or expired credential ends the stream with ' +
  'event: error UNAUTHENTICATED (retryable false) within SSE_AUTH_RECHECK_MS. ' +
  'cancelOnDisconnect=true (session or trade-scope key) cancels every live order of the account when the stream closes.';

/** `clobBooks`: the CLOB engine's book mirrors (the book stream serves the spot pairs from them). */
export function perpsStreamRoutes(app: TypedApp, hub: StreamHub, clobBooks: BookMirrors): void {
  const books = new BookViews(hub, clobBooks);
  const accounts = new AccountViews(hub, books);
  const market = (id: string): LinearMarketView => {
    const m = hub.ctx.core.linearMarkets().get(id);
    if (m === undefined || m.status !== 'open') throw apiError('NOT_FOUND', `market ${id} not found`);
    return m;
  };
  // Every market /perps/markets lists: perpetuals, futures and the spot pairs.
  const bookMarket = (id: string): BookMarket => {
    const spot = hub.ctx.core.clobMarkets().get(id);
    if (spot === undefined || spot.isOption) return market(id);
    if (spot.status !== 'open') throw apiError('NOT_FOUND', `market ${id} not found`);
    return spot;
  };
  bookStreamRoute(app, hub, books, bookMarket);
  eventsStreamRoute(app, hub, accounts, market);
  userStreamRoute(app, hub, accounts);
}

type MarketLookup = (id: string) => LinearMarketView;

function bookStreamRoute(app: TypedApp, hub: StreamHub, books: BookViews, market: (id: string) => BookMarket): void {
  const route = hub.addRoute<Static<typeof BookStreamQuery>>({
    name: 'perps.book',
    private: false,
    check: (q) => void market(q.marketId),
    open: (q) => {
      const group = books.group(market(q.marketId), q.depth ?? STREAM_BOUNDS.book.depth.default, q.intervalMs ?? STREAM_BOUNDS.book.intervalMs.default);
      return (conn, _address, resumeAfter) => group.addPublic(conn, resumeAfter);
    },
  });
  app.get('/perps/book-stream', {
    exposeHeadRoute: false,
    config: { access: 'public' },
    schema: {
      tags: ['streams'],
      summary: 'Order book stream: snapshot, then update diffs of the top levels',
      description:
        'Any market /perps/markets lists: a perpetual, a dated future or a spot pair (option instruments ' +
        'stream on /options/stream/events). ' +
        'Levels { price, size, total } best first; total is the running size from the top. ' +
        'An update lists the levels whose size or total changed or that entered or left the depth window; ' +
        'size "0" means the level was removed. Applied in order, the updates keep every total current. ' +
        RESUME_NOTE,
      querystring: BookStreamQuery,
      response: streamResponses(BookMessage, [400, 404, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query));
}

function eventsStreamRoute(app: TypedApp, hub: StreamHub, accounts: AccountViews, market: MarketLookup) {
  const route = hub.addRoute<Static<typeof EventsStreamQuery>>({
    name: 'perps.events',
    private: true,
    check: (q) => void market(q.marketId),
    open: (q) => {
      const query = {
        market: market(q.marketId),
        depth: q.depth ?? STREAM_BOUNDS.events.depth.default,
        intervalMs: q.intervalMs ?? STREAM_BOUNDS.events.intervalMs.default,
        openOnly: q.openOnly ?? false,
      };
      return (conn, address) => accounts.openEvents(conn, address!, query);
    },
  });
  app.get('/perps/stream/events', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: {
      tags: ['streams'],
      summary: 'The caller\'s perp events in one market: book, own fills, own positions',
      description:
        'snapshot { marketId, orderbook, trades: [], positions: [Position] }, then delta { marketId, ' +
        'orderbook (changed levels only), trades (the caller\'s new fills), positions: { upserts, ' +
        `removedIds } }. A fill arrives as a trade plus a position upsert. When a dated future stops ` +
        'trading, a last delta carries its expired orders and, when it settled at once, the closed ' +
        'positions; then event: error INVALID_PARAMS (retryable false) ends the stream. ' +
        `${PRIVATE_NOTE} ${NO_RESUME_NOTE}`,
      querystring: EventsStreamQuery,
      response: streamResponses(EventsMessage, [400, 401, 403, 404, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query, req.query.cancelOnDisconnect));
}

function userStreamRoute(app: TypedApp, hub: StreamHub, accounts: AccountViews): void {
  const route = hub.addRoute<Static<typeof UserStreamQuery>>({
    name: 'perps.user',
    private: true,
    check: () => undefined,
    open: (q) => (conn, address, resumeAfter) =>
      accounts.joinUser(conn, address!, q.intervalMs ?? STREAM_BOUNDS.user.intervalMs.default, q.openOnly ?? false, resumeAfter),
  });
  app.get('/perps/stream/user', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: {
      tags: ['streams'],
      summary: 'The caller\'s perp fills and positions across all markets (no book)',
      description:
        'snapshot { trades: [], positions: [Position] }, then delta { trades: [Fill], ' +
        `positions: { upserts, removedIds } }. ${PRIVATE_NOTE} ${RESUME_NOTE} Resumed, the deltas missed ` +
        'carry the fills and position changes since Last-Event-ID (a snapshot carries no past fills).',
      querystring: UserStreamQuery,
      response: streamResponses(UserMessage, [400, 401, 403, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query, req.query.cancelOnDisconnect));
}
