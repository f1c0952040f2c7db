/**
 * The change feed of the shared identity store (gateway/auth/identity-store.ts `SharedIdentity`):
 * what makes a key or session revoked on one gateway refused on every other (docs/architecture.md
 * "Distributed mode: identity and rate budgets").
 *
 * - `LISTEN identity_changed` on a connection of its own: every key created, revoked or deleted and
 *   every session revoked is notified at its commit (identity-store.ts), so gateways act on it
 *   within milliseconds.
 * - A notification can be lost (the connection drops and is made again; PostgreSQL keeps nothing
 *   for a listener that is gone), so: ApiKeys re-reads a key once its `keyTtlMs` (1 s) is up, and
 *   this feed polls the revocations recorded in the last `overlapMs` every `pollMs` (1 s), from a
 *   cursor on the server's clock that only moves on a poll that succeeded.
 * - A notification can also arrive after the client's next request, sent to another gateway as
 *   soon as the revocation was acknowledged: so the gateway role runs `poll` (shared by the checks
 *   waiting at that moment) before every session and API-key check (roles/gateway.ts), and a
 *   revocation is refused everywhere from its acknowledgement on.
 */
import pg from 'pg';
import type { IdentityChange, SharedIdentity } from '../../gateway/auth/identity-store.ts';
import { IDENTITY_CHANNEL } from './identity-store.ts';

export interface IdentityChangesOptions {
  /** How long ApiKeys may serve a key from memory without reading it again (default 1 s). */
  readonly keyTtlMs?: number;
  /** How often recent revocations are polled (default 1 s). */
  readonly pollMs?: number;
  /** How far back each poll reaches before its cursor: covers a commit that lands after its own clock reading (default 5 s). */
  readonly overlapMs?: number;
  /** Wait before listening again after the connection dropped (default 500 ms). */
  readonly reconnectMs?: number;
}

export class PostgresIdentityChanges implements SharedIdentity {
  readonly keyTtlMs: number;
  private readonly listeners = new Set<(change: IdentityChange) => void>();
  private listener: pg.Client | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** The server time of the last successful poll (ISO text as PostgreSQL gave it), null before the first. */
  private cursor: string | null = null;
  private closed = false;
  private readonly pollMs: number;
  private readonly overlapMs: number;
  private readonly reconnectMs: number;

  private constructor(private readonly url: string, private readonly pool: pg.Pool, options: IdentityChangesOptions) {
    this.keyTtlMs = options.keyTtlMs ?? 1_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.overlapMs = options.overlapMs ?? 5_000;
    this.reconnectMs = options.reconnectMs ?? 500;
  }

  /** Listens on `url` (a connection of its own) and polls through `pool`; resolves once listening. */
  static async start(url: string, pool: pg.Pool, options: IdentityChangesOptions = {}): Promise<PostgresIdentityChanges> {
    const feed = new PostgresIdentityChanges(url, pool, options);
    await feed.listen();
    feed.schedulePoll();
    return feed;
  }

  subscribe(listener: (change: IdentityChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    const client = this.listener;
    this.listener = null;
    await client?.end().catch(() => undefined);
  }

  /** Whether the LISTEN connection is up (for health reports and tests). */
  isListening(): boolean {
    return this.listener !== null;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000 });
    const dropped = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.end().catch(() => undefined);
      this.reconnectLater();
    };
    client.on('error', dropped);
    client.on('end', dropped);
    client.on('notification', (message) => {
      if (message.channel === IDENTITY_CHANNEL && message.payload !== undefined) this.onPayload(message.payload);
    });
    await client.connect();
    await client.query(`LISTEN ${IDENTITY_CHANNEL}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
  }

  private reconnectLater(): void {
    if (this.closed || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.listen().catch(() => this.reconnectLater());
    }, this.reconnectMs);
    this.reconnectTimer.unref();
  }

  private onPayload(payload: string): void {
    if (payload.startsWith('key:')) return this.emit({ kind: 'apiKey', id: payload.slice(4) });
    const m = /^session:(\d+):(.+)$/.exec(payload);
    if (m !== null) this.emit({ kind: 'session', jti: m[2]!, expiresAt: Number(m[1]) });
  }

  private emit(change: IdentityChange): void {
    for (const listener of this.listeners) listener(change);
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.pollTimer = setTimeout(() => {
      this.poll().catch(() => undefined).finally(() => this.schedulePoll());
    }, this.pollMs);
    this.pollTimer.unref();
  }

  /**
   * Emits every revocation (sessions and API keys) recorded since the last successful poll (less
   * the overlap), in one round trip.
   */
  async poll(): Promise<void> {
    const { rows } = await this.pool.query<{ kind: 'session' | 'apiKey' | null; id: string | null; expires_at: string | null; polled_at: string }>(
      `WITH t AS (SELECT clock_timestamp() AS polled_at),
            since AS (SELECT COALESCE($1::timestamptz, polled_at) - make_interval(secs => $2::double precision / 1000) AS at, polled_at FROM t),
            revoked AS (
              SELECT 'session' AS kind, jti AS id, expires_at FROM revoked_sessions, since WHERE recorded_at >= since.at
              UNION ALL
              SELECT 'apiKey', k.id, NULL FROM api_keys k, since WHERE k.revocation_recorded_at >= since.at)
       SELECT r.kind, r.id, r.expires_at, since.polled_at::text AS polled_at FROM since LEFT JOIN revoked r ON true`,
      [this.cursor, this.overlapMs],
    );
    for (const row of rows) {
      if (row.kind === 'session') this.emit({ kind: 'session', jti: row.id!, expiresAt: Number(row.expires_at) });
      else if (row.kind === 'apiKey') this.emit({ kind: 'apiKey', id: row.id! });
    }
    if (rows[0] !== undefined) this.cursor = rows[0].polled_at;
  }
}
