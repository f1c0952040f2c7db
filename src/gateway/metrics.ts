/**
 * `GET /metrics`: the service's figures in the Prometheus text format (prom-client), for an
 * operator's scraper. Served only when ADMIN_TOKEN is set (otherwise the route does not exist:
 * 404) and only to `Authorization: Bearer <ADMIN_TOKEN>` (the admin access tier: 401 otherwise,
 * as every /admin route; the route is listed in /openapi.json, so a 404 would hide nothing).
 *
 * Each service has a registry of its own (never prom-client's global one), so two services in one
 * process (the tests) keep their figures apart. Nothing here runs per request beyond an observation
 * of the request's duration (a histogram by method, route pattern and status; its `_count` is the
 * request count) and, per command, a property increment (`SequencerObserver`); everything that
 * reads state (streams, journal head, index age, the market maker) is read by `collect()` callbacks
 * when a scrape asks. Label values are bounded: route patterns (an unmatched path is `unmatched`),
 * command types and reject codes, underlyings.
 *
 *   exchange_http_request_duration_seconds{method,route,status}   histogram (a stream: its lifetime)
 *   exchange_commands_total{type}                                  commands the core applied
 *   exchange_command_rejections_total{type,code}                   commands the core rejected
 *   exchange_journal_batch_commands                                histogram: commands per batch sent to the journal
 *   exchange_journal_commit_seconds                                histogram: batch sent -> durable
 *   exchange_journal_transactions_total                            journal transactions (a transaction may hold several batches)
 *   exchange_journal_seq                                           the durable journal head
 *   exchange_streams_open, exchange_streams_opened_total, exchange_stream_slow_consumer_drops_total
 *   exchange_index_available{underlying}, exchange_index_age_seconds{underlying}
 *   exchange_market_maker_running, exchange_market_maker_last_cycle_age_seconds,
 *   exchange_market_maker_markets_quoted, exchange_market_maker_cycle_failures_total
 *   process_*, nodejs_*                                            prom-client's default metrics
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MarketMakerStatus } from '../agents/market-maker.ts';
import type { CommandType } from '../core/commands.ts';
import type { RejectCode } from '../core/errors.ts';
import type { SequencerObserver } from '../runtime/sequencer.ts';
import type { TypedApp } from './app.ts';
import type { GatewayContext } from './context.ts';
import type { StreamStats } from './streams/hub.ts';
import { responses } from './schemas/common.ts';

/** What the figures are read from (set once the service has built them). */
export interface MetricsSources {
  readonly ctx: GatewayContext;
  readonly streams: { stats(): StreamStats };
  /** Journal transactions committed (WorkerJournalWriter.transactions). */
  readonly journalTransactions: () => number;
  /** The reference market maker, when it runs. */
  readonly maker: { status(): MarketMakerStatus } | null;
}

const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
const COMMIT_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export class ServiceMetrics implements SequencerObserver {
  readonly registry = new Registry();
  private readonly registers = [this.registry];
  private readonly http: Histogram<'method' | 'route' | 'status'>;
  private readonly batchSize: Histogram;
  private readonly commitSeconds: Histogram;
  /** Per command type: applied, and rejected by code. Plain counts on the hot path; copied into the counters at a scrape. */
  private readonly applied = new Map<CommandType, number>();
  private readonly rejected = new Map<CommandType, Map<RejectCode, number>>();
  private sources: MetricsSources | null = null;

  /** `maker`: whether the reference market maker runs (MARKET_MAKER), so its series exist. */
  constructor(options: { readonly maker: boolean }) {
    const registers = this.registers;
    collectDefaultMetrics({ register: this.registry });
    this.http = new Histogram({
      name: 'exchange_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status: time from the request to the end of its response (a stream: its lifetime); _count is the request count',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.batchSize = new Histogram({
      name: 'exchange_journal_batch_commands', help: 'Commands per batch sent to the journal (group commit)', buckets: BATCH_BUCKETS, registers,
    });
    this.commitSeconds = new Histogram({
      name: 'exchange_journal_commit_seconds', help: 'Time from a batch sent to the journal writer to its being durable', buckets: COMMIT_BUCKETS, registers,
    });
    const { applied, rejected } = this;
    new Counter({
      name: 'exchange_commands_total', help: 'Commands the core applied, by type', labelNames: ['type'], registers,
      collect() {
        this.reset();
        for (const [type, n] of applied) this.inc({ type }, n);
      },
    });
    new Counter({
      name: 'exchange_command_rejections_total', help: 'Commands the core rejected, by type and reject code', labelNames: ['type', 'code'], registers,
      collect() {
        this.reset();
        for (const [type, codes] of rejected) for (const [code, n] of codes) this.inc({ type, code }, n);
      },
    });
    this.counter('exchange_journal_transactions_total', 'Journal transactions committed (the batches queued behind a transaction share the next one)', (s) => s.journalTransactions());
    this.gauge('exchange_journal_seq', 'The durable journal head (seq of the last journaled command)', (s) => s.ctx.sequencer.stats().journalHead);
    this.gauge('exchange_core_healthy', '1 while the core accepts commands, 0 after a fail-stop', (s) => (s.ctx.sequencer.isHealthy() ? 1 : 0));
    this.gauge('exchange_streams_open', 'Open SSE streams', (s) => s.streams.stats().connections);
    this.counter('exchange_streams_opened_total', 'SSE streams opened', (s) => s.streams.stats().opened);
    this.counter('exchange_stream_slow_consumer_drops_total', 'SSE streams dropped with SLOW_CONSUMER (the client did not read)', (s) => s.streams.stats().slowConsumerDrops);
    this.indexGauges();
    if (options.maker) this.makerGauges();
  }

  /** Starts reading state at scrapes (the service calls it once everything is built). */
  attach(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** The request's duration by method, route pattern and status (the app's onResponse, app.ts). */
  observeRequest(req: FastifyRequest, reply: FastifyReply): void {
    const route = req.routeOptions.url ?? 'unmatched';
    this.http.observe({ method: req.method, route, status: reply.statusCode }, reply.elapsedTime / 1000);
  }

  command(type: CommandType, code: RejectCode | null): void {
    if (code === null) {
      this.applied.set(type, (this.applied.get(type) ?? 0) + 1);
      return;
    }
    let codes = this.rejected.get(type);
    if (codes === undefined) this.rejected.set(type, (codes = new Map()));
    codes.set(code, (codes.get(code) ?? 0) + 1);
  }

  batch(commands: number, ms: number): void {
    this.batchSize.observe(commands);
    this.commitSeconds.observe(ms / 1000);
  }

  /** The text a scrape gets. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** A value read from the sources at a scrape, or null before they are attached. */
  private read<T>(f: (s: MetricsSources) => T): T | null {
    return this.sources === null ? null : f(this.sources);
  }

  /** A counter whose total is read at a scrape (0 before the sources are attached). */
  private counter(name: string, help: string, value: (s: MetricsSources) => number): void {
    const read = () => this.read(value) ?? 0;
    new Counter({
      name, help, registers: this.registers,
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** A gauge read at a scrape (0 before the sources are attached). */
  private gauge(name: string, help: string, value: (s: MetricsSources) => number): void {
    const read = () => this.read(value) ?? 0;
    new Gauge({
      name, help, registers: this.registers,
      collect() {
        this.set(read());
      },
    });
  }

  /**
   * Per underlying (those with an index input or a listed market): whether its index is available
   * (fresh inputs) and the age of its newest input, on the service clock; the index goes
   * unavailable past INDEX_MAX_AGE_MS.
   */
  private indexGauges(): void {
    const underlyings = () => this.read((s) => {
      const { core } = s.ctx;
      const names = new Set(core.indexedUnderlyings());
      for (const m of core.linearMarkets().values()) names.add(m.spec.underlying);
      const now = s.ctx.now();
      return [...names].sort().map((name) => {
        const newest = core.newestIndexInputTs(name);
        return { name, available: core.index(name, now) !== null, ageSeconds: newest === null ? null : Math.max(0, now - newest) / 1000 };
      });
    }) ?? [];
    new Gauge({
      name: 'exchange_index_available', help: '1 while the underlying has an index (fresh inputs), else 0', labelNames: ['underlying'], registers: this.registers,
      collect() {
        this.reset();
        for (const u of underlyings()) this.set({ underlying: u.name }, u.available ? 1 : 0);
      },
    });
    new Gauge({
      name: 'exchange_index_age_seconds', help: 'Seconds since the newest index input of the underlying (any source or a push), fresh or not', labelNames: ['underlying'], registers: this.registers,
      collect() {
        this.reset();
        for (const u of underlyings()) if (u.ageSeconds !== null) this.set({ underlying: u.name }, u.ageSeconds);
      },
    });
  }

  /**
   * The reference market maker's status (registered only when it runs). The cycle age counts from
   * its start until a first cycle completes, so a maker that never gets going (sign-in, funding)
   * ages like one that stopped.
   */
  private makerGauges(): void {
    const status = (s: MetricsSources) => s.maker?.status() ?? null;
    this.gauge('exchange_market_maker_running', '1 while the reference market maker is signed in, funded and cycling, else 0', (s) => (status(s)?.running === true ? 1 : 0));
    this.gauge('exchange_market_maker_last_cycle_age_seconds', 'Seconds since the reference market maker began its last cycle that ran to its end (before the first: since it started)', (s) => {
      const st = status(s);
      const at = st?.lastCycleAt ?? st?.startedAt ?? null;
      return at === null ? 0 : Math.max(0, s.ctx.now() - at) / 1000;
    });
    this.gauge('exchange_market_maker_markets_quoted', 'Markets and option instruments the reference market maker has a ladder on', (s) => status(s)?.marketsQuoted ?? 0);
    this.counter('exchange_market_maker_cycle_failures_total', 'Reference market maker cycles that ended in an error (each is logged)', (s) => status(s)?.cycleFailures ?? 0);
  }
}

/**
 * Registers `GET /metrics` (call only when ADMIN_TOKEN is set; the app observes each request's
 * duration through its `onResponse` option). The route reads no live core state a crash could take
 * back: no durability barrier.
 */
export function metricsRoutes(app: TypedApp, metrics: ServiceMetrics): void {
  app.get('/metrics', {
    config: { access: 'admin', durableRead: false },
    schema: {
      tags: ['admin'],
      summary: 'Service metrics in the Prometheus text format',
      description: 'Registered only when ADMIN_TOKEN is set (otherwise 404) and answered only to `Authorization: Bearer <ADMIN_TOKEN>` (otherwise 401). HTTP requests by route and status, commands applied and rejected by type, journal batch sizes and commit latency, open streams and slow-consumer drops, index freshness per underlying, the reference market maker\'s health, and process figures (docs/architecture.md "Observability").',
      response: {
        ...responses({}, [401, 429]),
        200: {
          description: 'Prometheus text exposition format 0.0.4',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    },
  }, async (_req, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.text();
  });
}
