/**
 * A whole distributed deployment on loopback for the cluster tests: a real PostgreSQL and a real
 * NATS server (test/support/postgres.ts, nats.ts), and the roles as child processes of `npm
 * start`'s entry (src/main.ts) — cores, a history projector and gateways — each on its own
 * DATA_DIR and port, sharing one simulated chain file. Every process can be killed with SIGKILL
 * and started again on the same folder.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PgCommandLog } from '../../src/adapters/postgres/command-log.ts';
import { coreConfig, coreSettings } from '../../src/config/core.ts';
import { loadSettings } from '../../src/config/env.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import type { CommandLogTail } from '../../src/runtime/command-log-tail.ts';
import { LogFollower } from '../../src/runtime/log-follower.ts';
import { freePort, testServiceEnv, waitFor } from './harness.ts';
import { makeCertificates, type TestCertificates } from './certificates.ts';
import { NatsServer, type NatsServerSecurity } from './nats.ts';
import { PostgresServer } from './postgres.ts';
import { ServiceProcess } from './service-process.ts';

export interface ClusterShape {
  readonly cores: number;
  readonly gateways: number;
  /** Settings every role gets beside the test defaults (the core's rules must match everywhere). */
  readonly env?: Record<string, string>;
  /**
   * Once the first core leads, start the other roles side by side rather than one after another
   * (each process's start is mostly loading the code: on a shared 2-core CI machine this saves
   * a good part of a file's time).
   */
  readonly together?: boolean;
  /**
   * NATS asks for a token and speaks TLS only, verifying client certificates; every role gets
   * NATS_TOKEN_FILE and the NATS_TLS_* files (test/support/certificates.ts).
   */
  readonly secureNats?: boolean;
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
  /** Every role process started, whether or not its start succeeded (stop kills them all). */
  private readonly spawned: ServiceProcess[] = [];

  private constructor(readonly postgres: PostgresServer, readonly nats: NatsServer, readonly root: string, private readonly env: Record<string, string>, private readonly certificates: TestCertificates | null) {}

  static async start(shape: ClusterShape): Promise<Cluster> {
    const root = mkdtempSync(join(tmpdir(), 'exchange-cluster-'));
    const certificates = shape.secureNats === true ? makeCertificates() : null;
    const env = { ...shape.env };
    let natsSecurity: NatsServerSecurity = {};
    if (certificates !== null) {
      const token = randomBytes(24).toString('hex');
      writeFileSync(join(root, 'nats-token'), token, { mode: 0o600 });
      natsSecurity = { token, tls: { cert: certificates.serverCert, key: certificates.serverKey, verifyClientsWith: certificates.caFile } };
      Object.assign(env, {
        NATS_TOKEN_FILE: join(root, 'nats-token'), NATS_TLS_CA_FILE: certificates.caFile,
        NATS_TLS_CERT_FILE: certificates.clientCert, NATS_TLS_KEY_FILE: certificates.clientKey,
      });
    }
    const servers = await Promise.allSettled([PostgresServer.start(), NatsServer.start(natsSecurity)]);
    if (servers[0].status === 'rejected' || servers[1].status === 'rejected') {
      for (const s of servers) if (s.status === 'fulfilled') await s.value.destroy();
      certificates?.remove();
      rmSync(root, { recursive: true, force: true });
      throw servers.find((s) => s.status === 'rejected')!.reason;
    }
    const cluster = new Cluster(servers[0].value, servers[1].value, root, env, certificates);
    // A role that fails to start must not leave the servers and the other roles running: the test
    // process would wait on them until CI's limit.
    try {
      await cluster.startRoles(shape);
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  private async startRoles(shape: ClusterShape): Promise<void> {
    // The first core migrates the schema and leads; the others stand by.
    this.cores.push(await this.role('core', 'core-0'));
    await waitFor(async () => (await health(this.cores[0]!)).leading === true, 20_000, 50);
    if (shape.together === true) {
      const cores = Array.from({ length: shape.cores - 1 }, (_, i) => this.role('core', `core-${i + 1}`));
      const gateways = Array.from({ length: shape.gateways }, (_, i) => this.role('gateway', `gateway-${i}`));
      const [projector, ...rest] = await Promise.all([this.role('projector', 'projector'), ...cores, ...gateways]);
      this.projector = projector!;
      this.cores.push(...rest.slice(0, cores.length));
      this.gateways.push(...rest.slice(cores.length));
      return;
    }
    for (let i = 1; i < shape.cores; i++) this.cores.push(await this.role('core', `core-${i}`));
    this.projector = await this.role('projector', 'projector');
    for (let i = 0; i < shape.gateways; i++) this.gateways.push(await this.role('gateway', `gateway-${i}`));
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
    this.spawned.push(proc);
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

  /** Waits until some core leads; resolves it and how long the wait took (ms). */
  async awaitLeader(timeoutMs: number): Promise<{ core: ServiceProcess; ms: number }> {
    const started = performance.now();
    let found: ServiceProcess | null = null;
    await waitFor(async () => (found = await this.leader()) !== null, timeoutMs, 20);
    return { core: found!, ms: performance.now() - started };
  }

  /**
   * Starts again every core that exited by itself (a fail-stop): nothing in a test supervises the
   * processes, so this stands in for systemd's `Restart=always` (docs/deploy.md "Units"). Returns
   * the cores it restarted.
   */
  async restartExitedCores(): Promise<ServiceProcess[]> {
    const restarted = this.cores.filter(exited);
    await Promise.all(restarted.map((core) => core.start()));
    return restarted;
  }

  /**
   * A fresh core that replays the command log from PostgreSQL alone, under the same rules as the
   * cluster's roles, up to a seq of the caller's choosing (LogReplay.to).
   */
  replay(onCommand?: (command: Command) => void): LogReplay {
    const settings = loadSettings({ ...testServiceEnv(this.root, 0), ...this.env });
    return new LogReplay(new Exchange(coreConfig(coreSettings(settings))), this.postgres.url, onCommand);
  }

  /**
   * The gateway holding the stream producer's lease (docs/deploy.md "Streams across gateways"):
   * the session named for it that holds its advisory lock (a gateway standing by has a session of
   * that name too, polling for the lock), or null.
   */
  async streamProducer(): Promise<ServiceProcess | null> {
    const db = new pg.Client({ connectionString: this.postgres.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ name: string }>(
        `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'exchange-stream-producer %'`);
      if (rows.length > 1) throw new Error(`more than one stream producer: ${JSON.stringify(rows)}`);
      const port = rows[0]?.name.split(':').at(-1);
      return this.gateways.find((g) => g.child !== null && new URL(g.url).port === port) ?? null;
    } finally {
      await db.end();
    }
  }

  async stop(): Promise<void> {
    for (const proc of new Set([...this.gateways, this.projector, ...this.cores, ...this.spawned])) await proc?.kill();
    await Promise.all([this.postgres.destroy(), this.nats.destroy()]);
    this.certificates?.remove();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The process ended by itself (a fail-stop exit), not by the test's kill. */
export function exited(proc: ServiceProcess): boolean {
  const child = proc.child;
  return child !== null && (child.exitCode !== null || child.signalCode !== null);
}

/**
 * The command log replayed into a core of its own, as a standby builds it (LogFollower over
 * PgCommandLog.follow), but only up to the seq given to `to`: the closing checks compare it with
 * the history at the projector's watermark and with the leader at its applied seq, while the
 * leader's clock and feed go on appending.
 */
export class LogReplay {
  private limit = 0;
  private readonly log: PgCommandLog;
  private readonly follower: LogFollower;

  constructor(readonly exchange: Exchange, url: string, onCommand?: (command: Command) => void) {
    this.log = PgCommandLog.follow(url);
    const log = this.log;
    const capped: CommandLogTail = {
      head: async () => this.limit,
      readAfter: (after, link, count) => (after >= this.limit ? Promise.resolve([]) : log.readAfter(after, link, Math.min(count, this.limit - after))),
      onAppended: async () => async () => undefined,
    };
    this.follower = new LogFollower(exchange, capped, { pageSize: 5_000, pollMs: 60_000, onFatal: () => undefined });
    if (onCommand !== undefined) this.follower.subscribe((_events, command) => onCommand(command));
  }

  get seq(): number {
    return this.follower.appliedSeq;
  }

  /** Applies the log up to `seq` (at or past where it stands); throws if a record is missing or does not apply. */
  async to(seq: number): Promise<void> {
    if (seq < this.follower.appliedSeq) throw new Error(`the replay stands at ${this.follower.appliedSeq}, past ${seq}`);
    this.limit = seq;
    await this.follower.catchUp();
    if (this.follower.appliedSeq !== seq) throw new Error(`the replay reached seq ${this.follower.appliedSeq}, not ${seq}`);
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}

export async function health(proc: ServiceProcess): Promise<RoleHealth> {
  const reply = await fetch(`${proc.url}/health`, { signal: AbortSignal.timeout(2_000) });
  return (await reply.json()) as RoleHealth;
}
