/**
 * The dead-man switch (`POST /orders/cancel-all-after`, Binance's countdownCancelAll, Deribit's
 * cancel-on-disconnect by timer): at most one per account, a deadline in core time. Arming it is a
 * journaled command (`orders.cancel_all_after`) whose deadline is the command's time plus the
 * timeout, so a replay arms it at the same deadline; the deadlines are core state, so a snapshot
 * carries them over a restart. The clock tick (`Exchange.tick`) fires every switch whose deadline
 * has come (deadline <= the tick's time): the account's live orders on every venue are cancelled
 * and the switch disarms. A re-arm or disarm that arrives after its deadline but before the tick
 * is too late: the command fires the switch first (exchange.ts).
 *
 * The due test costs one comparison per tick while nothing is due: `earliest` is a lower bound of
 * the deadlines (a disarm or re-arm may leave it below the true earliest; the next walk tightens it).
 */
export const CANCEL_AFTER_MIN_MS = 5_000;
export const CANCEL_AFTER_MAX_MS = 600_000;

/** Whether `timeoutMs` may arm (or, 0, disarm) a switch. */
export function validCancelAfter(timeoutMs: number): boolean {
  return timeoutMs === 0 || (Number.isSafeInteger(timeoutMs) && timeoutMs >= CANCEL_AFTER_MIN_MS && timeoutMs <= CANCEL_AFTER_MAX_MS);
}

export class CancelAfter {
  /** Deadline (core time, ms) of each armed switch, by account id. */
  private readonly deadlines = new Map<number, number>();
  /** At or below every deadline; -1 when none was armed since the last walk found none. */
  private earliest = -1;

  /** The armed deadline of the account, or null. */
  deadline(accountId: number): number | null {
    return this.deadlines.get(accountId) ?? null;
  }

  arm(accountId: number, deadline: number): void {
    this.deadlines.set(accountId, deadline);
    if (this.earliest < 0 || deadline < this.earliest) this.earliest = deadline;
  }

  disarm(accountId: number): void {
    this.deadlines.delete(accountId);
  }

  /** Whether the account's switch is armed with a deadline at or before `now`. */
  isDue(accountId: number, now: number): boolean {
    const d = this.deadlines.get(accountId);
    return d !== undefined && d <= now;
  }

  /** Disarms and returns (by account id) every switch whose deadline is at or before `now`. */
  takeDue(now: number): number[] {
    if (this.earliest < 0 || this.earliest > now) return [];
    const due: number[] = [];
    let earliest = -1;
    for (const [accountId, deadline] of this.deadlines) {
      if (deadline <= now) due.push(accountId);
      else if (earliest < 0 || deadline < earliest) earliest = deadline;
    }
    for (const accountId of due) this.deadlines.delete(accountId);
    this.earliest = earliest;
    return due.sort((a, b) => a - b);
  }

  get size(): number {
    return this.deadlines.size;
  }
}
