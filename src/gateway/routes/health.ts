/**
 * `GET /health`: liveness and readiness in one. 200 while the core accepts commands; 503 with
 * `status: "starting"` and the recovery's progress while the core rebuilds its state at start
 * (answered by the startup gate, gateway/startup.ts), and 503 `unavailable` after a fail-stop (the
 * process is about to exit and restart from the journal). `clockSkewMs` is not 0 while a step of
 * the system clock is not taken (runtime/steady-clock.ts): an operator must look.
 */
import { Type } from 'typebox';
import { StringEnum } from '../schemas/common.ts';
import type { TypedApp } from '../app.ts';
import type { GatewayContext } from '../context.ts';

/** The health fields that do not depend on the core being ready (the startup gate answers with them too). */
export function healthFields(ctx: GatewayContext) {
  return {
    journalSeq: ctx.sequencer.stats().journalHead,
    uptimeSeconds: Math.floor((performance.now() - ctx.startedAt) / 1000),
    clockSkewMs: ctx.clockSkewMs(),
  };
}

const Startup = Type.Object({
  phase: StringEnum(['snapshot', 'journal'], { description: 'loading the newest snapshot, then replaying the journal after it' }),
  replayed: Type.Integer({ description: 'journal commands replayed so far' }),
  toReplay: Type.Integer({ description: 'journal commands after the snapshot (all of them without one)' }),
  snapshotSeq: Type.Union([Type.Integer(), Type.Null()], { description: 'the journal seq of the snapshot recovery started from; null: none (full replay)' }),
  elapsedMs: Type.Integer(),
}, { description: 'present while status is "starting": the recovery of the core\'s state at start' });

export function healthRoutes(app: TypedApp, ctx: GatewayContext): void {
  const Health = Type.Object({
    status: StringEnum(['ok', 'unavailable', 'starting'], {
      description: 'ok: serving; starting: recovering the state at start (every other route answers 503 UNAVAILABLE with Retry-After meanwhile); unavailable: the core stopped (fail-stop) and the process is about to restart',
    }),
    startup: Type.Optional(Startup),
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
    return { status: healthy ? ('ok' as const) : ('unavailable' as const), ...healthFields(ctx) };
  });
}
