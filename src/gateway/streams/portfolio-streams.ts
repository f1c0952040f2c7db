/**
 * GET /portfolio/balances/stream (private; cancelOnDisconnect, cancel-on-disconnect.ts): `event: snapshot` with the caller's
 * unified balances on connect, then `event: update` whenever they change (coalesced every
 * BALANCES_INTERVAL_MS); `event: error` UPSTREAM_UNAVAILABLE (retryable) when the core stops.
 * The view is balances-view.ts. Tested by test/streams/balances-stream.test.ts.
 */
import type { Static } from 'typebox';
import type { TypedApp } from '../app.ts';
import { BALANCES_INTERVAL_MS, BalancesViews } from './balances-view.ts';
import type { StreamHub } from './hub.ts';
import { openRoute } from './open.ts';
import { BalancesMessage, BalancesStreamQuery, RESUME_NOTE, streamResponses } from './schemas.ts';

export function portfolioStreamRoutes(app: TypedApp, hub: StreamHub): void {
  const balances = new BalancesViews(hub);
  const route = hub.addRoute<Static<typeof BalancesStreamQuery>>({
    name: 'portfolio.balances',
    private: true,
    check: () => undefined,
    open: () => (conn, address, resumeAfter) => balances.join(conn, address!, resumeAfter),
  });
  app.get('/portfolio/balances/stream', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: {
      tags: ['streams'],
      summary: 'The caller\'s unified balances across the four buckets, live',
      description:
        'Each message is { type: "snapshot" | "update", eventId, eventType, eventSeq, engineTs, sourceTs, ' +
        'payload } ' +
        'with payload { wallet, perps, options, spot, pendingWithdrawalTotal, updatedAt }, each bucket ' +
        `{ available, locked, total } in USDC. Changes are coalesced every ${BALANCES_INTERVAL_MS} ms and ` +
        'sent only when a figure changed, and only once durable (no figure a crash could take back). Session cookie, Bearer or x-api-key (scope read). ' +
        'cancelOnDisconnect=true (session or trade-scope key) cancels every live order of the account when the stream closes. ' +
        RESUME_NOTE,
      querystring: BalancesStreamQuery,
      response: streamResponses(BalancesMessage, [400, 401, 403, 429, 503]),
    },
  }, (req, reply) => openRoute(hub, req, reply, route, req.query, req.query.cancelOnDisconnect));
}
