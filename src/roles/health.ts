/**
 * GET /health of a process of the distributed mode that serves no API (a core, a projector):
 * 200 with its role and where it stands, for a supervisor, a load balancer or an operator.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Settings } from '../config/env.ts';

export interface HealthServer {
  readonly app: FastifyInstance;
  readonly address: string;
}

export async function healthServer(settings: Settings, status: () => Record<string, unknown>): Promise<HealthServer> {
  const app = Fastify({ logger: false });
  app.get('/health', async () => ({ status: 'ok', ...status() }));
  const address = await app.listen({ port: settings.port, host: settings.host });
  return { app, address };
}
