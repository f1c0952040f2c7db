/**
 * ROLE=core, the distributed mode's sequencer (docs/deploy.md, docs/architecture.md "Distributed
 * mode"). Every core starts as a hot standby: it replays the PostgreSQL command log into its own
 * core and follows it. The one that takes the leader lease bumps the epoch, applies what it had
 * not followed yet, and from then on is the exchange's sequencer: commands arrive over NATS, go
 * through the same Sequencer as the embedded default (group commit into the log before any
 * answer), and the clock, the feed, the chain watcher and the market maker run here. A leader
 * that loses its lease, or whose append is fenced, stops (fail-stop; its supervisor starts it
 * again as a standby).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SimulatedChain } from '../adapters/chain/simulated-chain.ts';
import { closeNats, connectNats, type NatsConnection } from '../adapters/nats/connection.ts';
import { CommandBusServer, type BusReply } from '../adapters/nats/command-bus.ts';
import { PgCommandLog } from '../adapters/postgres/command-log.ts';
import { migratePostgres } from '../adapters/postgres/database.ts';
import { LeaderLease } from '../adapters/postgres/leader-lease.ts';
import { restoreAtStart } from '../adapters/postgres/snapshot-store.ts';
import { preparePrivateDataDir } from '../adapters/store/data-dir.ts';
import { adminHttpFunder } from '../agents/funding.ts';
import { MarketMaker } from '../agents/market-maker.ts';
import { coreConfig, coreSettings } from '../config/core.ts';
import type { Settings } from '../config/env.ts';
import { MARKET_MAKER_CONFIG } from '../config/market-maker.ts';
import type { Command } from '../core/commands.ts';
import { Exchange } from '../core/exchange.ts';
import { ChainWatcher } from '../runtime/chain-watcher.ts';
import { LogFollower } from '../runtime/log-follower.ts';
import { Sequencer } from '../runtime/sequencer.ts';
import { SteadyClock } from '../runtime/steady-clock.ts';
import { Ticker } from '../runtime/ticker.ts';
import { healthServer } from './health.ts';
import { resumedSimulatedFeed } from '../adapters/feed/resumed-feed.ts';
import type { SimulatedFeed } from '../adapters/feed/simulated-feed.ts';

export interface CoreLog {
  info(message: string, detail?: Record<string, unknown>): void;
  warn(message: string, detail?: Record<string, unknown>): void;
  error(message: string, detail?: Record<string, unknown>): void;
}

export interface CoreRoleOptions {
  readonly log: CoreLog;
  /** The core stopped (lease lost, append fenced or failed, replica diverged): exit, to be restarted as a standby. */
  readonly onFatal: (error: unknown) => void;
  /** Between attempts to take the lease while another core leads. */
  readonly leasePollMs?: number;
}

export interface CoreRole {
  /** Where GET /health answers (role, leading, epoch, applied seq). */
  readonly address: string;
  leading(): boolean;
  close(): Promise<void>;
}

/** Between attempts to start the maker while its gateway does not answer. */
const MAKER_RETRY_MS = 2_000;

/** How long the leader remembers the ids it answered (a gateway retries for ~6 s at most). */
const ANSWERED_ID_TTL_MS = 60_000;
/** The command ids a core remembers from the log (LogFollower's window), a snapshot's included. */
const REMEMBERED_IDS = 100_000;

export async function startCoreRole(settings: Settings, options: CoreRoleOptions): Promise<CoreRole> {
  const servers = settings.distributed;
  if (servers === null) throw new Error('ROLE=core needs NATS_URL and DATABASE_URL');
  process.umask(0o077);
  preparePrivateDataDir(settings.dataDir);
  await migratePostgres(servers.databaseUrl);
  const holder = `${hostname()}:${process.pid}`;
  const exchange = new Exchange(coreConfig(coreSettings(settings)));
  const started = performance.now();
  // The newest snapshot, then only the log after it (docs/architecture.md "Distributed mode: snapshots").
  const { restored, commandIds } = await restoreAtStart(servers.databaseUrl, exchange, {
    commandIds: REMEMBERED_IDS, report: (message) => options.log.error(message),
  });
  const snapshotSeq = restored?.seq ?? null;
  const followLog = PgCommandLog.follow(servers.databaseUrl);
  const follower = new LogFollower(exchange, followLog, { pageSize: 2_000, pollMs: 500, onFatal: options.onFatal }, restored ?? undefined, REMEMBERED_IDS);
  await follower.start();
  const replayed = follower.appliedSeq - (snapshotSeq ?? 0);
  options.log.info('core replica caught up with the command log; standing by', { seq: follower.appliedSeq, snapshotSeq, replayed, ms: Math.round(performance.now() - started) });
  const nats = await connectNats(servers.natsUrl, `exchange-core ${holder}`, { waitForServer: true, security: servers.natsSecurity });
  const lease = new LeaderLease(servers.databaseUrl);
  const leader = new Leadership(settings, options, exchange, follower, nats, commandIds);
  const health = await healthServer(settings, () => ({
    role: 'core', leading: leader.epoch !== null, epoch: leader.epoch, appliedSeq: leader.appliedSeq(), holder, start: { snapshotSeq, replayed },
  }));
  const stopWaiting = new AbortController();
  lease.onLost((error) => {
    if (leader.epoch !== null) options.onFatal(new Error(`the leader lease was lost: ${error.message}`, { cause: error }));
  });
  void lease.acquire(holder, { pollMs: options.leasePollMs ?? 200, signal: stopWaiting.signal }).then(
    (epoch) => leader.lead(epoch),
    (error: unknown) => {
      if (!stopWaiting.signal.aborted) options.onFatal(error);
    },
  ).catch(options.onFatal);
  return {
    address: health.address,
    leading: () => leader.epoch !== null,
    async close() {
      stopWaiting.abort();
      await leader.close();
      await follower.stop();
      await lease.release().catch(() => undefined);
      await followLog.close();
      await closeNats(nats);
      await health.app.close();
    },
  };
}

/** What the core runs once it leads: the sequencer over the log, the bus, the clock, feed, chain and maker. */
class Leadership {
  epoch: number | null = null;
  private sequencer: Sequencer | null = null;
  private log: PgCommandLog | null = null;
  private bus: CommandBusServer | null = null;
  private readonly stops: (() => void | Promise<void>)[] = [];
  private readonly answered = new Map<string, { reply: BusReply; at: number }>();
  private closing = false;

  constructor(
    private readonly settings: Settings,
    private readonly options: CoreRoleOptions,
    private readonly exchange: Exchange,
    private readonly follower: LogFollower,
    private readonly nats: NatsConnection,
    /** The ids of the log's last records before the snapshot this core started from (the follower saw none of them). */
    private readonly idsBeforeSnapshot: Map<string, number>,
  ) {}

  appliedSeq(): number {
    return this.sequencer?.stats().journalHead ?? this.follower.appliedSeq;
  }

  async lead(epoch: number): Promise<void> {
    const { settings, options } = this;
    const url = settings.distributed!.databaseUrl;
    // The head read after the bump includes every batch a deposed leader committed before it.
    const head = await this.follower.catchUp();
    await this.follower.stop();
    const log = await PgCommandLog.lead(url, epoch, { maxCoalesced: settings.journal.maxInFlight * 16 });
    const writerHead = await log.head();
    if (writerHead !== head || this.follower.appliedSeq !== head) {
      throw new Error(`the log moved after the epoch bump (replica at ${this.follower.appliedSeq}, log at ${writerHead}): refusing to lead`);
    }
    const clock = new SteadyClock(settings.clockMaxStepMs, (skewMs) => options.log.warn('system clock stepped', { skewMs }));
    clock.resumeFrom(this.exchange.now());
    const sequencer = new Sequencer(this.exchange, log, log, clock, { ...settings.journal, onFatal: options.onFatal });
    await sequencer.recover({ records: () => [] });
    this.sequencer = sequencer;
    this.log = log;
    this.epoch = epoch;
    this.bus = new CommandBusServer(this.nats, { onError: (error) => options.log.warn('command bus', { error: String(error) }) });
    this.bus.start((commandId, command) => this.handle(commandId, command));
    this.startServices(sequencer, clock);
    options.log.info('leading the exchange', { epoch, seq: head });
  }

  /** One command from a gateway: applied once per id (the log's and this leader's memory of ids). */
  private async handle(commandId: string, command: Command): Promise<BusReply> {
    const logged = this.follower.seqOf(commandId) ?? this.idsBeforeSnapshot.get(commandId);
    if (logged !== undefined) return { ok: true, seq: logged };
    const known = this.answered.get(commandId);
    if (known !== undefined) return known.reply;
    const sequencer = this.sequencer!;
    const outcome = await sequencer.submit(command, commandId);
    // The head once the command's batch is durable: at or past its seq, which is all a gateway waits for.
    const reply: BusReply = outcome.ok ? { ok: true, seq: sequencer.stats().journalHead } : outcome;
    this.remember(commandId, reply);
    return reply;
  }

  private remember(commandId: string, reply: BusReply): void {
    const now = performance.now();
    this.answered.set(commandId, { reply, at: now });
    for (const [id, entry] of this.answered) {
      if (now - entry.at < ANSWERED_ID_TTL_MS) break;
      this.answered.delete(id);
    }
  }

  private startServices(sequencer: Sequencer, clock: SteadyClock): void {
    const { settings, options } = this;
    const chain = new SimulatedChain({
      path: settings.simulatedChainFile ?? join(settings.dataDir, 'chain.sqlite'),
      chainId: settings.chainId,
      asset: 'USDC',
      blockMs: settings.chainBlockMs,
    });
    const watcher = new ChainWatcher(chain, sequencer, {
      depositConfirmations: settings.depositConfirmations,
      reorgWatch: settings.chainReorgWatch,
      retryMaxDelayMs: settings.withdrawalRetryMaxDelayMs,
      now: () => clock.now(),
      log: (message, detail) => options.log.warn(message, { detail }),
      alarm: (message, detail) => options.log.error(message, { alarm: 'withdrawal_reorged_after_confirmation', detail }),
    });
    const ticker = new Ticker(sequencer, settings.tickMs, (e) => options.log.error('tick failed', { error: String(e) }));
    let feed: SimulatedFeed | null = null;
    if (settings.feed === 'simulated') {
      feed = resumedSimulatedFeed(this.exchange, clock, (e) => options.log.error('feed', { error: String(e) }));
      feed.start((underlying, observations) => void sequencer.submit({ type: 'prices.observe', underlying, observations }));
    }
    chain.start();
    watcher.start();
    ticker.start();
    const maker = this.startMaker(clock);
    this.stops.push(async () => {
      await maker?.stop();
      feed?.stop();
      ticker.stop();
      chain.stop();
      chain.close();
    });
  }

  /** The reference maker trades through a gateway, as any client does (MARKET_MAKER_GATEWAY). */
  private startMaker(clock: SteadyClock): MarketMaker | null {
    const { settings, options } = this;
    const gateway = settings.marketMakerGateway;
    if (!settings.marketMaker || gateway === null || settings.marketMakerKey === null || settings.adminToken === null) return null;
    const maker = new MarketMaker(MARKET_MAKER_CONFIG, {
      privateKey: settings.marketMakerKey, now: () => clock.now(), log: (message, detail) => options.log.warn(message, { detail }),
    });
    const funder = adminHttpFunder(gateway, settings.adminToken, (message, detail) => options.log.info(message, { operator: detail }));
    // The gateway may start after this core leads (or restart): the maker starts once it answers.
    const startWhenUp = async (): Promise<void> => {
      for (let attempt = 1; !this.closing; attempt++) {
        try {
          await maker.start({ baseUrl: gateway, funder });
          return;
        } catch (error) {
          if (attempt === 1 || attempt % 30 === 0) options.log.warn('market maker waiting for its gateway', { gateway, error: String(error) });
          await new Promise((resolve) => setTimeout(resolve, MAKER_RETRY_MS));
        }
      }
    };
    void startWhenUp();
    return maker;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.bus?.stop();
    for (const stop of this.stops) await stop();
    await this.sequencer?.drain();
    await this.log?.close();
  }
}
