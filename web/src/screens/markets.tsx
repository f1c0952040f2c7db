/**
 * Markets: every perp, dated future and spot pair with its mark, index, 24-hour change and volume,
 * open interest, funding (rate and the next funding time) for perps and expiry for futures; the
 * option chains by underlying. Marks every 2 s (GET /perps/markets), 24-hour figures every 10 s
 * (GET /perps/market-stats).
 */
import { useEffect, useState } from 'preact/hooks';
import { account, market } from '../api/account.ts';
import { useMarkets, type Market } from '../api/markets.ts';
import { countdown, dateTime, num, pct, tone } from '../lib/format.ts';
import { navigate } from '../lib/router.ts';
import { useStore } from '../lib/store.ts';

type Stats = Awaited<ReturnType<typeof market.get<'/perps/market-stats'>>>;

export function Markets() {
  const list = useMarkets();
  const stats = useStats(list);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const groups: [string, Market[]][] = [
    ['Perpetuals', list.filter((m) => m.marketType === 'perp')],
    ['Dated futures', list.filter((m) => m.marketType === 'future')],
    ['Spot', list.filter((m) => m.marketType === 'spot')],
  ];
  const underlyings = [...new Set(list.filter((m) => m.marketType === 'perp').map((m) => m.underlying))];
  return (
    <div class="markets">
      {groups.map(([title, rows]) => (
        <section class="panel" key={title}>
          <h2>{title}</h2>
          <div class="table-scroll">
          <table class="grid" data-testid={`markets-${title}`}>
            <thead>
              <tr>
                <th>Market</th>
                <th class="num">Mark</th>
                <th class="num">Index</th>
                <th class="num">24h change</th>
                <th class="num">24h volume (USD)</th>
                {title !== 'Spot' && <th class="num">Open interest (USD)</th>}
                {title === 'Perpetuals' && <th class="num">Funding 8h</th>}
                {title === 'Perpetuals' && <th class="num">Next funding</th>}
                {title === 'Dated futures' && <th class="num">Expiry (UTC)</th>}
              </tr>
            </thead>
            <tbody>
              {rows.map((m) => {
                const s = stats.get(m.id);
                return (
                  <tr key={m.id} class="clickable" tabIndex={0} onClick={() => open(m)} onKeyDown={(e) => e.key === 'Enter' && open(m)}>
                    <td class="strong">{m.id}</td>
                    <td class="num">{num(m.markPrice)}</td>
                    <td class="num">{num(m.indexPrice)}</td>
                    <td class={`num ${tone(s?.change24hPct)}`}>{pct(s?.change24hPct)}</td>
                    <td class="num">{num(s?.volume24hUsd)}</td>
                    {title !== 'Spot' && <td class="num">{num(s?.openInterestUsd)}</td>}
                    {title === 'Perpetuals' && <td class={`num ${tone(s?.fundingRate8hPct)}`}>{pct(s?.fundingRate8hPct)}</td>}
                    {title === 'Perpetuals' && <td class="num">{countdown(s?.nextFundingAt, now)}</td>}
                    {title === 'Dated futures' && <td class="num">{dateTime(m.expiry)}</td>}
                  </tr>
                );
              })}
            </tbody>
          </table>
          </div>
        </section>
      ))}
      <section class="panel">
        <h2>Options</h2>
        <div class="row gap">
          {underlyings.map((u) => (
            <a key={u} class="button" href={`#/options/${u}`}>
              {u} option chain
            </a>
          ))}
        </div>
      </section>
    </div>
  );
}

function open(m: Market): void {
  navigate(m.marketType === 'spot' ? 'spot' : 'trade', m.id);
}

/** 24-hour statistics of every listed market, every 10 s (signed in: from the account's budget). */
function useStats(list: readonly Market[]): ReadonlyMap<string, Stats> {
  const [stats, setStats] = useState<ReadonlyMap<string, Stats>>(new Map());
  const signedIn = useStore(account);
  const ids = list.map((m) => m.id).join(',');
  useEffect(() => {
    if (ids === '') return undefined;
    const client = signedIn?.client ?? market;
    let stopped = false;
    const read = async () => {
      const results = await Promise.allSettled(ids.split(',').map((marketId) => client.get('/perps/market-stats', { query: { marketId } })));
      if (stopped) return;
      setStats((before) => {
        const next = new Map(before);
        for (const r of results) if (r.status === 'fulfilled') next.set(r.value.marketId, r.value);
        return next;
      });
    };
    void read();
    const t = setInterval(read, 10_000);
    return () => {
      stopped = true;
      clearInterval(t);
    };
  }, [ids, signedIn]);
  return stats;
}
