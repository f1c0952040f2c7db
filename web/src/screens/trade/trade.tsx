/**
 * Perp and dated-future trading (#/trade/<marketId>, BTC-PERP by default): the market picker and
 * its figures, the candle chart, the live book (a click on a level puts its price in the ticket),
 * the recent trades, the order ticket with the API's preview, and the trader's positions, open
 * orders and perps balance from the private streams. Signed out, the market data still shows and
 * the private panels say to sign in. One trades stream feeds both the tape and the chart.
 */
import { useCallback, useRef, useState } from 'preact/hooks';
import { account } from '../../api/account.ts';
import { useMarkets } from '../../api/markets.ts';
import { OrderBook, useBookStream } from '../../components/order-book.tsx';
import { TradesTape, useTradesStream, type TradesObserver } from '../../components/trades-tape.tsx';
import { useStore } from '../../lib/store.ts';
import { OpenOrders, MarginSummary, Positions } from './account-panels.tsx';
import { CandleChart } from './candle-chart.tsx';
import { MarketHeader } from './market-header.tsx';
import { Ticket } from './ticket.tsx';
import { usePerpAccount } from './use-perp-account.ts';
import './trade.css';

export function Trade(props: { marketId: string }) {
  const { marketId } = props;
  const markets = useMarkets();
  const m = markets.find((x) => x.id === marketId);
  const client = useStore(account)?.client ?? null;
  const perp = usePerpAccount(client);
  const book = useBookStream(marketId, 20);
  const chartFeed = useFeed();
  const trades = useTradesStream(marketId, chartFeed.publish);
  const [picked, setPicked] = useState<{ price: string; n: number } | null>(null);
  const pick = (price: string) => setPicked((p) => ({ price, n: (p?.n ?? 0) + 1 }));
  return (
    <div class="trade" data-testid="trade-screen" data-market={marketId}>
      <MarketHeader marketId={marketId} markets={markets} />
      <section class="panel trade-chart" aria-label="Price chart">
        <CandleChart marketId={marketId} priceDecimals={m?.priceDecimals ?? 2} tickSize={m?.tickSize ?? '0.01'} subscribe={chartFeed.subscribe} />
      </section>
      <section class="panel trade-book" aria-label="Order book">
        <h2>Order book</h2>
        <OrderBook marketId={marketId} book={book} rows={9} baseSymbol={m?.baseSymbol} onPickPrice={pick} />
      </section>
      <div class="trade-ticket">
        <Ticket market={m} marketId={marketId} client={client} account={perp} picked={picked} />
      </div>
      <div class="trade-account">
        <MarginSummary client={client} account={perp} />
        <Positions client={client} account={perp} />
        <OpenOrders client={client} account={perp} />
      </div>
      <section class="panel trade-tape" aria-label="Recent trades">
        <h2>Recent trades</h2>
        <TradesTape marketId={marketId} trades={trades} rows={24} baseSymbol={m?.baseSymbol} />
      </section>
    </div>
  );
}

/** One source of trades, many observers (the chart): publish is stable across renders. */
function useFeed(): { publish: TradesObserver; subscribe: (o: TradesObserver) => () => void } {
  const observers = useRef(new Set<TradesObserver>());
  const publish = useCallback<TradesObserver>((...args) => observers.current.forEach((o) => o(...args)), []);
  const subscribe = useCallback((o: TradesObserver) => {
    observers.current.add(o);
    return () => void observers.current.delete(o);
  }, []);
  return { publish, subscribe };
}
