/**
 * A local copy of an order book kept from a book stream (`/perps/book-stream`, the `orderbook` of
 * `/perps/stream/events` and `/options/stream/events`): a snapshot replaces it, an update or delta
 * sets each level it lists, a size of "0" removes the level. Prices are compared exactly as
 * decimals; sizes and totals are kept as the strings the service sent.
 */
import { compareDecimal, type Decimal } from './decimal.ts';

export interface BookLevel {
  readonly price: Decimal;
  readonly size: Decimal;
  readonly total?: Decimal;
}

export interface BookFrame {
  readonly bids: readonly BookLevel[];
  readonly asks: readonly BookLevel[];
}

export class LocalBook {
  private readonly bids = new Map<Decimal, BookLevel>();
  private readonly asks = new Map<Decimal, BookLevel>();
  /** The eventSeq of the last frame applied. */
  seq: number | null = null;

  apply(kind: 'snapshot' | 'delta' | 'update', frame: BookFrame, seq: number): void {
    if (kind === 'snapshot') {
      this.bids.clear();
      this.asks.clear();
    }
    for (const [side, levels] of [[this.bids, frame.bids], [this.asks, frame.asks]] as const) {
      for (const level of levels) {
        if (compareDecimal(level.size, '0') === 0) side.delete(level.price);
        else side.set(level.price, level);
      }
    }
    this.seq = seq;
  }

  /** Levels best first: bids high to low, asks low to high. */
  levels(depth = Number.POSITIVE_INFINITY): { bids: BookLevel[]; asks: BookLevel[] } {
    const bids = [...this.bids.values()].sort((a, b) => compareDecimal(b.price, a.price)).slice(0, depth);
    const asks = [...this.asks.values()].sort((a, b) => compareDecimal(a.price, b.price)).slice(0, depth);
    return { bids, asks };
  }
}
