/**
 * The whole public surface on one app: every route module and every stream, over a gateway
 * context. The embedded service (service.ts) and a distributed gateway (roles/gateway.ts) mount
 * the same API this way, over a local core or over a replica of the leader's.
 */
import type { CoreQueries } from '../core/queries.ts';
import type { TypedApp } from './app.ts';
import type { GatewayContext } from './context.ts';
import { durableReads } from './durable-reads.ts';
import { metricsRoutes, type ServiceMetrics } from './metrics.ts';
import { proxyWarning } from './proxy-warning.ts';
import { adminRoutes } from './routes/admin.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { authRoutes } from './routes/auth.ts';
import { cancelAfterRoutes } from './routes/cancel-after.ts';
import { clobAccountRoutes } from './routes/clob-account.ts';
import { clobAdminRoutes } from './routes/clob-admin.ts';
import { clobMarketRoutes } from './routes/clob-markets.ts';
import { clobMmpRoutes } from './routes/clob-mmp.ts';
import { clobStrategyRoutes } from './routes/clob-strategy.ts';
import { clobTradingRoutes } from './routes/clob-trading.ts';
import { healthRoutes } from './routes/health.ts';
import { marketDataRoutes, type FundingProvider } from './routes/market-data.ts';
import { optionsBoardRoutes } from './routes/options-board.ts';
import { perpsAccountRoutes } from './routes/perps-account.ts';
import { perpsMarketRoutes } from './routes/perps-markets.ts';
import { perpsTradingRoutes } from './routes/perps-trading.ts';
import { tradeTapeRoutes } from './routes/trade-tape.ts';
import { udfRoutes } from './routes/udf.ts';
import { walletRoutes } from './routes/wallet.ts';
import { BookMirrors } from './streams/book-mirror.ts';
import { StreamHub } from './streams/hub.ts';
import { optionsStreamRoutes } from './streams/options-streams.ts';
import { perpsStreamRoutes } from './streams/perps-streams.ts';
import { portfolioStreamRoutes } from './streams/portfolio-streams.ts';
import { tradeStreamRoutes } from './streams/trades-streams.ts';

export interface ApiOptions {
  /** GET /metrics, when ADMIN_TOKEN is set. */
  readonly metrics: ServiceMetrics | null;
  readonly fundingIntervalMs: number;
}

/** Registers every route and stream on `app`; returns the stream hub (closed by the caller). */
export function mountApi(app: TypedApp, ctx: GatewayContext, options: ApiOptions): StreamHub {
  const { settings } = ctx;
  app.addHook('onRequest', proxyWarning(settings.trustProxy, (message) => app.log.warn(message)));
  durableReads(app, ctx);
  healthRoutes(app, ctx);
  authRoutes(app, ctx);
  apiKeyRoutes(app, ctx);
  walletRoutes(app, ctx);
  perpsMarketRoutes(app, ctx);
  marketDataRoutes(app, ctx, fundingProvider(ctx.core, options.fundingIntervalMs));
  tradeTapeRoutes(app, ctx);
  udfRoutes(app, ctx);
  perpsTradingRoutes(app, ctx);
  perpsAccountRoutes(app, ctx);
  clobMarketRoutes(app, ctx);
  clobTradingRoutes(app, ctx);
  clobStrategyRoutes(app, ctx);
  clobMmpRoutes(app, ctx);
  clobAccountRoutes(app, ctx);
  cancelAfterRoutes(app, ctx);
  optionsBoardRoutes(app, ctx);
  const streamSettings = { heartbeatMs: settings.heartbeatMs, ...settings.streams };
  const streams = new StreamHub(ctx, streamSettings, (err, message) => app.log.error({ err }, message));
  const clobBooks = new BookMirrors(streams, 'clob', () => ctx.core.clobMarkets());
  perpsStreamRoutes(app, streams, clobBooks);
  portfolioStreamRoutes(app, streams);
  optionsStreamRoutes(app, streams, clobBooks);
  tradeStreamRoutes(app, streams);
  if (settings.adminToken !== null) adminRoutes(app, ctx);
  if (settings.adminToken !== null) clobAdminRoutes(app, ctx);
  if (options.metrics !== null) metricsRoutes(app, options.metrics);
  // The core's alarms (a credited deposit reorged away) need an operator: they go to the error log.
  ctx.sequencer.subscribe((events) => {
    for (const e of events) if (e.type === 'alarm') app.log.error({ alarm: e.kind, at: e.at }, e.message);
  });
  return streams;
}

/**
 * Funding figures for market stats: the predicted rate of the running interval, as percentages per
 * hour and per 8 hours, and the next funding time.
 */
function fundingProvider(core: CoreQueries, intervalMs: number): FundingProvider {
  return (marketId: string, now: number) => {
    const info = core.fundingInfo(marketId, now);
    if (info === null) return null;
    const perHour = info.rate === null ? null : (info.rate * 3_600_000n * 100n) / BigInt(intervalMs);
    return { rate1hPct: perHour, rate8hPct: perHour === null ? null : perHour * 8n, nextFundingAt: info.nextFundingAt };
  };
}
