/**
 * The API suite's second target (EXCHANGE_TEST_TARGET=cluster, `npm run test:cluster-api`): the
 * harness's `startService(env)` starts a whole distributed deployment on loopback instead of the
 * in-process service — a leader and a standby core, a history projector and two gateways
 * (test/support/cluster.ts), every role with the settings the test asked for (the core's rules
 * must be the same everywhere) — and the test's `url` is a round-robin balancer in front of the two
 * gateways (test/support/balancer.ts), so consecutive requests of one client alternate between
 * them. Nothing in-process is reachable: `service` refuses every member but the balancer's HTTP
 * server (what test/streams/support.ts stopService() closes), and a test that injects a clock or
 * reads the log stream is refused at start, clearly (docs/deploy.md "Tested against"). A restart
 * on the same data folder restarts the deployment's processes on the same servers (`parked`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../src/config/env.ts';
import type { Service } from '../../src/service.ts';
import { RoundRobinBalancer } from './balancer.ts';
import { Cluster } from './cluster.ts';
import { testServiceEnv, waitFor, type TestService } from './harness.ts';

/** Settings that belong to one process (where it listens, its folder): never passed to the roles. */
const PER_PROCESS = new Set(['PORT', 'HOST', 'DATA_DIR']);

export class InProcessOnly extends Error {
  constructor(what: string) {
    super(`${what} is not available with EXCHANGE_TEST_TARGET=cluster: the service runs as separate processes behind a balancer`);
  }
}

/** `members`, and a clear refusal for any other member a test reaches for. */
function inProcessOnly(path: string, members: Record<string, unknown>): object {
  return new Proxy(members, {
    get(target, name) {
      if (typeof name === 'string' && name in target) return target[name];
      if (name === 'then' || typeof name === 'symbol') return undefined; // not a promise, not inspected
      throw new InProcessOnly(`${path}.${name}`);
    },
  });
}

/**
 * Deployments closed by a test that named its data folder, kept to be started again on it: the
 * in-process service restarted on the same DATA_DIR finds its state there, and a deployment's state
 * is in its PostgreSQL, so a restart stops every role and starts them again on the same servers.
 */
const parked = new Map<string, Cluster>();

// A parked deployment nobody started again: its servers go with the test process (synchronously:
// the process is exiting).
process.once('exit', () => {
  for (const cluster of parked.values()) {
    for (const pid of [cluster.postgres.pid(), cluster.nats.pid()]) {
      try {
        if (pid !== null) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of [cluster.root, join(cluster.postgres.dir, '..'), cluster.nats.dir]) rmSync(dir, { recursive: true, force: true });
  }
});

/** Starts every role of a parked deployment again, the first core first (it leads, as at the start). */
async function restart(cluster: Cluster): Promise<Cluster> {
  const [first, ...standbys] = cluster.cores;
  await first!.start();
  await waitFor(async () => (await cluster.leader()) !== null, 20_000, 50);
  for (const proc of [...standbys, cluster.projector, ...cluster.gateways]) await proc?.start();
  return cluster;
}

/** How long a parked deployment waits to be started again before its servers are stopped too. */
const PARKED_MS = 5_000;

async function park(cluster: Cluster, dataDir: string): Promise<void> {
  for (const proc of [...cluster.gateways, cluster.projector, ...cluster.cores]) await proc?.kill();
  parked.set(dataDir, cluster);
  // A test restarts at once; the last close of a file is never followed by a start, and the
  // servers' child processes would keep the test process from exiting.
  setTimeout(() => {
    if (parked.get(dataDir) !== cluster) return;
    parked.delete(dataDir);
    void cluster.stop();
  }, PARKED_MS);
}

export async function startClusterService(
  env: Record<string, string>,
  dataDir: string | undefined,
  options: { clock?: unknown; logStream?: unknown },
): Promise<TestService> {
  if (options.clock !== undefined) throw new InProcessOnly('an injected clock');
  if (options.logStream !== undefined) throw new InProcessOnly('the service\'s log stream');
  const roleEnv: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) if (!PER_PROCESS.has(name)) roleEnv[name] = value;
  // `ADMIN_TOKEN: ''` stands for "not set" (harness.ts): undefined removes it from a child's environment.
  if (roleEnv.ADMIN_TOKEN === '') roleEnv.ADMIN_TOKEN = undefined;
  const again = dataDir === undefined ? undefined : parked.get(dataDir);
  if (dataDir !== undefined) parked.delete(dataDir);
  const cluster = again !== undefined
    ? await restart(again)
    : await Cluster.start({ cores: 2, gateways: 2, env: roleEnv as Record<string, string> });
  let balancer: RoundRobinBalancer;
  try {
    balancer = await RoundRobinBalancer.start(cluster.gateways.map((g) => g.url), env.PORT === undefined ? 0 : Number(env.PORT));
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  const dir = mkdtempSync(join(tmpdir(), 'exchange-cluster-target-'));
  const settingsEnv: Record<string, string> = { ...testServiceEnv(dir, new URL(balancer.url).port), ...env };
  if (settingsEnv.ADMIN_TOKEN === '') delete settingsEnv.ADMIN_TOKEN;
  const settings = loadSettings(settingsEnv);
  const service = inProcessOnly('service', { app: inProcessOnly('service.app', { server: balancer.server }) }) as unknown as Service;
  return {
    url: balancer.url,
    service,
    settings,
    dataDir: dir,
    cluster,
    balancer,
    async close() {
      await balancer.close();
      if (dataDir === undefined) await cluster.stop();
      else await park(cluster, dataDir);
      rmSync(dir, { recursive: true, force: true });
    },
  } as TestService;
}
