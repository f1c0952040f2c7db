/**
 * The order book of one market, shared by the perp/future screen and the spot screen: asks above
 * (best ask nearest the middle), the spread, bids below; each level's price, size and running total
 * (the service's `total`), with the total drawn as a depth bar. Clicking a level hands its price to
 * the ticket. Two parts, so that any stream with levels { price, size, total } can feed the view:
 *
 *   const book = useBookStream(marketId);   // GET /perps/book-stream: perps, dated futures and spot pairs
 *   <OrderBook marketId={marketId} book={book} onPickPrice={(price, side) => ...} />
 *
 * useBookStream keeps a LocalBook (the SDK's) from the stream's snapshot and updates, read with the
 * anonymous `market` client; an option screen can build the same BookState from the `orderbook` of
 * /options/stream/events. The spread is exact decimal arithmetic (the SDK's addDecimal).
 */
import { useRef, useState } from 'preact/hooks';
import { LocalBook, addDecimal, negateDecimal, type BookLevel } from '../../../sdk/src/index.ts';
import { market } from '../api/account.ts';
import { num } from '../lib/format.ts';
import { useStream } from '../lib/use-stream.ts';
import './order-book.css';

export type { BookLevel };

/** What the view draws: levels best first on each side; `live` once a snapshot arrived. */
export interface BookState {
  readonly marketId: string;
  readonly bids: readonly BookLevel[];
  readonly asks: readonly BookLevel[];
  readonly live: boolean;
  /** Stream frames applied since the screen opened (bench/web/terminal-load.ts reads it from the page). */
  readonly updates: number;
}

const EMPTY = (marketId: string): BookState => ({ marketId, bids: [], asks: [], live: false, updates: 0 });

/** The stream's fastest coalescing interval (GET /perps/book-stream allows 50 to 2000 ms): a trader sees every change. */
export const BOOK_INTERVAL_MS = 50;

/** The live book of a perp, dated future or spot pair (GET /perps/book-stream), `depth` levels a side. */
export function useBookStream(marketId: string, depth = 20, intervalMs = BOOK_INTERVAL_MS): BookState {
  const [state, setState] = useState<BookState>(() => EMPTY(marketId));
  const local = useRef(new LocalBook());
  useStream(market, `book ${marketId}`, '/perps/book-stream', { query: { marketId, depth, intervalMs } }, (event) => {
    local.current.apply(event.kind, event.message.payload, event.seq); // a snapshot (every new connection) replaces it all
    const { bids, asks } = local.current.levels(depth);
    setState((before) => ({ marketId, bids, asks, live: true, updates: before.marketId === marketId ? before.updates + 1 : 1 }));
  }, `${marketId}/${depth}/${intervalMs}`);
  return state.marketId === marketId ? state : EMPTY(marketId);
}

export interface OrderBookProps {
  readonly marketId: string;
  readonly book: BookState;
  /** Levels shown on each side (default 12). */
  readonly rows?: number;
  /** Column headings, e.g. "Size (BTC)" / "Price (USDC)". */
  readonly baseSymbol?: string;
  readonly quoteSymbol?: string;
  /** Called with a level's price (a decimal string) and the side it rests on. */
  readonly onPickPrice?: (price: string, side: 'bid' | 'ask') => void;
}

export function OrderBook(props: OrderBookProps) {
  const rows = props.rows ?? 12;
  const bids = props.book.bids.slice(0, rows);
  const asks = props.book.asks.slice(0, rows);
  const deepest = Math.max(depthOf(bids), depthOf(asks), Number.MIN_VALUE);
  const bestBid = bids[0]?.price;
  const bestAsk = asks[0]?.price;
  const spread = bestBid !== undefined && bestAsk !== undefined ? addDecimal(bestAsk, negateDecimal(bestBid)) : null;
  return (
    <div class="order-book" data-testid="order-book" data-market={props.marketId} data-updates={props.book.updates} aria-label={`Order book of ${props.marketId}`}>
      <div class="ob-head muted">
        <span>Price{props.quoteSymbol !== undefined ? ` (${props.quoteSymbol})` : ''}</span>
        <span class="num">Size{props.baseSymbol !== undefined ? ` (${props.baseSymbol})` : ''}</span>
        <span class="num">Total</span>
      </div>
      <div class="ob-side ob-asks" data-testid="book-asks">
        {[...asks].reverse().map((l) => <Level key={l.price} level={l} side="ask" deepest={deepest} onPick={props.onPickPrice} />)}
      </div>
      <div class="ob-spread" data-testid="book-spread">
        {!props.book.live ? <span class="muted">connecting…</span> : spread === null ? <span class="muted">no spread (one side empty)</span> : (
          <>
            <span class="muted">Spread</span> <span class="num">{num(spread)}</span>
          </>
        )}
      </div>
      <div class="ob-side ob-bids" data-testid="book-bids">
        {bids.map((l) => <Level key={l.price} level={l} side="bid" deepest={deepest} onPick={props.onPickPrice} />)}
      </div>
    </div>
  );
}

/** The running total at the deepest shown level, as a number for drawing the bars only. */
function depthOf(levels: readonly BookLevel[]): number {
  const last = levels[levels.length - 1];
  return last === undefined ? 0 : Number(last.total ?? last.size);
}

function Level(props: { level: BookLevel; side: 'bid' | 'ask'; deepest: number; onPick: OrderBookProps['onPickPrice'] }) {
  const { level, side, onPick } = props;
  const total = level.total ?? level.size;
  const width = `${Math.min(100, (Number(total) / props.deepest) * 100).toFixed(1)}%`;
  return (
    <div class={`ob-level ${side}`} data-side={side} onClick={() => onPick?.(level.price, side)} title={onPick === undefined ? undefined : 'Use this price in the ticket'}>
      <span class="ob-bar" style={{ width }} aria-hidden="true" />
      <button type="button" class={`ob-price num ${side === 'bid' ? 'up' : 'down'}`} tabIndex={-1} aria-label={`${side} ${level.price}`}>
        {num(level.price)}
      </button>
      <span class="num">{num(level.size)}</span>
      <span class="num muted">{num(total)}</span>
    </div>
  );
}
