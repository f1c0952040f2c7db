/**
 * Public market data built on trade history (contract "Market data", decisions.md "Market data"):
 *
 * - `GET /perps/ohlc`: candles in the TradingView UDF history format. `s` is `ok` with the bars,
 *   or `no_data` with an optional `nextTime` (start of the newest bar before `from`). Bad input is
 *   an HTTP error with the usual envelope (400 VALIDATION_ERROR, 400 RANGE_TOO_LARGE beyond 90
 *   days, 404 NOT_FOUND for an unknown symbol); `s: 'error'` is part of the documented UDF union
 *   but this server reports errors through HTTP status instead.
 *   UDF `countback` is accepted (newest N bars up to `to`); `from`/`to`/`countback` must be plain
 *   digits (the generic query conversion would turn "1.5" or "1e3" into numbers). `price` picks
 *   the series: `trade` (default) the trade candles, `mark` or `index` the one-minute mark and index
 *   candles the market history records from every mark the core computes (price-history.ts); their
 *   volumes are "0". A spot pair's mark and index are its underlying's index, read from the
 *   perpetual on that underlying (no_data without one).
 * - `GET /perps/market-stats`: mark, index, last trade (the newest on the public tape,
 *   trade-tape.ts), 24-hour change/high/low/volume (`volume24h` base, `volume24hUsd` quote), open
 *   interest and funding. A value without a fresh input is null (a stale index gives no mark, so
 *   `openInterestUsd` is null while there is open interest but no mark; "0" without open
 *   interest). `openInterest` (base units) is additive.
 * - Spot pairs (listed in `/perps/markets` too) are served by both: their candles come from the
 *   same projection (it records every fill of both engines); in their stats the mark and index
 *   are the underlying's index, open interest is "0" (spot has no open interest) and the funding
 *   fields are null.
 *
 * Assumptions: candle and stats history comes from the MarketHistoryReads projection (minute rows,
 * so the 24-hour window is exact to the minute: at most 1,440 rows a request, never the day's
 * trades); the last price from the tape (one keyed read); funding is read through an optional provider
 * (null fields without one). Tested over HTTP by test/api/market-data.test.ts.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { MarketSpec } from '../../core/markets.ts';
import { divRound, formatFixedDigits, mul, type Fixed } from '../../core/money.ts';
import type { ClobMarketView, LinearMarketView } from '../../core/queries.ts';
import type { TypedApp } from '../app.ts';
import { histories, type GatewayContext, type Histories } from '../context.ts';
import { RESOLUTION_SECONDS, RESOLUTIONS, type PriceSeries, type Resolution, type Stats24h } from '../history-port.ts';
import { apiError } from '../errors.ts';
import { dec, decOrNull, isoOrNull } from '../format.ts';
import { NullableIsoTime, OrNull, responses, StringEnum } from '../schemas/common.ts';

/** Funding of a market at a time, from the funding engine; null when the market has none. */
export type FundingProvider = (
  marketId: string,
  nowMs: number,
) => { rate1hPct: Fixed | null; rate8hPct: Fixed | null; nextFundingAt: number } | null;

export const MAX_CANDLE_RANGE_SEC = 90 * 86_400;
/** Bars returned by default when `from` is omitted (capped by the 90-day range). */
export const DEFAULT_BARS = 300;
const MAX_UNIX_SEC = 253_402_300_799; // 9999-12-31T23:59:59Z

export const UnixSeconds = (description: string) =>
  Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_UNIX_SEC, description }));

/** The series `GET /perps/ohlc` charts. */
export const PRICE_SOURCES = ['trade', 'mark', 'index'] as const;
export type PriceSource = (typeof PRICE_SOURCES)[number];

/** The `price` query of the candle routes. */
export const PriceQuery = Type.Optional(StringEnum(PRICE_SOURCES, {
  description: 'which price the bars chart: `trade` (default) the trades, `mark` the mark price, `index` '
    + 'the index price (one-minute candles of every mark the service computes; `v` is "0"); for a spot '
    + 'pair `mark` and `index` are both its underlying\'s index',
}));

const OhlcQuery = Type.Object(
  {
    symbol: Type.String({
      minLength: 1, maxLength: 64, description: 'market id or symbol, e.g. BTC-PERP or BTC-USDC',
    }),
    resolution: Type.Optional(
      StringEnum(RESOLUTIONS, {
        description: 'bar size in minutes, or D for a UTC day; default 15',
      }),
    ),
    from: UnixSeconds('Unix seconds, first bar start included; default `to` - 300 bars (at most 90 days)'),
    to: UnixSeconds('Unix seconds, last bar start included; default now'),
    countback: Type.Optional(Type.Integer({
      minimum: 1,
      maximum: 10_000,
      description: 'UDF: at most this many newest bars up to `to`, up to 90 days back whatever `from` is',
    })),
    price: PriceQuery,
  },
  { additionalProperties: false },
);

const Prices = Type.Array(Type.String({ description: 'decimal string' }));
const CandlesOk = Type.Object(
  {
    s: Type.Literal('ok'),
    t: Type.Array(Type.Integer(), { description: 'bar start, Unix seconds, ascending' }),
    o: Prices,
    h: Prices,
    l: Prices,
    c: Prices,
    v: Type.Array(Type.String(), { description: 'base quantity traded ("0" for mark and index bars)' }),
  },
  { description: 'Bars with at least one trade (or mark or index value); empty buckets are omitted' },
);
const CandlesNoData = Type.Object(
  {
    s: Type.Literal('no_data'),
    nextTime: Type.Optional(Type.Integer({ description: 'start (Unix s) of the newest bar before `from`' })),
  },
  { description: 'No trades (or mark or index values) in the range' },
);
const CandlesError = Type.Object(
  { s: Type.Literal('error'), errmsg: Type.String() },
  { description: 'UDF error form; this server answers errors with an HTTP status and { error, message }' },
);
/** The UDF history answer (`/perps/ohlc`, `/udf/history`). */
export const UdfHistory = Type.Union([CandlesOk, CandlesNoData, CandlesError], { description: 'UDF history' });

/**
 * Query conversion turns "1.5", "1e3", "0x10" or "" into integers; whole-number parameters here
 * must be plain digits, checked on the raw text before schema validation.
 */
const WHOLE_NUMBER_PARAMS = ['from', 'to', 'countback'] as const;
export async function plainDigits(req: FastifyRequest): Promise<void> {
  await wholeNumbers(req, WHOLE_NUMBER_PARAMS);
}

/** The named query parameters, when present, must be plain digits (1 to 15 of them). */
export async function wholeNumbers(req: FastifyRequest, names: readonly string[]): Promise<void> {
  const query = req.query as Record<string, unknown>;
  for (const name of names) {
    const value = query[name];
    if (value !== undefined && (typeof value !== 'string' || !/^[0-9]{1,15}$/.test(value))) {
      throw apiError('VALIDATION_ERROR', `query.${name} must be a whole number written in plain digits`);
    }
  }
}

const Nullable = (description?: string) => OrNull(Type.String(), { description });
const MarketStats = Type.Object({
  marketId: Type.String(),
  baseSymbol: Type.String(),
  quoteSymbol: Type.String(),
  markPrice: Nullable('null while the index is stale'),
  indexPrice: Nullable('null while the index is stale'),
  lastPrice: Nullable('price of the newest trade on the public tape (GET /markets/{marketId}/trades); null before the first trade'),
  change24hPct: Nullable('(last - open) / open x 100 over 24 h, 2 decimals half up; null without trades'),
  high24h: Nullable('highest trade price in 24 h'),
  low24h: Nullable('lowest trade price in 24 h'),
  volume24hUsd: Type.String({ description: 'quote (USDC) notional traded in 24 h; "0" without trades' }),
  volume24h: Type.String({ description: 'base quantity traded in 24 h (additive); "0" without trades' }),
  openInterest: Type.String({ description: 'open interest in base units (additive)' }),
  openInterestUsd: Nullable('open interest x mark; "0" without open interest, null without a fresh mark'),
  funding1hPct: Nullable('current 1-hour funding rate, percent (the running interval\'s prediction); null while the index is stale'),
  fundingRate8hPct: Nullable('the same rate over 8 hours, percent'),
  nextFundingAt: NullableIsoTime,
});

const OHLC_DESCRIPTION = `TradingView UDF history. Bars are aggregated from one-minute candles; a
bar's time is its start (floor(t / size) x size, so 240-minute bars start at 00, 04, ... 20 UTC and D
bars at UTC midnight) and the bars whose start lies in [from, to] are returned; buckets without trades
are omitted. \`to\` defaults to now, \`from\` to \`to\` minus 300 bars (at most 90 days). \`from\` >
\`to\` is 400 VALIDATION_ERROR; a range over 90 days is 400 RANGE_TOO_LARGE; an unknown symbol is 404
NOT_FOUND (errors use the HTTP status and the error envelope, not \`s: "error"\`). Without bars the
answer is \`{ s: "no_data", nextTime? }\`.

\`price\` (additive, default \`trade\`) charts the mark or the index instead of the trades: one-minute
candles of every mark the service computes (each clock tick and each index input) with the same
resolutions, range rules and answer shape; \`v\` is "0" and a minute without a value (stale index) is
omitted. A spot pair's mark and index are its underlying's index.`;

const STATS_DESCRIPTION = `24-hour figures (change, high, low, volume24h in base units, volume24hUsd in
USDC) come from the one-minute candles that started within the last 24 h, which the same durable fills
as the public trade tape build; lastPrice is the tape's newest trade. Values without a fresh input are null: markPrice and indexPrice while the index is stale,
lastPrice before the first trade, change24hPct/high24h/low24h without trades in 24 h, openInterestUsd
with open interest but no mark, and the funding fields where funding does not apply. For a spot pair
markPrice and indexPrice are the underlying's index, openInterest and openInterestUsd are "0" and the
funding fields are null.`;

/** A market the candle and stats endpoints serve: a linear market, or a spot pair of the CLOB. */
type DataMarket =
  | { readonly kind: 'linear'; readonly market: LinearMarketView }
  | { readonly kind: 'spot'; readonly market: ClobMarketView };

export function marketDataRoutes(
  app: TypedApp,
  ctx: GatewayContext,
  funding?: FundingProvider,
): void {
  const find = (idOrSymbol: string): DataMarket => {
    const markets = ctx.core.linearMarkets();
    const byId = markets.get(idOrSymbol);
    if (byId !== undefined) return { kind: 'linear', market: byId };
    for (const m of markets.values()) if (m.spec.symbol === idOrSymbol) return { kind: 'linear', market: m };
    for (const m of ctx.core.clobMarkets().values()) {
      const named = m.spec.id === idOrSymbol || m.spec.symbol === idOrSymbol;
      if (named && !m.isOption) return { kind: 'spot', market: m };
    }
    throw apiError('NOT_FOUND', `market ${idOrSymbol} not found`);
  };

  app.get('/perps/ohlc', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Candles (TradingView UDF history format)',
      description: OHLC_DESCRIPTION,
      querystring: OhlcQuery,
      response: responses({
        200: UdfHistory,
      }, [400, 404, 429]),
    },
    preValidation: plainDigits,
  }, async (req) => {
    const q = req.query;
    const source = priceRows(ctx, find(q.symbol).market.spec, q.price ?? 'trade');
    if (source === null) {
      candleRange(q.resolution ?? '15', q.from, q.to, Math.floor(ctx.now() / 1000)); // the range rules still apply
      return { s: 'no_data' as const };
    }
    return udfHistory(ctx, source.marketId, q.resolution ?? '15', q.from, q.to, q.countback, source.series);
  });

  app.get('/perps/market-stats', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Market stats: mark, index, last, 24-hour change, volume, open interest, funding',
      description: STATS_DESCRIPTION,
      querystring: Type.Object(
        { marketId: Type.String({ minLength: 1, maxLength: 64 }) },
        { additionalProperties: false },
      ),
      response: responses({ 200: MarketStats }, [400, 404, 429]),
    },
  }, async (req) => {
    const found = find(req.query.marketId);
    const history = await histories(ctx);
    const now = ctx.now();
    return found.kind === 'linear'
      ? await marketStats(ctx, history, found.market, now, funding)
      : await spotStats(ctx, history, found.market, now);
  });
}

/**
 * Where the bars of `price` for a market are kept: its own trade, mark or index rows (a perpetual
 * or dated future); for a spot pair's mark or index and an option's index, the index rows of the
 * perpetual on its underlying; null for an option's mark (no candles) or without such a market.
 */
export function priceRows(
  ctx: GatewayContext,
  spec: Pick<MarketSpec, 'id' | 'type' | 'underlying'>,
  price: PriceSource,
): { marketId: string; series: 'trade' | PriceSeries } | null {
  if (price === 'trade' || spec.type === 'perp' || spec.type === 'future') return { marketId: spec.id, series: price };
  if (spec.type === 'option' && price === 'mark') return null;
  const underlying = spec.underlying;
  let fallback: string | null = null;
  for (const m of ctx.core.linearMarkets().values()) {
    if (m.spec.underlying !== underlying) continue;
    if (m.spec.expiry === null) return { marketId: m.spec.id, series: 'index' };
    fallback ??= m.spec.id;
  }
  return fallback === null ? null : { marketId: fallback, series: 'index' };
}

/**
 * UDF history of a market: the bars whose start lies in [from, to] (Unix seconds, `to` included;
 * /udf/history passes its exclusive `to` minus one). UDF: countback takes precedence over `from`
 * (a TradingView daily chart asks for 300+ days with a countback); the newest bars are then served
 * from up to 90 days back.
 */
export async function udfHistory(
  ctx: GatewayContext,
  marketId: string,
  resolution: Resolution,
  fromSec: number | undefined,
  toSec: number | undefined,
  countback: number | undefined,
  series: 'trade' | PriceSeries = 'trade',
) {
  const range = candleRange(resolution, countback === undefined ? fromSec : undefined, toSec, Math.floor(ctx.now() / 1000));
  const from = countback === undefined ? range.from : range.to - MAX_CANDLE_RANGE_SEC;
  const history = (await histories(ctx)).market;
  const bars = await history.candles(marketId, resolution, Math.max(0, from), range.to, countback, series);
  if (bars.length === 0) {
    const nextTime = await history.lastBarBefore(marketId, Math.max(0, from), resolution, series);
    return nextTime === null ? { s: 'no_data' as const } : { s: 'no_data' as const, nextTime };
  }
  return {
    s: 'ok' as const,
    t: bars.map((b) => b.t),
    o: bars.map((b) => b.o),
    h: bars.map((b) => b.h),
    l: bars.map((b) => b.l),
    c: bars.map((b) => b.c),
    v: bars.map((b) => b.v),
  };
}

/** Resolves the defaults and checks the range of a candle request (all in Unix seconds). */
export function candleRange(
  resolution: Resolution,
  from: number | undefined,
  to: number | undefined,
  nowSec: number,
): { from: number; to: number } {
  const end = to ?? nowSec;
  const start = from ?? end - Math.min(DEFAULT_BARS * RESOLUTION_SECONDS[resolution], MAX_CANDLE_RANGE_SEC);
  if (start > end) throw apiError('VALIDATION_ERROR', '`from` must not be later than `to`');
  if (end - start > MAX_CANDLE_RANGE_SEC) {
    throw apiError('RANGE_TOO_LARGE', 'the candle range (`to` - `from`) is capped to 90 days');
  }
  return { from: start, to: end };
}

/** (last - open) / open x 100, rounded half up to 2 decimals, computed exactly. */
export function changePct(open: Fixed, last: Fixed): string {
  const hundredths = divRound((last - open) * 10_000n, open, 'halfUp');
  return formatFixedDigits(hundredths * 10n ** 16n, 2);
}

async function marketStats(
  ctx: GatewayContext,
  history: Histories,
  market: LinearMarketView,
  now: number,
  funding: FundingProvider | undefined,
) {
  const spec = market.spec;
  const mark = ctx.core.markPrice(spec.id, now);
  const index = ctx.core.index(spec.underlying, now)?.price ?? null;
  const day = await history.market.stats24h(spec.id, now);
  const openInterest = market.units.size(market.openInterestLots);
  let openInterestUsd: string | null;
  if (openInterest === 0n) openInterestUsd = '0';
  else openInterestUsd = mark === null ? null : dec(mul(openInterest, mark, 'halfUp'));
  const f = funding?.(spec.id, now) ?? null;
  return {
    ...dayFigures(spec, mark, index, await lastPrice(history, spec.id), day),
    openInterest: dec(openInterest),
    openInterestUsd,
    funding1hPct: decOrNull(f?.rate1hPct ?? null),
    fundingRate8hPct: decOrNull(f?.rate8hPct ?? null),
    nextFundingAt: isoOrNull(f?.nextFundingAt),
  };
}

/** Stats of a spot pair: marked at the index, no open interest, no funding. */
async function spotStats(ctx: GatewayContext, history: Histories, market: ClobMarketView, now: number) {
  const index = ctx.core.index(market.spec.underlying, now)?.price ?? null;
  const day = await history.market.stats24h(market.spec.id, now);
  return {
    ...dayFigures(market.spec, index, index, await lastPrice(history, market.spec.id), day),
    openInterest: '0',
    openInterestUsd: '0',
    funding1hPct: null,
    fundingRate8hPct: null,
    nextFundingAt: null,
  };
}

/** The newest trade's price on the public tape (durable, like the 24-hour figures beside it). */
async function lastPrice(history: Histories, marketId: string): Promise<Fixed | null> {
  return (await history.trading.lastPublicTrade(marketId))?.price ?? null;
}

/** The fields every market's stats share: identity, mark and index, last trade and 24-hour figures. */
function dayFigures(
  spec: { id: string; baseSymbol: string; quoteSymbol: string },
  mark: Fixed | null,
  index: Fixed | null,
  last: Fixed | null,
  day: Stats24h,
) {
  return {
    marketId: spec.id,
    baseSymbol: spec.baseSymbol,
    quoteSymbol: spec.quoteSymbol,
    markPrice: decOrNull(mark),
    indexPrice: decOrNull(index),
    lastPrice: decOrNull(last),
    change24hPct: day.open === null || day.last === null || day.open === 0n
      ? null
      : changePct(day.open, day.last),
    high24h: decOrNull(day.high),
    low24h: decOrNull(day.low),
    volume24hUsd: dec(day.volumeQuote),
    volume24h: dec(day.volumeBase),
  };
}
