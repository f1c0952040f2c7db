/**
 * The bars behind the candle chart, kept live. Trades: read from GET /perps/ohlc, then moved by the
 * market's trades (the trades stream the tape shows, handed in through `subscribe`): a trade inside
 * the newest bar moves its high, low and close, a later one opens the next bar; after a reconnect
 * (a new snapshot) the bars are read again, since trades may have been missed. While the requested
 * range holds no trade at all, the mark price stands in (`fallback`), until the first trade
 * arrives. Mark and index (`price=mark|index`) have no stream: their newest bars are read again
 * every PRICE_REFRESH_MS. Prices become JS numbers here only to be drawn.
 */
import type { CandlestickData, ISeriesApi, UTCTimestamp } from 'lightweight-charts';
import { market } from '../../api/account.ts';
import type { TapeTrade, TradesObserver } from '../../components/trades-tape.tsx';
import { reportError } from '../../lib/notify.ts';

export type PriceSource = 'trade' | 'mark' | 'index';
type Bar = CandlestickData<UTCTimestamp>;

/** What the chart draws: the series, its bar count, and whether Mark stands in for Trades (none yet). */
export interface ChartView {
  readonly series: PriceSource;
  readonly bars: number;
  readonly fallback: boolean;
}

export interface LiveBarsOptions {
  readonly marketId: string;
  readonly resolution: '1' | '5' | '15' | '60' | '240' | 'D';
  /** The bar size in seconds. */
  readonly seconds: number;
  /** The series the trader chose. */
  readonly source: PriceSource;
  readonly series: () => ISeriesApi<'Candlestick'> | undefined;
  readonly onView: (view: ChartView) => void;
  /** Registers an observer of the market's trades; returns its removal. */
  readonly subscribe: (observer: TradesObserver) => () => void;
}

/** How often the newest mark or index bars are read again. */
export const PRICE_REFRESH_MS = 4_000;
const BARS = 300;

/** Reads the bars, keeps them live; returns the teardown. */
export function liveBars(o: LiveBarsOptions): () => void {
  let bars: Bar[] | null = null; // null while reading: trades wait in `pending`
  let shown: PriceSource = o.source;
  let pending: TapeTrade[] = [];
  let stopped = false;
  let reads = 0;
  let failing = false;

  const read = async (price: PriceSource, countback: number): Promise<Bar[]> => {
    const h = await market.get('/perps/ohlc', { query: { symbol: o.marketId, resolution: o.resolution, countback, price } });
    return h.s === 'ok' ? h.t.map((t, i) => toBar(t, h, i)) : [];
  };
  const report = () => {
    if (bars !== null) o.onView({ series: shown, bars: bars.length, fallback: shown !== o.source });
  };
  /** Adds or replaces the newest bar (lightweight-charts only moves forward). */
  const put = (bar: Bar) => {
    if (bars === null) return;
    const last = bars[bars.length - 1];
    if (last !== undefined && bar.time < last.time) return;
    if (last !== undefined && last.time === bar.time) bars[bars.length - 1] = bar;
    else bars.push(bar);
    o.series()?.update(bar);
  };
  const applyTrades = (trades: readonly TapeTrade[]) => {
    for (const t of trades) {
      const bar = bars === null ? null : nextBar(bars[bars.length - 1], t, o.seconds);
      if (bar !== null) put(bar);
    }
    if (trades.length > 0) report();
  };

  const load = async () => {
    const mine = ++reads;
    bars = null;
    pending = [];
    try {
      let series = o.source;
      let next = await read(series, BARS);
      if (next.length === 0 && series === 'trade') {
        series = 'mark';
        next = await read(series, BARS);
      }
      if (stopped || mine !== reads) return;
      bars = next;
      shown = series;
      o.series()?.setData(next);
      report();
      if (shown === 'trade') applyTrades(pending);
      pending = [];
    } catch (e) {
      if (!stopped) reportError(e, `reading the candles of ${o.marketId}`);
    }
  };

  const refresh = async () => {
    const series = shown;
    if (bars === null || series === 'trade') return;
    try {
      const newest = await read(series, 2);
      failing = false;
      if (stopped || bars === null || shown !== series) return; // a reload since
      newest.forEach(put);
      report();
    } catch (e) {
      if (!failing && !stopped) reportError(e, `reading the ${series} candles of ${o.marketId}`);
      failing = true;
    }
  };

  const unsubscribe = o.subscribe((trades, kind, connection) => {
    if (kind === 'snapshot') {
      if (connection > 1) void load(); // a reconnect: trades may have been missed
      return;
    }
    if (bars === null) pending.push(...trades);
    else if (shown === 'trade') applyTrades(trades);
    else if (o.source === 'trade' && trades.length > 0) void load(); // the first trade: Trades replace the stand-in
  });
  const timer = setInterval(() => void refresh(), PRICE_REFRESH_MS);
  o.series()?.setData([]);
  void load();
  return () => {
    stopped = true;
    clearInterval(timer);
    unsubscribe();
  };
}

function toBar(t: number, h: { o: string[]; h: string[]; l: string[]; c: string[] }, i: number): Bar {
  return { time: t as UTCTimestamp, open: Number(h.o[i]), high: Number(h.h[i]), low: Number(h.l[i]), close: Number(h.c[i]) };
}

/** The newest bar after trade `t`: the same bar moved, a new one, or null for a trade before it. */
function nextBar(last: Bar | undefined, t: TapeTrade, size: number): Bar | null {
  const price = Number(t.price);
  const start = (Math.floor(Date.parse(t.createdAt) / 1000 / size) * size) as UTCTimestamp;
  if (last === undefined || start > last.time) return { time: start, open: price, high: price, low: price, close: price };
  if (start < last.time) return null;
  return { ...last, high: Math.max(last.high, price), low: Math.min(last.low, price), close: price };
}
