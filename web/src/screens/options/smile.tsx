/**
 * The IV smile of one expiry, plotted against strike: the fitted curve (the expiry's raw-SVI slice
 * as GET /markets/board serves it, evaluated over the strikes' range of log-moneyness) and the
 * marks' IVs as points, with the forward drawn as a dashed line. The board serves no bid or ask
 * IVs, so none are drawn. Floats here are for the drawing only.
 */
import { useMemo, useRef } from 'preact/hooks';
import type uPlot from 'uplot';
import { num } from '../../lib/format.ts';
import { sviVol, type ExpiryForward, type StrikeRow } from './board.ts';
import { AXIS, Plot } from './plot.tsx';

const CURVE_POINTS = 120;

interface SmileProps {
  readonly rows: readonly StrikeRow[];
  readonly forward: ExpiryForward | undefined;
  readonly expiryCode: string;
}

/** x: the strikes and a fine grid between them; the curve on every x; the marks on the strikes. */
function smileData(rows: readonly StrikeRow[], forward: ExpiryForward | undefined): { data: uPlot.AlignedData; curve: number; marks: number } {
  const strikes = rows.map((r) => Number(r.strike));
  const F = Number(forward?.forwardPrice ?? NaN);
  const svi = forward?.svi ?? null;
  const markIv = new Map<number, number>();
  for (const r of rows) {
    const iv = r.call?.iv ?? r.put?.iv ?? null;
    if (iv !== null) markIv.set(Number(r.strike), Number(iv));
  }
  const xs = new Set(strikes);
  if (svi !== null && Number.isFinite(F) && strikes.length > 1) {
    const lo = strikes[0]!;
    const hi = strikes[strikes.length - 1]!;
    for (let i = 0; i <= CURVE_POINTS; i++) xs.add(lo + ((hi - lo) * i) / CURVE_POINTS);
  }
  const x = [...xs].sort((a, b) => a - b);
  const curve = x.map((k) => (svi === null || !Number.isFinite(F) ? null : sviVol(svi, F, k)));
  const marks = x.map((k) => markIv.get(k) ?? null);
  return { data: [x, curve, marks], curve: curve.filter((v) => v !== null).length, marks: markIv.size };
}

export function Smile(props: SmileProps) {
  const forwardAt = useRef<number | null>(null);
  const forwardPrice = props.forward?.forwardPrice ?? null;
  forwardAt.current = forwardPrice === null ? null : Number(forwardPrice);
  const { data, curve, marks } = useMemo(() => smileData(props.rows, props.forward), [props.rows, props.forward]);
  const options = useMemo((): Omit<uPlot.Options, 'width' | 'height'> => ({
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: false } },
    axes: [
      { ...AXIS, values: (_u, ticks) => ticks.map((t) => `${Math.round(t / 1000)}k`) },
      { ...AXIS, size: 44, values: (_u, ticks) => ticks.map((t) => `${t.toFixed(0)}%`) },
    ],
    series: [
      {},
      { label: 'fitted SVI', stroke: '#5b9dff', width: 2, points: { show: false } },
      { label: 'mark IV', stroke: '#f0b90b', paths: () => null, points: { show: true, size: 6, fill: '#f0b90b', stroke: '#f0b90b' } },
    ],
    hooks: { draw: [(u) => drawForward(u, forwardAt.current)] },
  }), []);
  const svi = props.forward?.svi ?? null;
  return (
    <section class="panel opt-smile" aria-label="IV smile">
      <h2>IV smile {props.expiryCode}</h2>
      <div data-testid="smile" data-curve={curve} data-marks={marks}>
        <Plot kind="smile" options={options} data={data} height={170} label={`Implied volatility by strike for ${props.expiryCode}: the fitted curve and the marks`} />
      </div>
      <div class="row gap opt-keys">
        <span class="opt-key"><i class="opt-swatch curve" /> fitted SVI</span>
        <span class="opt-key"><i class="opt-swatch dot" /> mark IV</span>
        <span class="opt-key"><i class="opt-swatch fwd" /> forward {num(props.forward?.forwardPrice)}</span>
      </div>
      {svi === null && <p class="muted opt-small">No fitted slice for this expiry (fewer than 5 usable quotes, or the index is stale): marks only.</p>}
      {props.forward?.sliceHeld === true && <p class="warn opt-small">A fit that moved the at-the-money vol by more than one point awaits confirmation: the previous slice is shown.</p>}
      {svi !== null && <p class="muted opt-small">Raw SVI a {num(svi.a, 6)}, b {num(svi.b, 6)}, ρ {num(svi.rho, 3)}, m {num(svi.m, 4)}, σ {num(svi.sigma, 4)}</p>}
    </section>
  );
}

function drawForward(u: uPlot, forward: number | null): void {
  if (forward === null || !Number.isFinite(forward)) return;
  const x = u.valToPos(forward, 'x', true);
  const ctx = u.ctx;
  ctx.save();
  ctx.strokeStyle = '#9aa4b2';
  ctx.setLineDash([4, 4]);
  ctx.beginPath();
  ctx.moveTo(x, u.bbox.top);
  ctx.lineTo(x, u.bbox.top + u.bbox.height);
  ctx.stroke();
  ctx.restore();
}
