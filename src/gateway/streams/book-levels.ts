/**
 * The top `depth` levels of one mirrored book as a stream group last sent them, and the diff
 * against the mirror now. One instance per group, so a book diff is computed once per group and
 * tick, whatever the number of members. Reading uses `BookMirror.depth` into a scratch array (no
 * allocation); the diff is a merge walk over two price-ordered lists; only the changed levels are
 * formatted.
 *
 * Levels are `{ price, size, total }`, best first; `total` is the cumulative size from the top of
 * the book to that level. A level is in a diff when its size or its total changed (a change above
 * it moves its total), it entered the depth window, or it left it (then with size "0" and total
 * "0"): a client that applies the diffs as they come holds every level's current total.
 *
 * Assumes the mirror's prices are in book order (bids descending, asks ascending), as BookMirror
 * keeps them. Tested through the book, perps events and options events streams
 * (test/streams/book-stream.test.ts, options-events-stream.test.ts).
 */
import { BUY, SELL } from '../../core/book/order-book.ts';
import type { MarketUnits } from '../../core/markets.ts';
import { dec } from '../format.ts';
import type { BookMirror } from './book-mirror.ts';

interface Levels {
  readonly px: number[];
  readonly lots: number[];
  n: number;
}

export class BookLevels {
  private readonly bids: Levels = { px: [], lots: [], n: 0 };
  private readonly asks: Levels = { px: [], lots: [], n: 0 };
  private readonly scratch: number[] = [];
  private snapshotText: string | null = null;

  constructor(
    private readonly book: BookMirror,
    private readonly units: MarketUnits,
    readonly depth: number,
  ) {
    this.refresh();
  }

  /** The levels last read, as `"bids":[...],"asks":[...]` (cached until they change). */
  snapshot(): string {
    this.snapshotText ??= `"bids":[${this.allLevels(this.bids)}],"asks":[${this.allLevels(this.asks)}]`;
    return this.snapshotText;
  }

  /** Reads the mirror; returns the changed levels as `"bids":[...],"asks":[...]`, or null. */
  refresh(): string | null {
    const n = this.book.depth(BUY, this.depth, this.scratch);
    const bids = this.diffSide(this.bids, n, BUY);
    const m = this.book.depth(SELL, this.depth, this.scratch);
    const asks = this.diffSide(this.asks, m, SELL);
    if (bids === '' && asks === '') return null;
    this.snapshotText = null;
    return `"bids":[${bids}],"asks":[${asks}]`;
  }

  /** Merge walk of the sent levels and the scratch levels (both in book order); updates `prev`. */
  private diffSide(prev: Levels, n: number, side: 0 | 1): string {
    const cur = this.scratch;
    const out: string[] = [];
    let i = 0;
    let j = 0;
    let total = 0;
    let sentTotal = 0; // the running total of the levels as last sent, through prev level i
    while (i < prev.n || j < n) {
      const p = prev.px[i]!;
      const c = cur[2 * j]!;
      // < 0: the sent level comes first (it left); > 0: the new level comes first (it entered)
      const order = j >= n ? -1 : i >= prev.n ? 1 : side === BUY ? c - p : p - c;
      if (order < 0) {
        out.push(this.level(p, 0, 0));
        sentTotal += prev.lots[i]!;
        i++;
        continue;
      }
      const lots = cur[2 * j + 1]!;
      total += lots;
      if (order === 0) sentTotal += prev.lots[i]!;
      if (order > 0 || prev.lots[i] !== lots || sentTotal !== total) out.push(this.level(c, lots, total));
      if (order === 0) i++;
      j++;
    }
    for (let k = 0; k < n; k++) {
      prev.px[k] = cur[2 * k]!;
      prev.lots[k] = cur[2 * k + 1]!;
    }
    prev.n = n;
    return out.join(',');
  }

  private allLevels(levels: Levels): string {
    const out: string[] = [];
    let total = 0;
    for (let k = 0; k < levels.n; k++) {
      total += levels.lots[k]!;
      out.push(this.level(levels.px[k]!, levels.lots[k]!, total));
    }
    return out.join(',');
  }

  private level(priceTicks: number, lots: number, totalLots: number): string {
    const u = this.units;
    const price = dec(u.price(priceTicks));
    return `{"price":"${price}","size":"${dec(u.size(lots))}","total":"${dec(u.size(totalLots))}"}`;
  }
}
