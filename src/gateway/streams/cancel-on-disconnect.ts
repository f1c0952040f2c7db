/**
 * Cancel on disconnect (Deribit's cancel_on_disconnect, per connection): a private stream opened
 * with `cancelOnDisconnect=true` cancels every live order of its account (perps, dated futures,
 * options, spot; untriggered stops and take-profit/stop-loss exits too) when it closes, by one
 * `orders.cancel_all` command through the sequencer like any other cancel, so the journal, the
 * history and every stream follow.
 *
 * Which closes count: every one but the service's own clean shutdown (`StreamHub.close`): the
 * client went away (FIN or RST seen, or TCP keep-alive gave up on a vanished peer), or the server
 * ended the stream (SLOW_CONSUMER, a revoked or expired credential, a dated future's stream at its
 * expiry, the core stopping). With several such streams of one account, the first to close cancels
 * (each stream is its own switch, as each Deribit connection is). Limits, all documented: a crash
 * or kill of the server closes nothing the core could see, so the orders stay (recovery replays
 * them as they were); a peer that vanishes without a FIN is noticed only by keep-alive or the
 * heartbeat's stall check, possibly minutes later; when the core is down the cancel is refused
 * like any command. The dead-man switch (`POST /orders/cancel-all-after`) is the guarantee that
 * holds through all of these: its deadline is core state.
 *
 * Tested by test/api/cancel-after.test.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { apiError } from '../errors.ts';
import type { StreamHub } from './hub.ts';
import type { SseConnection } from './sse.ts';

/** The response header that confirms the flag (the stream's head, before any event). */
export const CANCEL_ON_DISCONNECT_HEADER = 'x-cancel-on-disconnect';

/**
 * Refuses the flag to a caller who may not cancel orders (an API key of scope `read`: 403
 * INSUFFICIENT_SCOPE, as on the cancel endpoints) and marks the response head. Runs before the
 * stream opens, so a refusal is an ordinary `{ error, message }` reply.
 */
export function admitCancelOnDisconnect(req: FastifyRequest, reply: FastifyReply): void {
  const id = req.identity;
  if (id !== null && id.via === 'apiKey' && id.key.scope !== 'trade') {
    throw apiError('INSUFFICIENT_SCOPE', 'cancelOnDisconnect cancels orders: it needs a session or an API key with scope "trade"');
  }
  reply.header(CANCEL_ON_DISCONNECT_HEADER, 'true');
}

/** When `conn` closes, other than by the service's shutdown, cancels every live order of `address`. */
export function cancelOnDisconnect(hub: StreamHub, conn: SseConnection, address: string): void {
  conn.onClose(() => {
    if (hub.isShuttingDown) return;
    hub.ctx.sequencer.submit({ type: 'orders.cancel_all', account: address }).then(
      (outcome) => {
        // A stopped core refuses every command; anything else is worth a line in the log.
        if (!outcome.ok && outcome.code !== 'UNAVAILABLE') {
          hub.reportError(new Error(`${outcome.code}: ${outcome.message}`), 'cancel on disconnect was refused');
        }
      },
      (error: unknown) => hub.reportError(error, 'cancel on disconnect failed'),
    );
  });
}
