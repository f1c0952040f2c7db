/**
 * The candle chart of a perp or dated future: TradingView's lightweight-charts, its bars read from
 * GET /perps/ohlc (UDF history) at the chosen resolution and price source (Trades, Mark or Index)
 * and kept live by chart-bars.ts. It opens on Trades; while the range holds no trade yet it draws
 * the mark price and says so. The container carries what is drawn (`data-series`, `data-bars`).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { CandlestickSeries, ColorType, createChart, type IChartApi, type ISeriesApi } from 'lightweight-charts';
import type { TradesObserver } from '../../components/trades-tape.tsx';
import { liveBars, type ChartView, type PriceSource } from './chart-bars.ts';

export const RESOLUTIONS = [
  { id: '1', label: '1m', seconds: 60 },
  { id: '5', label: '5m', seconds: 300 },
  { id: '15', label: '15m', seconds: 900 },
  { id: '60', label: '1h', seconds: 3_600 },
  { id: '240', label: '4h', seconds: 14_400 },
  { id: 'D', label: '1D', seconds: 86_400 },
] as const;
export type Resolution = (typeof RESOLUTIONS)[number]['id'];

const SOURCES: readonly { id: PriceSource; label: string }[] = [
  { id: 'trade', label: 'Trades' },
  { id: 'mark', label: 'Mark' },
  { id: 'index', label: 'Index' },
];

interface ChartProps {
  readonly marketId: string;
  readonly priceDecimals: number;
  readonly tickSize: string;
  /** Registers an observer of the market's trades; returns its removal. */
  readonly subscribe: (observer: TradesObserver) => () => void;
}

export function CandleChart(props: ChartProps) {
  const [resolution, setResolution] = useState<Resolution>('1');
  const [source, setSource] = useState<PriceSource>('trade');
  const [view, setView] = useState<ChartView | null>(null);
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

  useEffect(() => {
    setView(null);
    const seconds = RESOLUTIONS.find((r) => r.id === resolution)?.seconds ?? 60;
    const series = () => chart.current?.series;
    return liveBars({ marketId: props.marketId, resolution, seconds, source, series, onView: setView, subscribe: props.subscribe });
  }, [props.marketId, resolution, source, props.subscribe]);

  return (
    <div class="candle-chart" data-series={view?.series ?? ''} data-bars={view?.bars ?? 0}>
      <div class="chart-bar">
        <div class="tabs chart-tabs" role="group" aria-label="Candle resolution">
          {RESOLUTIONS.map((r) => (
            <button key={r.id} type="button" class="small" aria-pressed={resolution === r.id} onClick={() => setResolution(r.id)}>
              {r.label}
            </button>
          ))}
        </div>
        <div class="tabs chart-tabs" role="group" aria-label="Price source">
          {SOURCES.map((s) => (
            <button key={s.id} type="button" class="small" aria-pressed={source === s.id} onClick={() => setSource(s.id)}>
              {s.label}
            </button>
          ))}
        </div>
        <ChartNote view={view} />
      </div>
      <div class="chart-host" ref={host} data-testid="candle-chart" />
    </div>
  );
}

/** Says when the chart draws something else than asked (no trades yet), or nothing. */
function ChartNote(props: { view: ChartView | null }) {
  const v = props.view;
  if (v === null) return null;
  if (v.fallback) return <span class="chart-note fallback" data-testid="chart-note">no trades yet: mark price</span>;
  if (v.bars > 0) return null;
  const what = v.series === 'trade' ? 'trades' : `${v.series} prices`;
  return <span class="muted chart-note" data-testid="chart-note">no {what} in this range yet</span>;
}
