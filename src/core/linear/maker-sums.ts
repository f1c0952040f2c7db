/**
 * The reduce-only sums (margin.ts ReduceOnlySums) of the accounts whose resting orders one taker
 * meets, kept while that taker is checked and while it matches: a window. Every maker the taker
 * reaches is asked again whether it may fill (engine.ts `admits`), and each answer needs what its
 * owner's resting reduce-only orders would lose at the mark. Walking the owner's orders for that
 * per maker made a taker lifting 200 makers of one account with 200 reduce-only orders walk
 * 40,000 orders, twice; with the sums kept for the window it walks each account once.
 *
 * Kept exact, not approximate: each order's share is remembered, and the engine reports every
 * resting order it changes inside a match window (`refresh`: a fill, a trim, an end; nothing
 * rests while the book matches), so an account's sums always equal a fresh walk of its orders
 * (the linear property test compares them at every read). Marks do not move inside a window, and
 * the checks change nothing. Outside a window nothing is kept and `sumsOf` answers null (callers
 * walk the orders themselves).
 */
import type { Fixed } from '../money.ts';
import type { LinearAccount } from './account.ts';
import {
  addToReduceOnlySums, countsInReduceOnlySums, reduceOnlyLossOf, type ReduceOnlySums,
} from './margin.ts';
import type { LinearOrder } from './order.ts';

interface Share {
  lots: number;
  loss: Fixed;
}

interface AccountSums {
  readonly sums: ReduceOnlySums;
  /** Each counted order's share as last added to `sums`. */
  readonly shares: Map<LinearOrder, Share>;
}

export class MakerSums {
  private readonly byAccount = new Map<number, AccountSums>();
  private open = false;

  /** Opens a window (a taker's checks, or its match); whatever an earlier one kept is dropped. */
  begin(): void {
    if (this.byAccount.size !== 0) this.byAccount.clear();
    this.open = true;
  }

  end(): void {
    if (this.byAccount.size !== 0) this.byAccount.clear();
    this.open = false;
  }

  /**
   * The account's reduce-only sums, walked once per window; null outside a window, or while the
   * account has no live reduce-only order (then the callers' walk is free).
   */
  sumsOf(account: LinearAccount): ReduceOnlySums | null {
    if (!this.open) return null;
    const kept = this.byAccount.get(account.id);
    if (kept !== undefined) return kept.sums;
    if (account.liveReduceOnly === 0) return null;
    const entry: AccountSums = { sums: { crossLoss: 0n, byMarket: new Map() }, shares: new Map() };
    for (const o of account.orders.values()) {
      if (!countsInReduceOnlySums(o)) continue;
      const share = { lots: o.remainingLots, loss: reduceOnlyLossOf(o) };
      entry.shares.set(o, share);
      addToReduceOnlySums(entry.sums, o.market, share.lots, share.loss);
    }
    this.byAccount.set(account.id, entry);
    return entry.sums;
  }

  /** A resting order changed (filled, trimmed, ended): its share follows its new state. */
  refresh(o: LinearOrder): void {
    const entry = this.byAccount.get(o.owner);
    if (entry === undefined) return;
    const before = entry.shares.get(o);
    const counts = countsInReduceOnlySums(o);
    const lots = counts ? o.remainingLots : 0;
    const loss = counts ? reduceOnlyLossOf(o) : 0n;
    if (before === undefined && !counts) return;
    addToReduceOnlySums(entry.sums, o.market, lots - (before?.lots ?? 0), loss - (before?.loss ?? 0n));
    if (!counts) entry.shares.delete(o);
    else if (before === undefined) entry.shares.set(o, { lots, loss });
    else {
      before.lots = lots;
      before.loss = loss;
    }
  }
}
