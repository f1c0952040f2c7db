/**
 * When the reference market maker sends a quote again (docs/architecture.md "Option board, DVOL and
 * the reference market maker"). Every quote it sends is a journaled command and, per order, a history
 * row, so a ladder is re-sent only when it would change the book or when it is due a heartbeat:
 *
 * - `Anchors`: the price a group of ladders is computed from (a linear market's mark, an option
 *   expiry's forward and the time to expiry) is held until it moved `moveBps` or is `refreshMs` old.
 *   The feed moves every second by more than a tick, so a ladder priced from the live input would
 *   differ from the last one on nearly every cycle; priced from the anchor it is stable between
 *   re-anchorings (and still follows the maker's inventory at once).
 * - `SentQuotes`: the wire ladder last sent per market; `due` says whether the new one must go out:
 *   never sent (or pulled since), differing by at least a tick in some price or a lot in some size,
 *   or the same ladder last sent `refreshMs` ago or more.
 */
import { fx, type Fixed } from '../core/money.ts';

/** A ladder level as the bulk-quote routes receive it. */
export interface WireLevel {
  readonly side: 'buy' | 'sell';
  readonly price: string;
  readonly quantity: string;
  readonly postOnly: boolean;
}

export type Due = 'first' | 'changed' | 'heartbeat';

const abs = (x: Fixed): Fixed => (x < 0n ? -x : x);

/** Two wire ladders differ when a level appeared or went, changed side, or moved a tick or a lot. */
export function ladderDiffers(a: readonly WireLevel[], b: readonly WireLevel[], tick: Fixed, lot: Fixed): boolean {
  if (a.length !== b.length) return true;
  return a.some((x, i) => {
    const y = b[i]!;
    if (x.side !== y.side || x.postOnly !== y.postOnly) return true;
    return abs(fx(x.price) - fx(y.price)) >= tick || abs(fx(x.quantity) - fx(y.quantity)) >= lot;
  });
}

export class SentQuotes {
  private readonly sent = new Map<string, { readonly quotes: readonly WireLevel[]; readonly at: number }>();

  /** Markets whose last ladder sent holds at least one level (the maker's status, metrics). */
  quoted(): number {
    let n = 0;
    for (const entry of this.sent.values()) if (entry.quotes.length > 0) n++;
    return n;
  }

  /** Why `quotes` must be sent to `marketId` now, or null when the book already has them. */
  due(marketId: string, quotes: readonly WireLevel[], now: number, refreshMs: number, tick: Fixed, lot: Fixed): Due | null {
    const last = this.sent.get(marketId);
    if (last === undefined) return 'first';
    if (ladderDiffers(last.quotes, quotes, tick, lot)) return 'changed';
    return now - last.at >= refreshMs ? 'heartbeat' : null;
  }

  record(marketId: string, quotes: readonly WireLevel[], now: number): void {
    this.sent.set(marketId, { quotes, at: now });
  }

  /** After a pull (or a delisting): the next ladder is a first quote. */
  forget(marketId: string): void {
    this.sent.delete(marketId);
  }

  /** Forgets markets no longer listed. */
  retain(listed: ReadonlySet<string>): void {
    for (const id of this.sent.keys()) if (!listed.has(id)) this.sent.delete(id);
  }
}

export interface Anchor {
  readonly price: number;
  readonly at: number;
}

export class Anchors {
  private readonly held = new Map<string, Anchor>();

  /** The anchor of `key`, moved to (`price`, `now`) when it moved `moveBps` or is `refreshMs` old. */
  hold(key: string, price: number, now: number, moveBps: number, refreshMs: number): Anchor {
    const last = this.held.get(key);
    // The epsilon: 100,100 against 100,000 is 10 bp, not 9.999... in floats.
    const moved = last === undefined || Math.abs(price / last.price - 1) * 10_000 >= moveBps - 1e-9;
    if (!moved && now - last.at < refreshMs) return last;
    const next = { price, at: now };
    this.held.set(key, next);
    return next;
  }

  /** Forgets anchors not in `keys` (expired expiries, delisted markets). */
  retain(keys: ReadonlySet<string>): void {
    for (const key of this.held.keys()) if (!keys.has(key)) this.held.delete(key);
  }
}
