/**
 * Server time, and a TradingView UDF datafeed over the candles (docs/architecture.md "Market data"):
 *
 *   GET /time           { epochMs, iso }: the service clock
 *   GET /udf/config     the datafeed configuration (onReady)
 *   GET /udf/symbols    ?symbol=   one market's LibrarySymbolInfo (symbol resolve)
 *   GET /udf/search     ?query=&type=&exchange=&limit=   symbol search
 *   GET /udf/time       Unix seconds as plain text
 *   GET /udf/history    ?symbol=&resolution=&from=&to=&countback=&price=   bars (UDF history)
 *
 * The prefix `/udf` is the datafeed URL a chart is given (`new UDFCompatibleDatafeed(origin + '/udf')`).
 * Every market of the four kinds is a symbol: perpetuals, dated futures, spot pairs and options;
 * its name and ticker are the market id. `/udf/history` serves the same one-minute candles as
 * `/perps/ohlc` (which stays as it is, perps, futures and spot pairs, `to` included), with UDF's
 * own reading of the range: `to` is excluded, `countback` takes precedence over `from`, `1D` is
 * the daily resolution as well as `D`; `price=mark|index` picks the mark or index candles as there
 * (an option's index is its underlying's; an option has no mark bars). Prices and volumes stay decimal strings (the house rule;
 * the UDF adapter reads every value with parseFloat). Errors are HTTP errors with the usual
 * `{ error, message }` envelope (an unknown symbol is 404), never `s: "error"`.
 *
 * Clock: `/time` and `/udf/time` read the service clock (`ctx.now()`), the one commands, trades
 * and candles are stamped with. It follows the system clock except while a step larger than
 * CLOCK_MAX_STEP_MS is not taken (runtime/steady-clock.ts; `clockSkewMs` in /health says by how
 * much it then differs). Tested by test/api/udf.test.ts.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { MarketSpec, MarketType } from '../../core/markets.ts';
import type { TypedApp } from '../app.ts';
import { histories, type GatewayContext } from '../context.ts';
import type { Resolution } from '../history-port.ts';
import { HISTORY_ONLY } from '../durable-reads.ts';
import { apiError } from '../errors.ts';
import { iso } from '../format.ts';
import { IsoTime, responses, StringEnum } from '../schemas/common.ts';
import { candleRange, PRICE_SOURCES, priceRows, UdfHistory, udfHistory, UnixSeconds, wholeNumbers } from './market-data.ts';
import { listedMarket, type ListedMarket } from './trade-tape.ts';

/** The exchange name symbols carry (`exchange`, `listed_exchange`; `EXCHANGE:BTC-PERP` resolves too). */
export const UDF_EXCHANGE = 'EXCHANGE';
/** Resolutions as the chart names them: minutes, and `1D` for a UTC day. */
export const UDF_RESOLUTIONS = ['1', '5', '15', '30', '60', '240', '1D'] as const;
const INTRADAY = ['1', '5', '15', '30', '60', '240'] as const;
const KINDS = ['perp', 'future', 'spot', 'option'] as const;
/** TradingView's instrument type of each kind of market. */
const UDF_TYPE: Readonly<Record<MarketType, string>> = { perp: 'futures', future: 'futures', spot: 'crypto', option: 'option' };

const ServerTime = Type.Object({
  epochMs: Type.Integer({ description: 'service clock, Unix milliseconds' }),
  iso: IsoTime,
});

const SymbolInfo = Type.Object({
  name: Type.String({ description: 'the market id' }),
  ticker: Type.String({ description: 'the market id (what /udf/history takes as symbol)' }),
  full_name: Type.String(),
  description: Type.String(),
  type: StringEnum(['futures', 'crypto', 'option']),
  session: Type.Literal('24x7'),
  timezone: Type.Literal('Etc/UTC'),
  exchange: Type.String(),
  listed_exchange: Type.String(),
  format: Type.Literal('price'),
  minmov: Type.Integer(),
  pricescale: Type.Integer({ description: '10^priceDecimals: the tick is minmov / pricescale' }),
  has_intraday: Type.Boolean(),
  has_daily: Type.Boolean(),
  has_weekly_and_monthly: Type.Boolean(),
  intraday_multipliers: Type.Array(Type.String()),
  daily_multipliers: Type.Array(Type.String()),
  supported_resolutions: Type.Array(Type.String()),
  volume_precision: Type.Integer({ description: 'sizeDecimals' }),
  data_status: Type.Literal('streaming'),
  currency_code: Type.String(),
  expired: Type.Boolean({ description: 'true once the market stopped trading (its history stays)' }),
  expiration_date: Type.Optional(Type.Integer({ description: 'futures and options: expiry, Unix seconds' })),
});

const SearchResult = Type.Object({
  symbol: Type.String(),
  full_name: Type.String(),
  description: Type.String(),
  exchange: Type.String(),
  ticker: Type.String(),
  type: Type.String(),
});

const Config = Type.Object({
  supports_search: Type.Boolean(),
  supports_group_request: Type.Boolean(),
  supports_marks: Type.Boolean(),
  supports_timescale_marks: Type.Boolean(),
  supports_time: Type.Boolean(),
  supported_resolutions: Type.Array(Type.String()),
  exchanges: Type.Array(Type.Object({ value: Type.String(), name: Type.String(), desc: Type.String() })),
  symbols_types: Type.Array(Type.Object({ name: Type.String(), value: Type.String() })),
});

const SymbolQuery = Type.String({
  minLength: 1, maxLength: 64, description: `a market id (ticker), optionally as ${UDF_EXCHANGE}:id`,
});

const HISTORY_DESCRIPTION = `TradingView UDF history: the one-minute candles of /perps/ohlc for any
market (perpetual, dated future, spot pair, option), aggregated to \`resolution\` (minutes, or \`1D\`/\`D\`
for a UTC day). Bars whose start lies in [from, to): \`to\` is excluded (UDF); with \`countback\` the
newest N bars before \`to\`, up to 90 days back, whatever \`from\` is. \`to\` defaults to now (its bar
included), \`from\` to 300 bars before. Buckets without trades are omitted; without bars the answer is
\`{ s: "no_data", nextTime? }\` (the start of the newest bar before \`from\`). Prices and volumes (base
units) are decimal strings. \`from\` > \`to\` is 400 VALIDATION_ERROR, a range over 90 days 400
RANGE_TOO_LARGE, an unknown symbol 404; \`currencyCode\` (sent by the UDF adapter) must be the
market's quote currency. \`price\` (additive) charts the mark or index candles instead, as on /perps/ohlc.`;

export function udfRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/time', {
    config: { access: 'public', durableRead: false },
    schema: {
      tags: ['system'],
      summary: 'Server time: the service clock in Unix milliseconds and ISO 8601',
      description: 'The service clock (the one commands, trades and candles are stamped with). It follows the '
        + 'system clock except while a step larger than CLOCK_MAX_STEP_MS is not taken; `clockSkewMs` in '
        + '/health then says by how much they differ.',
      response: responses({ 200: ServerTime }, [400, 429]),
    },
  }, async () => {
    const now = ctx.now();
    return { epochMs: now, iso: iso(now) };
  });

  app.get('/udf/config', {
    config: { access: 'public', durableRead: false },
    schema: {
      tags: ['market-data'],
      summary: 'TradingView UDF: datafeed configuration',
      description: 'Symbol search and resolve (not group requests), server time, no marks. The datafeed '
        + 'URL is this origin + /udf.',
      response: responses({ 200: Config }, [400, 429]),
    },
  }, async () => ({
    supports_search: true,
    supports_group_request: false,
    supports_marks: false,
    supports_timescale_marks: false,
    supports_time: true,
    supported_resolutions: [...UDF_RESOLUTIONS],
    exchanges: [{ value: UDF_EXCHANGE, name: UDF_EXCHANGE, desc: 'this venue' }],
    symbols_types: [
      { name: 'All types', value: '' },
      { name: 'Perpetual', value: 'perp' },
      { name: 'Dated future', value: 'future' },
      { name: 'Spot', value: 'spot' },
      { name: 'Option', value: 'option' },
    ],
  }));

  app.get('/udf/symbols', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'TradingView UDF: resolve one symbol (LibrarySymbolInfo)',
      description: 'Any market the core lists, of the four kinds, expired ones included (`expired`: true). '
        + 'The tick is minmov / pricescale (priceDecimals), the volume precision sizeDecimals; the session '
        + 'is 24x7 in UTC. An unknown symbol is 404.',
      querystring: Type.Object({ symbol: SymbolQuery }, { additionalProperties: false }),
      response: responses({ 200: SymbolInfo }, [400, 404, 429]),
    },
  }, async (req) => symbolInfo(resolve(ctx, req.query.symbol)));

  app.get('/udf/search', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'TradingView UDF: symbol search',
      description: 'Markets trading now whose id contains `query` (case-insensitive), of `type` (perp, '
        + 'future, spot, option; empty: all), at most `limit` (1 to 100, default 30), perpetuals and futures first.',
      querystring: Type.Object(
        {
          query: Type.Optional(Type.String({ maxLength: 64 })),
          type: Type.Optional(StringEnum(['', ...KINDS] as const)),
          exchange: Type.Optional(StringEnum(['', UDF_EXCHANGE] as const)),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 30 })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(SearchResult) }, [400, 429]),
    },
    preValidation: async (req: FastifyRequest) => wholeNumbers(req, ['limit']),
  }, async (req) => {
    const q = req.query;
    const text = (q.query ?? '').toUpperCase();
    const type = q.type === undefined || q.type === '' ? null : q.type;
    const limit = q.limit ?? 30;
    const out: ReturnType<typeof searchResult>[] = [];
    const consider = (spec: MarketSpec, open: boolean) => {
      if (!open || out.length >= limit || (type !== null && spec.type !== type)) return;
      if (spec.id.toUpperCase().includes(text)) out.push(searchResult(spec));
    };
    for (const m of ctx.core.linearMarkets().values()) consider(m.spec, m.status === 'open');
    for (const m of ctx.core.clobMarkets().values()) consider(m.spec, m.status === 'open');
    return out;
  });

  app.get('/udf/time', {
    config: { access: 'public', durableRead: false },
    schema: {
      tags: ['market-data'],
      summary: 'TradingView UDF: server time, Unix seconds as plain text',
      description: 'The service clock (as GET /time), whole seconds, as the UDF adapter expects: a bare number.',
      response: {
        200: { description: 'Unix seconds', content: { 'text/plain': { schema: { type: 'string', pattern: '^[0-9]+$' } } } },
        ...responses({}, [400, 429]),
      },
    },
  }, async (_req, reply) => {
    reply.type('text/plain; charset=utf-8');
    return String(Math.floor(ctx.now() / 1000));
  });

  app.get('/udf/history', {
    config: { access: 'public', ...HISTORY_ONLY },
    schema: {
      tags: ['market-data'],
      summary: 'TradingView UDF: bars of any market (history)',
      description: HISTORY_DESCRIPTION,
      querystring: Type.Object(
        {
          symbol: SymbolQuery,
          resolution: StringEnum([...UDF_RESOLUTIONS, 'D'] as const, { description: 'minutes, or 1D (or D) for a UTC day' }),
          from: UnixSeconds('Unix seconds, first bar start included'),
          to: UnixSeconds('Unix seconds, bar starts before it (excluded); default now, its bar included'),
          countback: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'the newest N bars before `to`' })),
          currencyCode: Type.Optional(Type.String({ maxLength: 16, description: 'sent by the UDF adapter; must be the quote currency' })),
          price: Type.Optional(StringEnum(PRICE_SOURCES, {
            description: 'as on /perps/ohlc: `trade` (default), `mark` or `index`; a spot pair\'s mark and index and an '
              + 'option\'s index are the underlying\'s index; an option has no mark bars (no_data)',
          })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: UdfHistory }, [400, 404, 429]),
    },
    preValidation: async (req: FastifyRequest) => wholeNumbers(req, ['from', 'to', 'countback']),
  }, async (req) => {
    const q = req.query;
    const market = resolve(ctx, q.symbol);
    if (q.currencyCode !== undefined && q.currencyCode !== market.spec.quoteSymbol) {
      throw apiError('VALIDATION_ERROR', `${market.spec.id} is quoted in ${market.spec.quoteSymbol}, not ${q.currencyCode}`);
    }
    const resolution: Resolution = q.resolution === '1D' ? 'D' : q.resolution;
    const source = priceRows(ctx, market.spec, q.price ?? 'trade');
    if (q.countback === undefined && q.from !== undefined && q.from === q.to) {
      // [from, from) holds no bar: answer as for any empty range.
      const history = (await histories(ctx)).market;
      const nextTime = source === null ? null : await history.lastBarBefore(source.marketId, q.from, resolution, source.series);
      return nextTime === null ? { s: 'no_data' as const } : { s: 'no_data' as const, nextTime };
    }
    const toIncluded = q.to === undefined ? undefined : Math.max(0, q.to - 1);
    if (source === null) {
      // No bars of this series (an option's mark); the range rules still apply.
      candleRange(resolution, q.countback === undefined ? q.from : undefined, toIncluded, Math.floor(ctx.now() / 1000));
      return { s: 'no_data' as const };
    }
    return udfHistory(ctx, source.marketId, resolution, q.from, toIncluded, q.countback, source.series);
  });
}

/** The market a UDF symbol names (a market id, optionally `EXCHANGE:`-prefixed), else 404. */
function resolve(ctx: GatewayContext, symbol: string): ListedMarket {
  const id = symbol.startsWith(`${UDF_EXCHANGE}:`) ? symbol.slice(UDF_EXCHANGE.length + 1) : symbol;
  const market = listedMarket(ctx, id);
  if (market === undefined) throw apiError('NOT_FOUND', `symbol ${symbol} not found`);
  return market;
}

function description(spec: MarketSpec): string {
  const expires = spec.expiry === null ? '' : `, expires ${iso(spec.expiry).slice(0, 10)}`;
  switch (spec.type) {
    case 'perp': return `${spec.baseSymbol} perpetual (${spec.quoteSymbol})`;
    case 'future': return `${spec.baseSymbol} dated future (${spec.quoteSymbol})${expires}`;
    case 'spot': return `${spec.baseSymbol}/${spec.quoteSymbol} spot`;
    case 'option': return `${spec.baseSymbol} option (${spec.quoteSymbol})${expires}`;
  }
}

function symbolInfo(m: ListedMarket) {
  const spec = m.spec;
  return {
    name: spec.id,
    ticker: spec.id,
    full_name: `${UDF_EXCHANGE}:${spec.id}`,
    description: description(spec),
    type: UDF_TYPE[spec.type] as 'futures' | 'crypto' | 'option',
    session: '24x7' as const,
    timezone: 'Etc/UTC' as const,
    exchange: UDF_EXCHANGE,
    listed_exchange: UDF_EXCHANGE,
    format: 'price' as const,
    minmov: 1,
    pricescale: 10 ** spec.priceDecimals,
    has_intraday: true,
    has_daily: true,
    has_weekly_and_monthly: false,
    intraday_multipliers: [...INTRADAY],
    daily_multipliers: ['1'],
    supported_resolutions: [...UDF_RESOLUTIONS],
    volume_precision: spec.sizeDecimals,
    data_status: 'streaming' as const,
    currency_code: spec.quoteSymbol,
    expired: !m.open,
    ...(spec.expiry === null ? {} : { expiration_date: Math.floor(spec.expiry / 1000) }),
  };
}

function searchResult(spec: MarketSpec) {
  return {
    symbol: spec.id,
    full_name: `${UDF_EXCHANGE}:${spec.id}`,
    description: description(spec),
    exchange: UDF_EXCHANGE,
    ticker: spec.id,
    type: UDF_TYPE[spec.type],
  };
}
