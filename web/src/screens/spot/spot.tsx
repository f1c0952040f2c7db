/**
 * Spot trading (#/spot/<marketId>, BTC-USDC by default): the pair and its figures, the live book
 * (a click on a level puts its price in the ticket) and the recent trades (the shared components),
 * the spot ticket with the API's preview, the trader's open and past orders on the pair, and the
 * spot bucket's balance of each asset. Spot is funded, not margined: an order locks USDC (a buy)
 * or the base asset (a sell) in the Spot bucket, which the balances panel shows as locked.
 * Signed out, the market data still shows and the private panels say to sign in.
 */
import { useState } from 'preact/hooks';
import { account } from '../../api/account.ts';
import { useMarkets } from '../../api/markets.ts';
import { OrderBook, useBookStream } from '../../components/order-book.tsx';
import { TradesTape, useTradesStream } from '../../components/trades-tape.tsx';
import { useStore } from '../../lib/store.ts';
import { useLiveBalances } from '../wallet/use-balances.ts';
import { PairHeader } from './pair-header.tsx';
import { SpotBalances, useSpotAssets } from './spot-balances.tsx';
import { SpotOrders } from './spot-orders.tsx';
import { SpotTicket } from './spot-ticket.tsx';
import './spot.css';

export function Spot(props: { marketId: string }) {
  const { marketId } = props;
  const markets = useMarkets();
  const pair = markets.find((m) => m.id === marketId);
  const signedIn = useStore(account);
  const client = signedIn?.client ?? null;
  const live = useLiveBalances(client, signedIn?.address ?? '');
  const assets = useSpotAssets(client, signedIn?.address ?? '', live.revision);
  const book = useBookStream(marketId, 20);
  const trades = useTradesStream(marketId);
  const [picked, setPicked] = useState<{ price: string; n: number } | null>(null);
  const [placed, setPlaced] = useState(0);
  return (
    <div class="spot" data-testid="spot-screen" data-market={marketId}>
      <PairHeader marketId={marketId} markets={markets} />
      <div class="spot-left">
        <section class="panel spot-book" aria-label="Order book">
          <h2>Order book</h2>
          <OrderBook marketId={marketId} book={book} rows={11} baseSymbol={pair?.baseSymbol} quoteSymbol={pair?.quoteSymbol}
            onPickPrice={(price) => setPicked((p) => ({ price, n: (p?.n ?? 0) + 1 }))} />
        </section>
        <SpotBalances signedIn={client !== null} assets={assets} pair={pair} />
      </div>
      <div class="spot-middle">
        <SpotOrders client={client} marketId={marketId} revision={live.revision} placed={placed} />
        <section class="panel spot-tape" aria-label="Recent trades">
          <h2>Recent trades</h2>
          <TradesTape marketId={marketId} trades={trades} rows={16} baseSymbol={pair?.baseSymbol} quoteSymbol={pair?.quoteSymbol} />
        </section>
      </div>
      <div class="spot-right">
        <SpotTicket client={client} marketId={marketId} pair={pair} assets={assets} picked={picked} onPlaced={() => setPlaced((n) => n + 1)} />
      </div>
    </div>
  );
}
