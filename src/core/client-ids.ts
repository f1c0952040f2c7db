/**
 * Client order ids of one account on one engine (linear or CLOB; both follow the same rule): an
 * id is unique among the account's live orders and for `retentionMs` after its order ends, so a
 * retry after a lost response is refused (DUPLICATE_CLIENT_ORDER_ID) instead of trading twice. Only
 * accepted orders reserve an id; a rejected order changed nothing and its retry is a new attempt.
 * Both engines prune expired ids hourly on the clock tick. One exception to the retention: a quote
 * ladder that replaces quotes (cancelAll or replaceQuoteId) hands the ids of the quotes it cancelled
 * on to the levels of its new ladder that reuse them (`handOver`), so that a market maker can cycle
 * fixed ids, and a replace retried after a lost response leaves one ladder, not none. Tested through
 * the engine tests (linear/engine.test.ts, clob/spot.test.ts) and the API tests.
 */

export class ClientIds {
  private readonly ids = new Map<string, { orderId: number; releasedAt: number | null }>();

  /** The order holding `clientOrderId`, or null when it is free (expired entries are dropped). */
  inUse(clientOrderId: string, now: number, retentionMs: number): number | null {
    const entry = this.ids.get(clientOrderId);
    if (entry === undefined) return null;
    if (entry.releasedAt !== null && entry.releasedAt + retentionMs <= now) {
      this.ids.delete(clientOrderId);
      return null;
    }
    return entry.orderId;
  }

  reserve(clientOrderId: string, orderId: number): void {
    this.ids.set(clientOrderId, { orderId, releasedAt: null });
  }

  /** The order ended: its id stays reserved for the retention period from now. */
  release(clientOrderId: string, now: number): void {
    const entry = this.ids.get(clientOrderId);
    if (entry !== undefined) entry.releasedAt = now;
  }

  /**
   * Frees for this command's `levels` the ids of the `replaced` quotes that they reuse (call after
   * cancelling those quotes, before placing the levels).
   */
  handOver(replaced: readonly { readonly clientOrderId: string | null }[], levels: readonly { readonly clientOrderId: string | null }[]): void {
    for (const level of levels) {
      const id = level.clientOrderId;
      if (id !== null && replaced.some((r) => r.clientOrderId === id)) this.ids.delete(id);
    }
  }

  /** Forgets ids whose retention has passed (bounded memory). */
  prune(now: number, retentionMs: number): void {
    for (const [id, entry] of this.ids) {
      if (entry.releasedAt !== null && entry.releasedAt + retentionMs <= now) this.ids.delete(id);
    }
  }

  get size(): number {
    return this.ids.size;
  }
}
