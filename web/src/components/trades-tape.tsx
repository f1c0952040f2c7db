/**
 * The recent trades of one market, shared by the perp/future screen and the spot screen: time,
 * price (coloured by the taker's side), quantity, newest on top. Two parts, so that any stream of
 * trades can feed the view:
 *
 *   const trades = useTradesStream(marketId, (fresh) => chart.addTrades(fresh));  // optional observer
 *   <TradesTape marketId={marketId} trades={trades} baseSymbol="BTC" />
 *
 * useTradesStream reads GET /markets/{marketId}/trades/stream (perps, dated futures, spot pairs and
 * options alike; a snapshot of the newest trades, then every new one) with the anonymous `market`
 * client, and keeps the newest `keep` trades. Its observer is told of each message's trades, oldest
 * first, with the message's kind and connection number (a `snapshot` with connection > 1 follows a
 * reconnect: trades may have been missed), e.g. to update a chart from the same stream. An option
 * screen can map the tape of /options/stream/events into TapeTrade.
 */
import { useRef, useState } from 'preact/hooks';
import { market } from '../api/account.ts';
import { num, time } from '../lib/format.ts';
import { useStream } from '../lib/use-stream.ts';
import './trades-tape.css';

export interface TapeTrade {
  /** Unique within the tape (the trade id). */
  readonly key: string;
  readonly price: string;
  readonly quantity: string;
  /** The taker's (aggressor's) side. */
  readonly side: 'buy' | 'sell';
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** `connection` counts the stream's connections: a snapshot with connection > 1 follows a reconnect. */
export type TradesObserver = (trades: readonly TapeTrade[], kind: 'snapshot' | 'delta' | 'update', connection: number) => void;

/** The newest `keep` trades of a market, newest first, live; `null` until the first snapshot. */
export function useTradesStream(marketId: string, observe?: TradesObserver, keep = 60): readonly TapeTrade[] | null {
  const [state, setState] = useState<{ marketId: string; trades: readonly TapeTrade[] } | null>(null);
  const observer = useRef(observe);
  observer.current = observe;
  useStream(market, `trades ${marketId}`, '/markets/{marketId}/trades/stream', { params: { marketId } }, (event) => {
    const fresh: TapeTrade[] = event.message.payload.trades.map((t) => ({
      key: t.tradeId, price: t.price, quantity: t.quantity, side: t.takerSide, createdAt: t.createdAt,
    }));
    observer.current?.(fresh, event.kind, event.connection);
    const newestFirst = [...fresh].reverse();
    setState((before) => ({
      marketId,
      trades: event.kind === 'snapshot' || before?.marketId !== marketId ? newestFirst.slice(0, keep) : [...newestFirst, ...before.trades].slice(0, keep),
    }));
  }, marketId);
  return state?.marketId === marketId ? state.trades : null;
}

export interface TradesTapeProps {
  readonly marketId: string;
  /** Newest first; null while connecting. */
  readonly trades: readonly TapeTrade[] | null;
  readonly rows?: number;
  readonly baseSymbol?: string;
  readonly quoteSymbol?: string;
}

export function TradesTape(props: TradesTapeProps) {
  const shown = props.trades?.slice(0, props.rows ?? 30) ?? [];
  return (
    <div class="trades-tape" data-testid="trades-tape" data-market={props.marketId}>
      <table class="grid tape-grid" aria-label={`Recent trades of ${props.marketId}`}>
        <thead>
          <tr>
            <th>Time (UTC)</th>
            <th class="num">Price{props.quoteSymbol !== undefined ? ` (${props.quoteSymbol})` : ''}</th>
            <th class="num">Size{props.baseSymbol !== undefined ? ` (${props.baseSymbol})` : ''}</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((t) => (
            <tr key={t.key}>
              <td class="num muted">{time(t.createdAt)}</td>
              <td class={`num ${t.side === 'buy' ? 'up' : 'down'}`} title={`taker ${t.side}`}>{num(t.price)}</td>
              <td class="num">{num(t.quantity)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.trades === null && <p class="muted tape-note">connecting…</p>}
      {props.trades !== null && shown.length === 0 && <p class="muted tape-note">no trades yet</p>}
    </div>
  );
}
