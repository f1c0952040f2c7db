/**
 * ROLE=gateway (docs/deploy.md, docs/architecture.md "Distributed mode"): the whole public API and
 * its streams, mounted exactly as the embedded service mounts them (gateway/api.ts), over
 *   - a replica of the core that follows the PostgreSQL command log (live reads, streams);
 *   - a command door that sends commands to the leader core over NATS and answers with the
 *     replica's outcome once it has applied them (gateway/replica-door.ts);
 *   - identity and rate budgets in PostgreSQL, shared by every gateway;
 *   - the history in PostgreSQL, written by the projector role.
 * It holds nothing another gateway needs: any number run side by side, and any of them serves
 * any client.
 */
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { SimulatedChain } from '../adapters/chain/simulated-chain.ts';
import { CommandBusClient } from '../adapters/nats/command-bus.ts';
import { StreamRelayClient } from '../adapters/nats/stream-relay.ts';
import { closeNats, connectNats } from '../adapters/nats/connection.ts';
import { PgCommandLog } from '../adapters/postgres/command-log.ts';
import { migratePostgres, postgresPool } from '../adapters/postgres/database.ts';
import { openGatewayIdentity } from '../adapters/postgres/gateway-identity.ts';
import { PgHistoryWatermark, pgHistories } from '../adapters/postgres/history/index.ts';
import { restoreAtStart } from '../adapters/postgres/snapshot-store.ts';
import { preparePrivateDataDir } from '../adapters/store/data-dir.ts';
import { coreConfig, coreSettings } from '../config/core.ts';
import type { Settings } from '../config/env.ts';
import { Exchange } from '../core/exchange.ts';
import { ExchangeQueries } from '../core/queries.ts';
import { mountApi } from '../gateway/api.ts';
import { closeApp, createApp, type TypedApp } from '../gateway/app.ts';
import { coalesced } from '../gateway/coalesced.ts';
import { ApiKeys } from '../gateway/auth/api-keys.ts';
import { Sessions } from '../gateway/auth/sessions.ts';
import { SiweVerifier } from '../gateway/auth/siwe.ts';
import type { GatewayContext } from '../gateway/context.ts';
import { apiError } from '../gateway/errors.ts';
import { ServiceMetrics } from '../gateway/metrics.ts';
import { SignInThrottle } from '../gateway/rate-limit.ts';
import { ReplicaDoor } from '../gateway/replica-door.ts';
import { healthFields } from '../gateway/routes/health.ts';
import { Startup, startupGate } from '../gateway/startup.ts';
import type { StreamHub } from '../gateway/streams/hub.ts';
import { LogFollower } from '../runtime/log-follower.ts';
import { SteadyClock } from '../runtime/steady-clock.ts';
import { StreamProduction } from './stream-production.ts';

export interface GatewayRoleOptions {
  readonly onFatal?: (error: unknown) => void;
  readonly logger?: boolean;
  readonly logStream?: { write(line: string): void };
}

export interface GatewayRole {
  readonly app: TypedApp;
  readonly ctx: GatewayContext;
  readonly streams: StreamHub;
  /** The replica's state stands at this seq of the command log. */
  appliedSeq(): number;
  /** Listens, then replays the log into the replica (the API answers 503 meanwhile); returns the address. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Sessions whose every check first reads the revocations recorded since the last read. A logout on
 * one gateway is notified to the others at its commit, but the client's next request can reach
 * another gateway before the notification does: the API suite through a balancer alternating
 * gateways (npm run test:cluster-api, test/api/session.test.ts) saw a token it had just signed out
 * accepted by the other gateway. Acknowledged is acknowledged everywhere, as for the core's state.
 * The read is shared with CurrentApiKeys (one query for the checks waiting at that moment).
 */
class CurrentSessions extends Sessions {
  revocationsRead: () => Promise<void> = async () => undefined;

  override async verify(token: string): ReturnType<Sessions['verify']> {
    await this.revocationsRead();
    return super.verify(token);
  }
}

/** API keys whose every check first reads the revocations recorded since the last read (as CurrentSessions). */
class CurrentApiKeys extends ApiKeys {
  revocationsRead: () => Promise<void> = async () => undefined;

  override authenticate(secret: string, peerIp: string): ReturnType<ApiKeys['authenticate']> {
    return this.revocationsRead().then(() => super.authenticate(secret, peerIp));
  }
}

/** Routes that answer without waiting on the log (a supervisor's or a scraper's probe). */
const PROBES = new Set(['/health', '/metrics']);

export async function createGatewayRole(settings: Settings, options: GatewayRoleOptions = {}): Promise<GatewayRole> {
  const servers = settings.distributed;
  if (servers === null) throw new Error('ROLE=gateway needs NATS_URL and DATABASE_URL');
  process.umask(0o077);
  preparePrivateDataDir(settings.dataDir);
  await migratePostgres(servers.databaseUrl);
  let app: TypedApp | null = null;
  const onFatal = options.onFatal ?? ((error: unknown) => {
    app?.log.fatal({ err: error }, 'this gateway\'s replica of the core stopped; exiting');
    setImmediate(() => process.exit(1));
  });
  const clock = new SteadyClock(settings.clockMaxStepMs, () => undefined);
  const replica = new Exchange(coreConfig(coreSettings(settings)));
  // The replica starts from the newest snapshot and replays only the log after it (docs/architecture.md "Distributed mode: snapshots").
  const refusedSnapshots: string[] = [];
  const restoring = performance.now();
  const { restored } = await restoreAtStart(servers.databaseUrl, replica, { report: (m) => refusedSnapshots.push(m) });
  const restoreMs = Math.round(performance.now() - restoring);
  const log = PgCommandLog.follow(servers.databaseUrl);
  const follower = new LogFollower(replica, log, { pageSize: 2_000, pollMs: 250, onFatal }, restored ?? undefined);
  const nats = await connectNats(servers.natsUrl, `exchange-gateway ${settings.host}:${settings.port}`, { waitForServer: true, security: servers.natsSecurity });
  const bus = new CommandBusClient(nats);
  const pool = postgresPool(servers.databaseUrl, 10);
  // History reads wait on the projector's watermark, as notified (read from the table while not listening).
  const watermark = new PgHistoryWatermark(servers.databaseUrl, pool);
  await watermark.start();
  const door = new ReplicaDoor(follower, { send: (id, command) => bus.submit(id, command) }, () => log.head(), () => watermark.projectedSeq());
  const identity = await openGatewayIdentity(servers.databaseUrl, { windowMs: settings.rateLimit.windowMs });
  const secret = await identity.sessionSecret(settings.jwtSecret);
  const sessions = new CurrentSessions(identity.store, secret, settings.publicOrigin, Date.now, identity.changes);
  const revocationsRead = coalesced(() => identity.changes.poll());
  sessions.revocationsRead = revocationsRead;
  const apiKeys = new CurrentApiKeys(identity.store, Date.now, identity.changes);
  apiKeys.revocationsRead = revocationsRead;
  const chain = new SimulatedChain({
    path: settings.simulatedChainFile ?? join(settings.dataDir, 'chain.sqlite'),
    chainId: settings.chainId,
    asset: 'USDC',
    blockMs: settings.chainBlockMs,
  });
  const ctx: GatewayContext = {
    settings,
    sequencer: door,
    core: new ExchangeQueries(replica),
    history: pgHistories(pool),
    siwe: new SiweVerifier(identity.store, settings),
    sessions,
    apiKeys,
    signIns: new SignInThrottle(settings.rateLimit.signInsPerHour, undefined, identity.signInCounts),
    chain,
    simulatedChain: chain,
    startedAt: performance.now(),
    now: () => clock.now(),
    clockSkewMs: () => clock.skewMs,
  };
  const startup = new Startup();
  const metrics = settings.adminToken === null ? null : new ServiceMetrics({ maker: false });
  const maker = settings.marketMakerKey === null ? null : privateKeyToAccount(settings.marketMakerKey).address.toLowerCase();
  app = await createApp({
    settings,
    logger: options.logger,
    logStream: options.logStream,
    onResponse: metrics === null ? undefined : (req, reply) => metrics.observeRequest(req, reply),
    quietAccounts: maker === null ? undefined : new Set([maker]),
    gate: startupGate(startup, () => healthFields(ctx)),
    identity: { sessions, apiKeys, publicOrigin: settings.publicOrigin, adminToken: settings.adminToken },
    rateBudgets: identity.rateBudgets,
  });
  // Read-your-writes across gateways: the embedded service's durability barrier (durable-reads.ts)
  // runs after a handler has read the core, which is right for one process (the core already holds
  // every acknowledged write) but lets a replica answer from before a write another gateway has
  // acknowledged. So every request first waits until this replica has applied the log's head
  // (docs/architecture.md "Distributed mode"), history reads too (they look the account up in the
  // replica before reading PostgreSQL); only the probes answer at once. The API suite run through
  // a balancer that alternates gateways (npm run test:cluster-api) saw a cancel-all on one gateway
  // and the book read on the other still showing the orders.
  app.addHook('preHandler', async (req) => {
    if (PROBES.has(req.routeOptions.url ?? '')) return;
    try {
      await door.caughtUp();
    } catch {
      throw apiError('UNAVAILABLE', 'this gateway\'s replica of the core has stopped');
    }
  });
  const streams = mountApi(app, ctx, { metrics, fundingIntervalMs: settings.fundingIntervalMs });
  // Every gateway's streams are opened by one producer, so that eventSeqs are the same on all of
  // them (docs/deploy.md "Streams across gateways"); each gateway stands by to produce.
  const logger = app.log;
  const relay = new StreamRelayClient(nats, {
    report: (err, message) => logger.error({ err }, message),
    fanOut: (count, step, done) => streams.fanOut(count, step, done),
  });
  streams.relayTo(relay);
  const production = new StreamProduction(servers.databaseUrl, nats, streams, `${settings.host}:${settings.port}`, {
    info: (message, detail) => logger.info(detail ?? {}, message),
    error: (message, detail) => logger.error(detail ?? {}, message),
  });
  metrics?.attach({ ctx, streams, maker: null, journalTransactions: () => 0 });
  await app.ready();
  const sessionPrune = setInterval(() => void sessions.prune(), 60_000);
  sessionPrune.unref();
  const gateway = app;

  return {
    app: gateway,
    ctx,
    streams,
    appliedSeq: () => follower.appliedSeq,
    async listen() {
      const address = await gateway.listen({ port: settings.port, host: settings.host });
      const started = performance.now();
      for (const refusal of refusedSnapshots) gateway.log.error(refusal);
      const snapshotSeq = restored?.seq ?? null;
      startup.report({ phase: 'journal', done: 0, total: (await log.head()) - (snapshotSeq ?? 0), snapshotSeq });
      await follower.start();
      clock.resumeFrom(replica.now());
      streams.seedFromCore();
      relay.start();
      production.start();
      startup.finish();
      const replayed = follower.appliedSeq - (snapshotSeq ?? 0);
      gateway.log.info({ seq: follower.appliedSeq, snapshotSeq, replayed, restoreMs, ms: Math.round(performance.now() - started) }, 'replica of the core caught up with the command log');
      return address;
    },
    async close() {
      clearInterval(sessionPrune);
      relay.close();
      await production.stop();
      streams.close();
      await closeApp(gateway);
      await follower.stop();
      await closeNats(nats);
      apiKeys.close();
      sessions.close();
      await identity.close();
      await log.close();
      await watermark.stop();
      await pool.end();
      chain.close();
    },
  };
}
