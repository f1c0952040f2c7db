/**
 * A whole distributed deployment on loopback for the cluster tests: a real PostgreSQL and a real
 * NATS server (test/support/postgres.ts, nats.ts), and the roles as child processes of `npm
 * start`'s entry (src/main.ts) — cores, a history projector and gateways — each on its own
 * DATA_DIR and port, sharing one simulated chain file. Every process can be killed with SIGKILL
 * and started again on the same folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from './harness.ts';
import { NatsServer } from './nats.ts';
import { PostgresServer } from './postgres.ts';
import { ServiceProcess } from './service-process.ts';

export interface ClusterShape {
  readonly cores: number;
  readonly gateways: number;
  /** Settings every role gets beside the test defaults (the core's rules must match everywhere). */
  readonly env?: Record<string, string>;
}

export interface RoleHealth {
  readonly status: string;
  readonly leading?: boolean;
  readonly appliedSeq?: number;
  readonly projectedSeq?: number;
  readonly journalSeq?: number;
}

export class Cluster {
  readonly cores: ServiceProcess[] = [];
  readonly gateways: ServiceProcess[] = [];
  projector: ServiceProcess | null = null;

  private constructor(readonly postgres: PostgresServer, readonly nats: NatsServer, readonly root: string, private readonly env: Record<string, string>) {}

  static async start(shape: ClusterShape): Promise<Cluster> {
    const [postgres, nats] = await Promise.all([PostgresServer.start(), NatsServer.start()]);
    const root = mkdtempSync(join(tmpdir(), 'exchange-cluster-'));
    const cluster = new Cluster(postgres, nats, root, shape.env ?? {});
    // The first core migrates the schema and leads; the others stand by.
    cluster.cores.push(await cluster.role('core', 'core-0'));
    await waitFor(async () => (await health(cluster.cores[0]!)).leading === true, 20_000, 50);
    for (let i = 1; i < shape.cores; i++) cluster.cores.push(await cluster.role('core', `core-${i}`));
    cluster.projector = await cluster.role('projector', 'projector');
    for (let i = 0; i < shape.gateways; i++) cluster.gateways.push(await cluster.role('gateway', `gateway-${i}`));
    return cluster;
  }

  /** A role's process, started (waits for its /health to answer 200). */
  async role(role: 'core' | 'gateway' | 'projector', name: string): Promise<ServiceProcess> {
    const proc = new ServiceProcess(join(this.root, name), await freePort(), {
      ROLE: role,
      NATS_URL: this.nats.url,
      DATABASE_URL: this.postgres.url,
      SIMULATED_CHAIN_FILE: join(this.root, 'chain.sqlite'),
      ...this.env,
    });
    await proc.start();
    return proc;
  }

  /** The core that leads now (its /health says so), or null. */
  async leader(): Promise<ServiceProcess | null> {
    for (const core of this.cores) {
      if (core.child === null) continue;
      const h = await health(core).catch(() => null);
      if (h?.leading === true) return core;
    }
    return null;
  }

  async stop(): Promise<void> {
    for (const proc of [...this.gateways, this.projector, ...this.cores]) await proc?.kill();
    await Promise.all([this.postgres.destroy(), this.nats.destroy()]);
    rmSync(this.root, { recursive: true, force: true });
  }
}

export async function health(proc: ServiceProcess): Promise<RoleHealth> {
  const reply = await fetch(`${proc.url}/health`, { signal: AbortSignal.timeout(2_000) });
  return (await reply.json()) as RoleHealth;
}
