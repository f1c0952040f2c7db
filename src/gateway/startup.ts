/**
 * The gateway while the core recovers its state (docs/architecture.md "Start and readiness"): the
 * service listens at once, `GET /health` answers 503 with `status: "starting"` and the recovery's
 * progress, and every other route answers 503 `UNAVAILABLE` with `Retry-After`, so a load balancer
 * or a client sees a venue starting, not a refused connection or a state half rebuilt.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RecoveryProgress } from '../runtime/sequencer.ts';

export interface StartupView {
  readonly phase: RecoveryProgress['phase'];
  readonly replayed: number;
  readonly toReplay: number;
  readonly snapshotSeq: number | null;
  readonly elapsedMs: number;
}

export class Startup {
  private progress: RecoveryProgress | null = null;
  private readyAt: number | null = null;
  private readonly startedAt = performance.now();

  get ready(): boolean {
    return this.readyAt !== null;
  }

  report(progress: RecoveryProgress): void {
    this.progress = progress;
  }

  finish(): void {
    this.readyAt = performance.now();
  }

  view(): StartupView {
    const p = this.progress;
    return {
      phase: p?.phase ?? 'snapshot',
      replayed: p?.done ?? 0,
      toReplay: p?.total ?? 0,
      snapshotSeq: p?.snapshotSeq ?? null,
      elapsedMs: Math.round(performance.now() - this.startedAt),
    };
  }
}

/** Seconds a client should wait before retrying while the core recovers. */
const RETRY_AFTER_S = 1;

/** The first onRequest hook: answers everything itself until the core is ready. */
export function startupGate(startup: Startup, health: () => Record<string, unknown>) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (startup.ready) return;
    reply.header('Retry-After', String(RETRY_AFTER_S));
    if (req.method === 'GET' && req.url.split('?')[0] === '/health') {
      await reply.status(503).send({ ...health(), status: 'starting', startup: startup.view() });
      return;
    }
    const v = startup.view();
    const what = v.phase === 'snapshot' ? 'loading its snapshot' : `replaying its journal (${v.replayed} of ${v.toReplay} commands)`;
    await reply.status(503).send({ error: 'UNAVAILABLE', message: `the exchange is starting: ${what}; retry shortly` });
  };
}
