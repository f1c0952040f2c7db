/**
 * The top of the spot screen: the pair picker (every spot pair of GET /perps/markets) and the
 * pair's figures: the index it trades around (every 2 s with the market list), last price, 24-hour
 * change, high, low and volume (GET /perps/market-stats, every 5 s), and its trading rules as the
 * API lists them (tick, step, size range, the price band around the index).
 */
import { market } from '../../api/account.ts';
import type { Market } from '../../api/markets.ts';
import { num, pct, tone } from '../../lib/format.ts';
import { navigate } from '../../lib/router.ts';
import { usePoll } from '../../lib/use-poll.ts';

export function PairHeader(props: { marketId: string; markets: readonly Market[] }) {
  const pairs = props.markets.filter((m) => m.marketType === 'spot');
  const pair = pairs.find((m) => m.id === props.marketId);
  const [stats] = usePoll(() => market.get('/perps/market-stats', { query: { marketId: props.marketId } }), 5_000, props.marketId);
  const s = stats?.marketId === props.marketId ? stats : null;
  return (
    <section class="panel spot-header" aria-label="Pair">
      <div class="field">
        <label for="spot-pair">Pair</label>
        <select id="spot-pair" value={props.marketId} onChange={(e) => navigate('spot', e.currentTarget.value)} data-testid="pair-picker">
          {pair === undefined && <option value={props.marketId}>{props.marketId}</option>}
          {pairs.map((m) => <option key={m.id} value={m.id}>{m.id}</option>)}
        </select>
      </div>
      <Figure label="Index" value={num(pair?.indexPrice)} testId="spot-index" strong />
      <Figure label="Last" value={num(s?.lastPrice)} />
      <Figure label="24h change" value={pct(s?.change24hPct)} cls={tone(s?.change24hPct)} />
      <Figure label="24h high / low" value={`${num(s?.high24h)} / ${num(s?.low24h)}`} />
      <Figure label={`24h volume (${pair?.baseSymbol ?? 'base'})`} value={num(s?.volume24h)} />
      <Figure label="24h volume (USD)" value={num(s?.volume24hUsd)} />
      {pair !== undefined && (
        <Figure label="Rules" value={`tick ${pair.tickSize} · step ${pair.stepSize} · size ${pair.minSize}–${pair.maxSize} · band ±${pair.priceBandPct}% of index`} />
      )}
      {pair === undefined && props.markets.length > 0 && <p class="warn">{props.marketId} is not a listed spot pair.</p>}
    </section>
  );
}

function Figure(props: { label: string; value: string; cls?: string; strong?: boolean; testId?: string }) {
  return (
    <div class="spot-figure">
      <span class="muted">{props.label}</span>
      <span class={`num ${props.cls ?? ''} ${props.strong === true ? 'strong' : ''}`} data-testid={props.testId}>{props.value}</span>
    </div>
  );
}
