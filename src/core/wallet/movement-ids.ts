/**
 * Client ids of wallet movements: the idempotency tag a client may send with a bucket transfer or
 * a withdrawal. Transfers and withdrawals share one space per account. An id used by an accepted
 * movement is refused (CONFLICT) for `retentionMs` after it, so a retry after a lost response never
 * moves money twice; the refusal names what the first attempt did, for the client to reconcile. A
 * refused movement reserves nothing: its retry is a new attempt. Pruned on the clock tick.
 */
export interface UsedMovementId {
  /** What the accepted movement was: a withdrawal id, or the transfer's ledger entry id. */
  readonly what: string;
  readonly at: number;
}

export class MovementIds {
  private readonly byAccount = new Map<number, Map<string, UsedMovementId>>();

  constructor(private readonly retentionMs: number) {}

  /** The accepted movement that used `clientId` within the retention period, or null. */
  used(accountId: number, clientId: string, now: number): UsedMovementId | null {
    const entry = this.byAccount.get(accountId)?.get(clientId);
    if (entry === undefined || entry.at + this.retentionMs <= now) return null;
    return entry;
  }

  record(accountId: number, clientId: string, what: string, now: number): void {
    let ids = this.byAccount.get(accountId);
    if (ids === undefined) this.byAccount.set(accountId, (ids = new Map()));
    ids.set(clientId, { what, at: now });
  }

  /** Forgets ids whose retention has passed (bounded memory). */
  prune(now: number): void {
    for (const [accountId, ids] of this.byAccount) {
      for (const [id, entry] of ids) if (entry.at + this.retentionMs <= now) ids.delete(id);
      if (ids.size === 0) this.byAccount.delete(accountId);
    }
  }

  get size(): number {
    let n = 0;
    for (const ids of this.byAccount.values()) n += ids.size;
    return n;
  }
}
