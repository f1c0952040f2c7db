/**
 * DVOL, the 30-day implied volatility index of the underlying: its value now (GET /markets/dvol,
 * every 5 s: the smoothed index, the last raw value and how it was computed) and its history
 * (GET /markets/dvol/history: open, high, low and close per bucket of the chosen resolution, the
 * last 300 buckets), plotted as the closes with the high-low band, times in UTC.
 */
import { useMemo, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { market } from '../../api/account.ts';
import { dateTime, num } from '../../lib/format.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { AXIS, Plot } from './plot.tsx';

const RESOLUTIONS = [
  { id: '1', label: '1m', seconds: 60, everyMs: 10_000 },
  { id: '15', label: '15m', seconds: 900, everyMs: 60_000 },
  { id: '60', label: '1h', seconds: 3600, everyMs: 120_000 },
] as const;
type Resolution = (typeof RESOLUTIONS)[number]['id'];

/** `live`: the DVOL the board stream carries, shown until GET /markets/dvol has answered with one. */
export function Dvol(props: { underlying: string; live: string | null }) {
  const u = props.underlying;
  const [resolution, setResolution] = useState<Resolution>('1');
  const { everyMs: every, seconds } = RESOLUTIONS.find((r) => r.id === resolution)!;
  const [now] = usePoll(() => market.get('/markets/dvol', { query: { underlying: u } }), 5_000, u);
  const [history] = usePoll(() => market.get('/markets/dvol/history', { query: { underlying: u, resolution } }), every, `${u} ${resolution}`);
  const bars = history?.bars ?? [];
  const raw = now?.raw ?? null;
  const at = now?.computedAt ?? null;
  const data = useMemo((): uPlot.AlignedData => [
    bars.map((b) => b.t),
    bars.map((b) => Number(b.close)),
    bars.map((b) => Number(b.high)),
    bars.map((b) => Number(b.low)),
  ], [history]);
  const options = useMemo((): Omit<uPlot.Options, 'width' | 'height'> => ({
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    // Times in UTC, as everywhere in the terminal.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales: {
      // A young history (a few buckets) is shown over a dozen buckets, not stretched over years.
      x: { range: (u, min, max) => youngRange(u.data[0], seconds) ?? [min, max] },
      y: { range: (_u, min, max) => (min === null || max === null ? [0, 100] : [Math.floor(min - 0.5), Math.ceil(max + 0.5)]) },
    },
    axes: [{ ...AXIS }, { ...AXIS, size: 44, values: (_u, ticks) => ticks.map((t) => t.toFixed(1)) }],
    series: [
      {},
      { label: 'DVOL close', stroke: '#5b9dff', width: 2, points: { show: (self) => (self.data[0]?.length ?? 0) < 40, size: 6, fill: '#5b9dff' } },
      { label: 'high', stroke: '#5b9dff55', width: 1, points: { show: false } },
      { label: 'low', stroke: '#5b9dff55', width: 1, points: { show: false } },
    ],
    bands: [{ series: [2, 3], fill: '#5b9dff1f' }],
  }), [seconds]);
  return (
    <section class="panel opt-dvol" aria-label={`${u} DVOL`}>
      <div class="row gap opt-head">
        <h2>{u} DVOL</h2>
        <span class="opt-dvol-value num" data-testid="dvol-value">{num(now?.dvol ?? props.live)}</span>
        <span class="muted opt-small">30-day implied vol, %{raw !== null ? ` · raw ${num(raw)}` : ''}{at !== null ? ` · ${dateTime(at)} UTC` : ''}</span>
        <span class="spacer" />
        <div class="tabs opt-tabs" role="group" aria-label="DVOL history resolution">
          {RESOLUTIONS.map((r) => (
            <button key={r.id} type="button" class="small" aria-pressed={resolution === r.id} onClick={() => setResolution(r.id)}>{r.label}</button>
          ))}
        </div>
      </div>
      <div data-testid="dvol-history" data-bars={bars.length}>
        <Plot kind={`dvol-${resolution}`} options={options} data={data} height={150} label={`${u} DVOL history, ${bars.length} buckets`} />
      </div>
      {history !== null && bars.length < 3 && <p class="muted opt-small">{bars.length === 0 ? 'No DVOL recorded in this range yet.' : `${bars.length} bucket${bars.length === 1 ? '' : 's'} recorded so far: the history grows as the service runs.`}</p>}
    </section>
  );
}

/** For a history shorter than a dozen buckets: the last dozen buckets (read from the data: uPlot widens one point to years). */
function youngRange(times: ArrayLike<number> | undefined, seconds: number): [number, number] | null {
  if (times === undefined || times.length === 0) return null;
  const first = times[0]!;
  const last = times[times.length - 1]!;
  return last - first < 12 * seconds ? [last - 12 * seconds, last + seconds] : null;
}
