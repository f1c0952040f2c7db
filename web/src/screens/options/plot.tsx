/**
 * A uPlot chart in a Preact component: created once for the component's life (and again when
 * `kind` changes), fed new data on every render, sized to its container (a ResizeObserver follows
 * the layout, so the chart fits a narrow window too). Colours follow the terminal's dark theme.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export const AXIS = { stroke: '#9aa4b2', grid: { stroke: '#252d39', width: 1 }, ticks: { stroke: '#252d39', width: 1 }, font: '11px system-ui, sans-serif' };

export interface PlotProps {
  /** The chart's options without its size (the container gives it). */
  readonly options: Omit<uPlot.Options, 'width' | 'height'>;
  readonly data: uPlot.AlignedData;
  readonly height: number;
  /** A new kind rebuilds the chart (different series); data changes only update it. */
  readonly kind: string;
  readonly label: string;
  readonly testId?: string;
}

export function Plot(props: PlotProps) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null) return undefined;
    const u = new uPlot({ ...props.options, width: Math.max(el.clientWidth, 100), height: props.height }, props.data, el);
    chart.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 100), height: props.height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      chart.current = null;
    };
  }, [props.kind, props.height]);
  useEffect(() => {
    chart.current?.setData(props.data);
  }, [props.data]);
  return <div class="opt-plot" ref={box} role="img" aria-label={props.label} data-testid={props.testId} />;
}
