/**
 * `GET /health`: liveness and readiness in one. 200 while the core accepts commands; 503 after
 * a fail-stop (the process is about to exit and restart from the journal). `clockSkewMs` is not 0
 * while a step of the system clock is not taken (runtime/steady-clock.ts): an operator must look.
 */
import { Type } from 'typebox';
import { StringEnum } from '../schemas/common.ts';
import type { TypedApp } from '../app.ts';
import type { GatewayContext } from '../context.ts';

export function healthRoutes(app: TypedApp, ctx: GatewayContext): void {
  const Health = Type.Object({
    status: StringEnum(['ok', 'unavailable']),
    journalSeq: Type.Integer(),
    uptimeSeconds: Type.Integer(),
    clockSkewMs: Type.Integer({
      description: 'System clock minus the service clock while a step of the system clock larger than CLOCK_MAX_STEP_MS is not taken (funding and expiry keep real time; price sources stamping with the system clock are refused until the clocks agree or the service restarts); 0 normally',
    }),
  });
  app.get('/health', {
    // A probe answers at once, from the sequencer's own state, without waiting on the disk.
    config: { access: 'public', durableRead: false },
    schema: { tags: ['system'], summary: 'Liveness and readiness', response: { 200: Health, 503: Health } },
  }, async (_req, reply) => {
    const healthy = ctx.sequencer.isHealthy();
    reply.status(healthy ? 200 : 503);
    return {
      status: healthy ? ('ok' as const) : ('unavailable' as const),
      journalSeq: ctx.sequencer.stats().journalHead,
      uptimeSeconds: Math.floor((performance.now() - ctx.startedAt) / 1000),
      clockSkewMs: ctx.clockSkewMs(),
    };
  });
}
