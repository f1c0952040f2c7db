/**
 * The option board and the volatility index (contract "Option board", "Volatility index (DVOL)";
 * decisions.md). The board is the only source for the chain and the IV surface. One response is one
 * clock tick of the core: bid and ask are the books' top of book when the core fitted the surface,
 * the forwards and the fitted slices are that tick's, and mark, iv and the Greeks are the reference
 * values priced from them — null for an expiry without a fitted slice and whenever the board is older
 * than its freshness limit (a stale mark is never served). Digits: iv in percent to 4 decimals and
 * the Greeks to 8, so a client can reprice a mark from the row, the forward and the slice within a
 * tick (docs/architecture.md "Option board, DVOL"). The tradable price is always the order book.
 * GET /markets/dvol/history serves the DVOL values the clock ticks computed as candles, from the
 * market history (adapters/store/projections/dvol-history.ts).
 */
import { Type } from 'typebox';
import type { ExpirySlice, OptionRow, UnderlyingBoard } from '../../core/options/board.ts';
import { formatDecimal, fromFloat } from '../../core/money.ts';
import type { TypedApp } from '../app.ts';
import { histories, type GatewayContext } from '../context.ts';
import { RESOLUTION_SECONDS, RESOLUTIONS } from '../history-port.ts';
import { apiError } from '../errors.ts';
import { decOrNull, iso, isoOrNull } from '../format.ts';
import { IsoTime, NullableIsoTime, NullableString, OrNull, responses, StringEnum } from '../schemas/common.ts';
import { candleRange, UnixSeconds, wholeNumbers } from './market-data.ts';

const PRIMARY = 'BTC';
const BOARD_MAX_AGE_MS = 5_000;

const Underlying = Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'BTC (primary) or ETH' }));

export const DvolBlock = Type.Object({
  underlying: Type.String(),
  dvol: NullableString,
  tenorDays: Type.Integer(),
  computedAt: NullableIsoTime,
});

const DvolMethod = OrNull(StringEnum(['svi-variance'], {
  description: 'svi-variance: each of the two expiries around 30 days contributes the variance of its fitted SVI slice integrated over all strikes (the VIX sum without the truncation of a listed ladder); the two are interpolated to 30 days as in the VIX method',
}));

const Decimal = (description: string) => Type.String({ description });

const SviSlice = Type.Object({
  a: Decimal('raw SVI a (total variance)'),
  b: Decimal('raw SVI b'),
  rho: Decimal('raw SVI rho'),
  m: Decimal('raw SVI m (log-moneyness)'),
  sigma: Decimal('raw SVI sigma (log-moneyness)'),
  years: Decimal('T of the slice: (expiry - computedAt) in years of 365 days, in milliseconds'),
}, {
  description: 'The published slice: total variance w(k) = a + b(rho(k - m) + sqrt((k - m)^2 + sigma^2)) at log-moneyness k = ln(strike / forwardPrice); iv = sqrt(w / years); mark = Black-76 on forwardPrice, rounded to the tick.',
});

export const BoardView = Type.Object({
  underlyingPrice: NullableString,
  underlyingSymbol: Type.String(),
  expiries: Type.Array(IsoTime),
  expiryForwards: Type.Record(Type.String(), Type.Object({
    forwardPrice: NullableString,
    futuresMarketId: Type.String(),
    forwardSource: OrNull(StringEnum(['future', 'parity', 'index'])),
    calendarArbitrageFree: OrNull(Type.Boolean()),
    quotesForward: OrNull(Type.String({ description: 'the forward the book quotes were measured against: the median of the strikes\' put-call parity forwards (else forwardPrice)' })),
    svi: OrNull(SviSlice),
    sliceHeld: OrNull(Type.Boolean({ description: 'true while a fit that moved the at-the-money vol more than one vol point awaits confirmation and the previous slice is served' })),
    calendarRepaired: OrNull(Type.Boolean({ description: 'true when the slice was lifted to remove a calendar shortfall against the previous expiry' })),
  })),
  options: Type.Array(Type.Object({
    id: Type.String(),
    type: StringEnum(['call', 'put']),
    strike: Type.String(),
    expiry: IsoTime,
    bid: NullableString,
    ask: NullableString,
    mark: NullableString,
    iv: OrNull(Type.String({ description: 'mark implied volatility in percent, 4 decimals, e.g. "55.1234"' })),
    delta: NullableString,
    gamma: NullableString,
    vega: OrNull(Type.String({ description: 'USDC per vol point' })),
    theta: OrNull(Type.String({ description: 'USDC per calendar day' })),
  })),
  computedAt: NullableIsoTime,
  volatilityIndex: OrNull(DvolBlock),
});

const DvolHistoryView = Type.Object({
  underlying: Type.String(),
  resolution: StringEnum(RESOLUTIONS),
  tenorDays: Type.Integer(),
  bars: Type.Array(Type.Object({
    t: Type.Integer({ description: 'bucket start, Unix seconds, ascending' }),
    open: Type.String({ description: 'the first DVOL of the bucket, percent (decimal string)' }),
    high: Type.String(),
    low: Type.String(),
    close: Type.String({ description: 'the last DVOL of the bucket' }),
  }), { description: 'buckets in which DVOL had a value; the others are omitted' }),
});

const DVOL_HISTORY_DESCRIPTION = `The DVOL the service computed on each clock tick (the value GET
/markets/dvol served then, percent to 2 decimals), as open, high, low and close per bucket of
\`resolution\` (minutes, or D for a UTC day; default 15). A bucket's time is its start (floor(t / size)
x size); buckets whose start lies in [from, to] (Unix seconds) are returned, oldest first; \`to\`
defaults to now, \`from\` to \`to\` minus 300 buckets (at most 90 days). Ticks without a DVOL (inputs
missing or stale) record nothing, so buckets without one are omitted. \`from\` > \`to\` is 400
VALIDATION_ERROR, a range over 90 days 400 RANGE_TOO_LARGE, an unknown underlying 404. Recorded in the
market history (one row per underlying and minute, kept like the trade candles).`;

/** A model float as a plain decimal string at `digits` places (the pricing boundary). */
function num(x: number | null, digits: number): string | null {
  if (x === null) return null;
  const f = fromFloat(x, digits, 'halfUp');
  return f === null ? null : formatDecimal(f);
}

/**
 * The board of `underlying` as one clock tick of the core: `board` is the core's latest (the REST
 * route reads after the durability barrier) or the latest durable one (the stream).
 */
export function boardView(ctx: GatewayContext, underlying: string, now: number, board: UnderlyingBoard | undefined = ctx.core.optionBoard(underlying)) {
  const index = ctx.core.indexPrice(underlying, now);
  // The board is computed on clock ticks; between the index going stale and the next tick it still
  // holds what the fresh index gave. No index now, no mark: the view never shows one without it.
  const fresh = board !== undefined && now - board.computedAt <= BOARD_MAX_AGE_MS && index !== null;
  const expiries = board?.expiries ?? [];
  return {
    underlyingPrice: decOrNull(index),
    underlyingSymbol: underlying,
    expiries: expiries.map((e) => iso(e.expiry)),
    expiryForwards: Object.fromEntries(expiries.map((e) => [iso(e.expiry), forwardView(e, fresh)])),
    options: expiries.flatMap((e) => e.rows.map((r) => rowView(r, fresh))),
    computedAt: board === undefined ? null : iso(board.computedAt),
    volatilityIndex: dvolBlock(ctx, underlying, now),
  };
}

function forwardView(e: ExpirySlice, fresh: boolean) {
  const svi = fresh && e.svi !== null ? e.svi : null;
  return {
    forwardPrice: fresh ? decOrNull(e.forward) : null,
    futuresMarketId: e.futuresMarketId,
    forwardSource: fresh ? e.forwardSource : null,
    calendarArbitrageFree: fresh ? e.calendarFree : null,
    quotesForward: fresh ? decOrNull(e.quotesForward) : null,
    svi: svi === null ? null : {
      a: sig(svi.a), b: sig(svi.b), rho: sig(svi.rho), m: sig(svi.m), sigma: sig(svi.sigma), years: sig(e.years),
    },
    sliceHeld: fresh && e.svi !== null ? e.held : null,
    calendarRepaired: fresh && e.svi !== null ? e.calendarRepaired : null,
  };
}

/** A model parameter with 15 significant digits as a plain decimal (never an exponent). */
function sig(x: number): string {
  const digits = Math.min(Math.max(14 - Math.floor(Math.log10(Math.abs(x) || 1)), 0), 18);
  return num(x, digits)!;
}

function rowView(r: OptionRow, fresh: boolean) {
  const ref = fresh && r.mark !== null;
  return {
    id: r.id,
    type: r.type,
    strike: formatDecimal(r.strike),
    expiry: iso(r.expiry),
    bid: decOrNull(r.bid),
    ask: decOrNull(r.ask),
    mark: ref ? decOrNull(r.mark) : null,
    iv: ref ? num(r.iv === null ? null : r.iv * 100, 4) : null,
    delta: ref ? num(r.delta, 8) : null,
    gamma: ref ? num(r.gamma, 12) : null,
    vega: ref ? num(r.vega, 8) : null,
    theta: ref ? num(r.theta, 8) : null,
  };
}

/**
 * DVOL while the index is fresh: the board is computed on clock ticks, and between the index going
 * stale and the next tick it still holds the value the fresh index gave.
 */
function freshDvol(ctx: GatewayContext, underlying: string, now: number) {
  return ctx.core.indexPrice(underlying, now) === null ? null : ctx.core.dvol(underlying, now);
}

export function dvolBlock(ctx: GatewayContext, underlying: string, now: number) {
  const d = freshDvol(ctx, underlying, now);
  return {
    underlying,
    dvol: d === null ? null : num(d.dvol, 2),
    tenorDays: 30,
    computedAt: d === null ? null : iso(d.computedAt),
  };
}

function knownUnderlying(ctx: GatewayContext, underlying: string | undefined): string {
  const u = underlying ?? PRIMARY;
  const listed = ctx.core.config.linear.perps.some((p) => p.underlying === u);
  if (!listed) throw apiError('NOT_FOUND', `underlying ${u} not found`);
  return u;
}

export function optionsBoardRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/markets/board', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Option board: forwards per expiry, every option with top of book and reference mark, IV, Greeks; DVOL',
      description: 'One clock tick of the core: bid/ask are the books\' top of book when the core fitted the surface (computedAt), and mark, iv (percent, 4 decimals), delta, gamma, vega (per vol point) and theta (per day) come from the raw-SVI slice fitted then (expiryForwards[expiry].svi), on Black-76 with the expiry\'s forwardPrice (from its dated future, else put-call parity, else the index: forwardSource). The quotes are measured against the forward they were made on (quotesForward) and the slice, in log-moneyness, prices the marks on forwardPrice. An expiry with fewer than 5 usable quotes has no fitted slice and its rows have no mark; no row has a mark while the index is stale (underlyingPrice null). Reference values only: the tradable price is always the order book (GET /options/orderbook/{marketId} for the live book).',
      querystring: Type.Object({ underlying: Underlying }, { additionalProperties: false }),
      response: responses({ 200: BoardView }, [400, 404, 429]),
    },
  }, async (req) => boardView(ctx, knownUnderlying(ctx, req.query.underlying), ctx.now()));

  app.get('/markets/dvol', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: '30-day constant-maturity implied volatility (VIX method on the two expiries around 30 days)',
      description: 'dvol in percent, smoothed by the interquartile mean of the last 120 values; raw is the last unsmoothed value; method says how each expiry\'s variance was obtained (svi-variance: the fitted slice integrated over all strikes). Null while inputs are missing or stale. sourceTimestamp is the index time the computation used.',
      querystring: Type.Object({ underlying: Underlying }, { additionalProperties: false }),
      response: responses({
        200: Type.Object({
          underlying: Type.String(),
          dvol: NullableString,
          tenorDays: Type.Integer(),
          computedAt: NullableIsoTime,
          sourceTimestamp: NullableIsoTime,
          raw: NullableString,
          method: DvolMethod,
        }),
      }, [400, 404, 429]),
    },
  }, async (req) => {
    const underlying = knownUnderlying(ctx, req.query.underlying ?? PRIMARY);
    const d = freshDvol(ctx, underlying, ctx.now());
    return {
      underlying,
      dvol: d === null ? null : num(d.dvol, 2),
      tenorDays: 30,
      computedAt: isoOrNull(d?.computedAt),
      sourceTimestamp: isoOrNull(d?.sourceTs),
      raw: d === null ? null : num(d.raw, 4),
      method: d === null ? null : d.method,
    };
  });

  app.get('/markets/dvol/history', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'DVOL history: open, high, low and close of the volatility index per bucket',
      description: DVOL_HISTORY_DESCRIPTION,
      querystring: Type.Object({
        underlying: Underlying,
        resolution: Type.Optional(StringEnum(RESOLUTIONS, { description: 'bucket size in minutes, or D for a UTC day; default 15' })),
        from: UnixSeconds('Unix seconds, first bucket start included; default `to` - 300 buckets (at most 90 days)'),
        to: UnixSeconds('Unix seconds, last bucket start included; default now'),
      }, { additionalProperties: false }),
      response: responses({ 200: DvolHistoryView }, [400, 404, 429]),
    },
    preValidation: (req) => wholeNumbers(req, ['from', 'to']),
  }, async (req) => {
    const underlying = knownUnderlying(ctx, req.query.underlying);
    const resolution = req.query.resolution ?? '15';
    const range = candleRange(resolution, req.query.from, req.query.to, Math.floor(ctx.now() / 1000));
    const { market } = await histories(ctx);
    const bars = await market.dvol.candles(underlying, RESOLUTION_SECONDS[resolution], range.from, range.to);
    return { underlying, resolution, tenorDays: 30, bars };
  });
}

export type { UnderlyingBoard };
