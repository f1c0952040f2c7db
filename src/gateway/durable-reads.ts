/**
 * Reads never run ahead of the disk. The core applies a command when it is submitted and the
 * journal makes it durable a moment later (group commit, several batches in flight), so a read of
 * the live core can show a command that a crash would still take back: a dirty read, which a client
 * may act on (a balance, a position, a resting order) and then never find again. Every successful
 * GET therefore waits, after its body is computed and before it is sent, until everything the core
 * had applied by then is durable (Sequencer.barrier). With nothing in flight this costs nothing;
 * if the journal cannot be written the read fails 503 instead of showing what was lost.
 *
 * Scope: JSON bodies (Fastify runs this hook for object payloads, not for strings, buffers or
 * streams); a route that reads no live state opts out with `config: { durableRead: false }` (the
 * health probe must not wait on the disk). Streams are outside it: their events are published only
 * once durable, and the balances stream, which reads the live core, holds each read behind the
 * same barrier (streams/balances-view.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from './app.ts';
import type { GatewayContext } from './context.ts';
import { apiError } from './errors.ts';

export function durableReads(app: TypedApp, ctx: GatewayContext): void {
  app.addHook('preSerialization', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || reply.statusCode >= 400) return payload;
    if (req.routeOptions.config.durableRead === false) return payload;
    try {
      await ctx.sequencer.barrier();
    } catch {
      throw apiError('UNAVAILABLE', 'the exchange core has stopped; what it last applied may not be durable');
    }
    return payload;
  });
}

/**
 * Route config of a GET that reads only the history tables: they hold durable commands alone (the
 * journal worker writes a batch's history after its commit), and `histories(ctx)` already waits
 * until they hold every acknowledged one, so the barrier would only make the read wait, under load,
 * for batches still being written that it cannot show. A command may appear there a moment before
 * its own client's acknowledgement arrives (it is durable by then; what it shows survives a crash).
 * (Such a route's account and market lookups read the live registry: a listing or an account in
 * flight can only turn a 404 into an empty answer.)
 */
export const HISTORY_ONLY = { durableRead: false } as const;
