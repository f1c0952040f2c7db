/**
 * The candle chart of a perp or dated future: TradingView's lightweight-charts, its bars read from
 * GET /perps/ohlc (UDF history) at the chosen resolution, then moved live by the market's trades
 * (the same trades stream as the tape, handed in through `subscribe`): a trade inside the newest bar
 * moves its high, low and close, a later one opens the next bar. After a reconnect (a new snapshot)
 * the bars are read again, since trades may have been missed. Prices become JS numbers here only to
 * be drawn.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { CandlestickSeries, ColorType, createChart, type CandlestickData, type IChartApi, type ISeriesApi, type UTCTimestamp } from 'lightweight-charts';
import { market } from '../../api/account.ts';
import type { TapeTrade, TradesObserver } from '../../components/trades-tape.tsx';
import { reportError } from '../../lib/notify.ts';

export const RESOLUTIONS = [
  { id: '1', label: '1m', seconds: 60 },
  { id: '5', label: '5m', seconds: 300 },
  { id: '15', label: '15m', seconds: 900 },
  { id: '60', label: '1h', seconds: 3_600 },
  { id: '240', label: '4h', seconds: 14_400 },
  { id: 'D', label: '1D', seconds: 86_400 },
] as const;
export type Resolution = (typeof RESOLUTIONS)[number]['id'];

type Bar = CandlestickData<UTCTimestamp>;

interface ChartProps {
  readonly marketId: string;
  readonly priceDecimals: number;
  readonly tickSize: string;
  /** Registers an observer of the market's trades; returns its removal. */
  readonly subscribe: (observer: TradesObserver) => () => void;
}

export function CandleChart(props: ChartProps) {
  const [resolution, setResolution] = useState<Resolution>('1');
  const [empty, setEmpty] = useState(false);
  const host = useRef<HTMLDivElement>(null);
  const chart = useRef<{ api: IChartApi; series: ISeriesApi<'Candlestick'> } | null>(null);

  useEffect(() => {
    if (host.current === null) return undefined;
    const api = createChart(host.current, {
      autoSize: true,
      layout: { background: { type: ColorType.Solid, color: '#131820' }, textColor: '#9aa4b2', fontSize: 11 },
      grid: { vertLines: { color: '#1a2029' }, horzLines: { color: '#1a2029' } },
      rightPriceScale: { borderColor: '#252d39' },
      timeScale: { borderColor: '#252d39', timeVisible: true, secondsVisible: false, rightOffset: 4 },
    });
    const series = api.addSeries(CandlestickSeries, {
      upColor: '#2ebd85', downColor: '#f6465d', wickUpColor: '#2ebd85', wickDownColor: '#f6465d', borderVisible: false,
    });
    chart.current = { api, series };
    return () => {
      chart.current = null;
      api.remove();
    };
  }, []);

  useEffect(() => {
    chart.current?.series.applyOptions({ priceFormat: { type: 'price', precision: props.priceDecimals, minMove: Number(props.tickSize) } });
  }, [props.priceDecimals, props.tickSize]);

  useEffect(() => liveBars(props.marketId, resolution, chart, setEmpty, props.subscribe), [props.marketId, resolution, props.subscribe]);

  return (
    <div class="candle-chart">
      <div class="tabs chart-tabs" role="group" aria-label="Candle resolution">
        {RESOLUTIONS.map((r) => (
          <button key={r.id} type="button" class="small" aria-pressed={resolution === r.id} onClick={() => setResolution(r.id)}>
            {r.label}
          </button>
        ))}
        {empty && <span class="muted chart-note">no trades in this range yet</span>}
      </div>
      <div class="chart-host" ref={host} data-testid="candle-chart" />
    </div>
  );
}

/** Reads the bars, then keeps the newest one moving with the trades; returns the teardown. */
function liveBars(
  marketId: string,
  resolution: Resolution,
  chart: { current: { series: ISeriesApi<'Candlestick'> } | null },
  setEmpty: (empty: boolean) => void,
  subscribe: ChartProps['subscribe'],
): () => void {
  const size = RESOLUTIONS.find((r) => r.id === resolution)?.seconds ?? 60;
  let bars: Bar[] | null = null; // null while reading: trades wait in `pending`
  let pending: TapeTrade[] = [];
  let stopped = false;

  const apply = (trades: readonly TapeTrade[]) => {
    const series = chart.current?.series;
    if (bars === null || series === undefined) return;
    for (const t of trades) {
      const bar = nextBar(bars[bars.length - 1], t, size);
      if (bar === null) continue;
      if (bars.length > 0 && bars[bars.length - 1]!.time === bar.time) bars[bars.length - 1] = bar;
      else bars.push(bar);
      series.update(bar);
    }
    if (bars.length > 0) setEmpty(false);
  };

  const load = async () => {
    bars = null;
    pending = [];
    try {
      const history = await market.get('/perps/ohlc', { query: { symbol: marketId, resolution, countback: 300 } });
      if (stopped) return;
      bars = history.s === 'ok' ? history.t.map((t, i) => toBar(t, history, i)) : [];
      chart.current?.series.setData(bars);
      setEmpty(bars.length === 0);
      apply(pending);
      pending = [];
    } catch (e) {
      if (!stopped) reportError(e, `reading the candles of ${marketId}`);
    }
  };

  const unsubscribe = subscribe((trades, kind, connection) => {
    if (kind === 'snapshot') {
      if (connection > 1) void load(); // a reconnect: trades may have been missed
      return;
    }
    if (bars === null) pending.push(...trades);
    else apply(trades);
  });
  chart.current?.series.setData([]);
  void load();
  return () => {
    stopped = true;
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
