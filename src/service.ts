/**
 * The composition root: settings -> store -> core (recovered from the journal) -> sequencer ->
 * adapters (chain, watcher) -> gateway. `main.ts` runs it as a process; tests build it in-process
 * on a temporary DATA_DIR and a loopback port.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { SimulatedChain } from './adapters/chain/simulated-chain.ts';
import { AuthStore, SESSION_SECRET } from './adapters/store/auth-store.ts';
import { preparePrivateDataDir } from './adapters/store/data-dir.ts';
import { openDatabase } from './adapters/store/database.ts';
import { Journal } from './adapters/store/journal.ts';
import { historyProjectors } from './adapters/store/projections/index.ts';
import { WorkerJournalWriter } from './adapters/store/journal-writer.ts';
import { SimulatedFeed } from './adapters/feed/simulated-feed.ts';
import { resumedSimulatedFeed } from './adapters/feed/resumed-feed.ts';
import { fx } from './core/money.ts';
import { coreConfig, coreSettings } from './config/core.ts';
import type { Settings } from './config/env.ts';
import { Exchange } from './core/exchange.ts';
import { ExchangeQueries } from './core/queries.ts';
import { closeApp, createApp, type TypedApp } from './gateway/app.ts';
import { ApiKeys } from './gateway/auth/api-keys.ts';
import { Sessions } from './gateway/auth/sessions.ts';
import { SiweVerifier } from './gateway/auth/siwe.ts';
import type { GatewayContext } from './gateway/context.ts';
import { ServiceMetrics } from './gateway/metrics.ts';
import { mountApi } from './gateway/api.ts';
import { SignInThrottle } from './gateway/rate-limit.ts';
import { healthFields } from './gateway/routes/health.ts';
import type { StreamHub } from './gateway/streams/hub.ts';
import { Ticker } from './runtime/ticker.ts';
import { adminHttpFunder, serviceFunder, type Funder } from './agents/funding.ts';
import { MarketMaker } from './agents/market-maker.ts';
import { MARKET_MAKER_CONFIG } from './config/market-maker.ts';
import { ChainWatcher } from './runtime/chain-watcher.ts';
import { Sequencer, type Clock } from './runtime/sequencer.ts';
import { SteadyClock } from './runtime/steady-clock.ts';
import { SnapshotStore } from './adapters/store/snapshot-store.ts';
import { Snapshotter } from './adapters/store/snapshotter.ts';
import { journalFrom } from './adapters/store/journal-reader.ts';
import { JournalSegments } from './adapters/store/journal-segments.ts';
import { Startup, startupGate } from './gateway/startup.ts';

export interface Service {
  readonly app: TypedApp;
  readonly ctx: GatewayContext;
  /** The core itself, behind ctx.core (tests read engine internals and inject faults through it). */
  readonly exchange: Exchange;
  /** The SSE hub (stats for tests and benchmarks). */
  readonly streams: StreamHub;
  /** Writes the core's snapshots (tests ask for one with `snapshotNow`). */
  readonly snapshotter: Snapshotter;
  /** Listens on settings.host:port; returns the bound address. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface ServiceOptions {
  readonly onFatal?: (error: unknown) => void;
  readonly logger?: boolean;
  /** Where log lines go (default stdout); tests read them. */
  readonly logStream?: { write(line: string): void };
  /** The clock commands are stamped with (default: the wall clock without its steps, SteadyClock); tests pass one they advance. */
  readonly clock?: Clock;
}

export async function createService(settings: Settings, options: ServiceOptions = {}): Promise<Service> {
  // Everything the service writes is private to its user (adapters/store/data-dir.ts).
  process.umask(0o077);
  preparePrivateDataDir(settings.dataDir);
  const dbPath = join(settings.dataDir, 'exchange.sqlite');
  const db = openDatabase(dbPath);
  // This connection migrates, replays and serves history reads; the journal worker writes.
  const [walletHistory, tradingHistory, marketHistory] = historyProjectors(db);
  const journal = new Journal(db, [walletHistory, tradingHistory, marketHistory]);
  const authStore = new AuthStore(db);
  const exchange = new Exchange(coreConfig(coreSettings(settings)));

  let app: TypedApp | null = null;
  const onFatal = options.onFatal ?? ((error: unknown) => {
    app?.log.fatal({ err: error }, 'exchange core stopped; exiting so the journal can be replayed');
    setImmediate(() => process.exit(1));
  });
  const clock = options.clock ?? new SteadyClock(settings.clockMaxStepMs, (skewMs) => reportClockStep(app, skewMs));
  const writer = new WorkerJournalWriter(dbPath, {
    projectedTypes: journal.projectedTypes(),
    maxCoalesced: settings.journal.maxInFlight,
    maxProjectionLag: settings.journal.maxProjectionLag,
    retention: settings.history,
    archiveDataDir: settings.dataDir,
    projectedSeq: journal.head(), // recover() below projects up to the head before anything is served
  });
  // The sequencer's journal port (runtime/journal-port.ts), chosen here: SQLite, read by `journal`
  // on this connection for recovery and written by the worker behind `writer`.
  const sequencer = new Sequencer(exchange, journal, writer, clock, { ...settings.journal, onFatal });
  // The state is recovered in listen(), while the gateway already answers (startup.ts).
  const startup = new Startup();
  const snapshots = new SnapshotStore(settings.dataDir, (message) => app?.log.warn(message));
  const snapshotter = new Snapshotter({
    dbPath,
    dataDir: settings.dataDir,
    core: coreSettings(settings),
    ...settings.snapshots,
    head: () => sequencer.stats().journalHead,
    log: (level, message, detail) => app?.log[level]({ detail }, message),
  });

  const chain = new SimulatedChain({
    path: join(settings.dataDir, 'chain.sqlite'),
    chainId: settings.chainId,
    asset: 'USDC',
    blockMs: settings.chainBlockMs,
  });
  const secret = settings.jwtSecret !== null ? Buffer.from(settings.jwtSecret) : authStore.secret(SESSION_SECRET, () => randomBytes(32));
  // The gateway's identity ports (gateway/auth/identity-store.ts), chosen here: one SQLite store
  // for nonces, session revocations and API keys, on this connection.
  const sessions = new Sessions(authStore, secret, settings.publicOrigin);
  const apiKeys = new ApiKeys(authStore);
  const siwe = new SiweVerifier(authStore, settings);
  const ctx: GatewayContext = {
    settings, sequencer, core: new ExchangeQueries(exchange), history: { wallet: walletHistory, trading: tradingHistory, market: marketHistory }, siwe, sessions, apiKeys,
    signIns: new SignInThrottle(settings.rateLimit.signInsPerHour), chain, simulatedChain: chain, startedAt: performance.now(),
    now: () => clock.now(),
    clockSkewMs: () => (clock instanceof SteadyClock ? clock.skewMs : 0),
  };

  // GET /metrics exists only with ADMIN_TOKEN (gateway/metrics.ts); without it nothing is counted.
  const metrics = settings.adminToken === null ? null : new ServiceMetrics({ maker: settings.marketMaker });
  if (metrics !== null) sequencer.observe(metrics);
  const makerKey = settings.marketMakerKey ?? `0x${authStore.secret('market-maker-key', () => randomBytes(32)).toString('hex')}` as const;
  app = await createApp({
    settings,
    logger: options.logger,
    logStream: options.logStream,
    onResponse: metrics === null ? undefined : (req, reply) => metrics.observeRequest(req, reply),
    quietAccounts: settings.marketMaker ? new Set([privateKeyToAccount(makerKey).address.toLowerCase()]) : undefined,
    gate: startupGate(startup, () => healthFields(ctx)),
    identity: { sessions, apiKeys, publicOrigin: settings.publicOrigin, adminToken: settings.adminToken },
  });
  const streams = mountApi(app, ctx, { metrics, fundingIntervalMs: settings.fundingIntervalMs });
  await app.ready();

  const watcher = new ChainWatcher(chain, sequencer, {
    depositConfirmations: settings.depositConfirmations,
    reorgWatch: settings.chainReorgWatch,
    retryMaxDelayMs: settings.withdrawalRetryMaxDelayMs,
    now: () => clock.now(),
    log: (message, detail) => app?.log.warn({ detail }, message),
    alarm: (message, detail) => app?.log.error({ alarm: 'withdrawal_reorged_after_confirmation', detail }, message),
  });

  let feed: SimulatedFeed | null = null;
  const ticker = new Ticker(sequencer, settings.tickMs, (e) => app?.log.error({ err: e }, 'tick failed'));
  const maker = settings.marketMaker
    ? new MarketMaker(MARKET_MAKER_CONFIG, {
      privateKey: makerKey, now: () => clock.now(), log: (message, detail) => app?.log.warn({ detail }, message),
    })
    : null;
  metrics?.attach({ ctx, streams, maker, journalTransactions: () => writer.transactions });
  // The maker is funded by an operator (agents/funding.ts): through the admin surface when it exists,
  // else by this start-up step, which holds the chain and the sequencer. Logged as operator actions.
  const operatorLog = (message: string, detail: Record<string, unknown>) => app?.log.info({ operator: detail }, message);
  const makerFunder = (baseUrl: string): Funder => (settings.adminToken !== null
    ? adminHttpFunder(baseUrl, settings.adminToken, operatorLog)
    : serviceFunder({
      deposit: (address, amount) => chain.deposit(address, fx(amount)),
      grant: async (address, asset, amount) => {
        await sequencer.submit({ type: 'treasury.grant', account: address, asset, amount: fx(amount) });
      },
    }, operatorLog));
  // Revocations of expired tokens are dropped once a minute (sessions.ts), in memory and in SQLite.
  const sessionPrune = setInterval(() => sessions.prune(), 60_000);
  sessionPrune.unref();

  return {
    app,
    ctx,
    exchange,
    streams,
    async listen() {
      const address = await app.listen({ port: settings.port, host: settings.host });
      await recoverState(app, sequencer, journal, snapshots, new JournalSegments(settings.dataDir), startup);
      if (clock instanceof SteadyClock) clock.resumeFrom(exchange.now());
      streams.seedFromCore();
      startup.finish();
      // The simulated feed resumes from the recovered index.
      if (settings.feed === 'simulated') feed = resumedSimulatedFeed(exchange, clock, (e) => app?.log.error({ err: e }, 'feed'));
      chain.start();
      watcher.start();
      ticker.start();
      feed?.start((underlying, observations) => {
        void sequencer.submit({ type: 'prices.observe', underlying, observations });
      });
      if (maker !== null) {
        const baseUrl = loopbackUrl(app.server.address(), address);
        maker.start({ baseUrl, funder: makerFunder(baseUrl) })
          .catch((error: unknown) => app?.log.error({ err: error }, 'market maker failed to start'));
      }
      snapshotter.start();
      return address;
    },
    snapshotter,
    async close() {
      // The snapshot worker may still be loading its modules, and is only terminated once loaded
      // (snapshotter.ts): nothing else waits for that.
      const snapshotsStopped = snapshotter.stop();
      await maker?.stop(); // its requests in flight are answered before the gateway and journal close
      feed?.stop();
      ticker.stop();
      clearInterval(sessionPrune);
      chain.stop();
      streams.close();
      await closeApp(app);
      await sequencer.drain();
      await sequencer.historyBarrier().catch(() => undefined); // a failed writer has nothing more to write
      await writer.close();
      await snapshotsStopped;
      chain.close();
      db.close();
    },
  };
}

/**
 * Rebuilds the core (sequencer.recover: the newest snapshot, then the journal after it), logging
 * its progress every few seconds, as /health reports it meanwhile.
 */
async function recoverState(
  app: TypedApp, sequencer: Sequencer, journal: Journal, snapshots: SnapshotStore, segments: JournalSegments, startup: Startup,
): Promise<void> {
  let loggedAt = performance.now();
  const result = await sequencer.recover({
    snapshots,
    records: (fromSeq, previousLink) => journalFrom(journal, segments, fromSeq, previousLink),
    onProgress: (p) => {
      startup.report(p);
      if (performance.now() - loggedAt < PROGRESS_LOG_MS) return;
      loggedAt = performance.now();
      app.log.info({ replayed: p.done, toReplay: p.total, snapshotSeq: p.snapshotSeq }, 'recovering the exchange core');
    },
  });
  const from = snapshots.restored;
  app.log.info({
    ...result, ms: Math.round(result.ms), snapshotHash: from?.stateHash ?? null,
  }, from === null ? 'exchange core recovered from the journal' : `exchange core recovered from the snapshot at seq ${from.seq} and the journal after it`);
  if (sequencer.replayDivergence !== null) app.log.warn(`${sequencer.replayDivergence}; serving the replayed state (JOURNAL_REPLAY_CHECK=warn)`);
}

/**
 * The service's own listening address as a client reaches it from this host: an unspecified bind
 * (0.0.0.0, ::) is reached on loopback. The reference market maker connects there.
 */
function loopbackUrl(bound: string | AddressInfo | null, fallback: string): string {
  if (bound === null || typeof bound === 'string') return fallback;
  const host = bound.address === '0.0.0.0' ? '127.0.0.1' : bound.address === '::' ? '::1' : bound.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}`;
}

/** How often recovery logs its progress. */
const PROGRESS_LOG_MS = 3_000;


/** A step of the system clock the service clock did not take (or its end): an operator must look. */
function reportClockStep(app: TypedApp | null, skewMs: number): void {
  const log = app?.log;
  if (skewMs !== 0) {
    const message = 'system clock stepped; the service clock runs on without the step (funding, expiry and price times are not moved) until the clocks agree again or the service restarts';
    if (log !== undefined) log.error({ skewMs }, message);
    else console.error(message, { skewMs });
  } else log?.warn('system clock agrees with the service clock again');
}
