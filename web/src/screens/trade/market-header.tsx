/**
 * The top of the trading screen: the market picker (every perp and dated future of GET
 * /perps/markets) and the chosen market's figures: mark and index (every 2 s with the market list),
 * last price, 24-hour change, high, low and volume, open interest, and the funding rate with the
 * countdown to the next funding for a perp or the expiry for a future (GET /perps/market-stats,
 * every 5 s). Countdowns tick each second.
 */
import { useEffect, useState } from 'preact/hooks';
import { market } from '../../api/account.ts';
import type { Market } from '../../api/markets.ts';
import { countdown, dateTime, num, pct, tone } from '../../lib/format.ts';
import { navigate } from '../../lib/router.ts';
import { usePoll } from '../../lib/use-poll.ts';

export function MarketHeader(props: { marketId: string; markets: readonly Market[] }) {
  const tradable = props.markets.filter((m) => m.marketType === 'perp' || m.marketType === 'future');
  const m = tradable.find((x) => x.id === props.marketId);
  const [stats] = usePoll(() => market.get('/perps/market-stats', { query: { marketId: props.marketId } }), 5_000, props.marketId);
  const now = useNow();
  const s = stats?.marketId === props.marketId ? stats : null;
  return (
    <section class="panel market-header" aria-label="Market">
      <label class="market-pick">
        Market
        <select value={props.marketId} onChange={(e) => navigate('trade', e.currentTarget.value)} data-testid="market-picker">
          {m === undefined && <option value={props.marketId}>{props.marketId}</option>}
          <optgroup label="Perpetuals">
            {tradable.filter((x) => x.marketType === 'perp').map((x) => <option key={x.id} value={x.id}>{x.id}</option>)}
          </optgroup>
          <optgroup label="Dated futures">
            {tradable.filter((x) => x.marketType === 'future').map((x) => <option key={x.id} value={x.id}>{x.id}</option>)}
          </optgroup>
        </select>
      </label>
      <Figure label="Mark" value={num(m?.markPrice)} testId="mark" strong />
      <Figure label="Index" value={num(m?.indexPrice)} testId="index" />
      <Figure label="Last" value={num(s?.lastPrice)} />
      <Figure label="24h change" value={pct(s?.change24hPct)} cls={tone(s?.change24hPct)} />
      <Figure label="24h high / low" value={`${num(s?.high24h)} / ${num(s?.low24h)}`} />
      <Figure label={`24h volume (${m?.baseSymbol ?? 'base'})`} value={num(s?.volume24h)} />
      <Figure label="24h volume (USD)" value={num(s?.volume24hUsd)} />
      <Figure label="Open interest (USD)" value={num(s?.openInterestUsd)} />
      {m?.marketType === 'future' ? (
        <Figure label="Expiry (UTC)" value={`${dateTime(m.expiry)} · ${countdown(m.expiry, now)}`} testId="expiry" />
      ) : (
        <>
          <Figure label="Funding 1h / 8h" value={`${rate(s?.funding1hPct)} / ${rate(s?.fundingRate8hPct)}`} cls={tone(s?.funding1hPct)} testId="funding"
            title={`1h ${pct(s?.funding1hPct)}, 8h ${pct(s?.fundingRate8hPct)} (as the API sends them)`} />
          <Figure label="Next funding" value={countdown(s?.nextFundingAt, now)} testId="funding-countdown" />
        </>
      )}
      {m === undefined && props.markets.length > 0 && <p class="warn">{props.marketId} is not a listed perp or future.</p>}
    </section>
  );
}

/** A funding rate cut (not rounded) to 4 decimals for reading; the title keeps every digit. */
function rate(value: string | null | undefined): string {
  return value === null || value === undefined ? '—' : pct(num(value, 4));
}

function Figure(props: { label: string; value: string; cls?: string; testId?: string; strong?: boolean; title?: string }) {
  return (
    <div class="figure" title={props.title}>
      <span class="muted">{props.label}</span>
      <span class={`num ${props.cls ?? ''} ${props.strong === true ? 'strong big' : ''}`} data-testid={props.testId}>{props.value}</span>
    </div>
  );
}

function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}
