/**
 * The distributed mode's identity records in PostgreSQL (migrations/postgres/2000_identity.sql): the
 * gateway's ports NonceStore, SessionRevocations and ApiKeyStore (gateway/auth/identity-store.ts)
 * shared by every gateway, so any gateway serves any client (docs/architecture.md "Distributed
 * mode: identity and rate budgets"). The same records and protection as the embedded SQLite store
 * (adapters/store/auth-store.ts): an API key's row holds the SHA-256 of its secret only; the
 * session signing secret is kept as is, created once for all gateways.
 *
 * Each write is its own transaction (autocommit, synchronous_commit on): durable when its promise
 * settles. A nonce is taken by one DELETE ... RETURNING, so of two gateways racing with one nonce
 * exactly one gets it. A change other gateways must see (a key created, revoked or deleted, a
 * session revoked) sends `NOTIFY identity_changed` in the same statement, delivered at commit
 * (identity-changes.ts follows them).
 */
import type pg from 'pg';
import type {
  ApiKeyRecord, ApiKeyScope, ApiKeyStore, NonceRecord, NonceStore, SessionRevocations,
} from '../../gateway/auth/identity-store.ts';

/** The channel of identity changes; payloads `key:<id>` and `session:<expiresAt>:<jti>`. */
export const IDENTITY_CHANNEL = 'identity_changed';

interface ApiKeyRow {
  id: string;
  address: string;
  name: string;
  scope: ApiKeyScope;
  allowed_ips: string[];
  secret_hash: Buffer;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const KEY_COLUMNS = 'id, address, name, scope, allowed_ips, secret_hash, expires_at, created_at, last_used_at, revoked_at';
const NOTIFY_KEY = `SELECT pg_notify('${IDENTITY_CHANNEL}', 'key:' || id) FROM k`;

export class PostgresIdentityStore implements NonceStore, SessionRevocations, ApiKeyStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Stores a nonce `requester` asked for; expired nonces go first. */
  async addNonce(record: NonceRecord, requester: string): Promise<void> {
    await this.pool.query(
      `WITH pruned AS (DELETE FROM siwe_nonces WHERE expires_at <= $3)
       INSERT INTO siwe_nonces (nonce, address, issued_at, expires_at, requester) VALUES ($1, $2, $3, $4, $5)`,
      [record.nonce, record.address, record.issuedAt, record.expiresAt, requester],
    );
  }

  async outstandingNonces(address: string, requester: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM siwe_nonces WHERE address = $1 AND requester = $2', [address, requester],
    );
    return Number(rows[0]!.n);
  }

  /** Removes and returns the nonce: single use across gateways is one atomic DELETE ... RETURNING. */
  async takeNonce(nonce: string): Promise<NonceRecord | undefined> {
    const { rows } = await this.pool.query<{ nonce: string; address: string; issued_at: string; expires_at: string }>(
      'DELETE FROM siwe_nonces WHERE nonce = $1 RETURNING nonce, address, issued_at, expires_at', [nonce],
    );
    const row = rows[0];
    return row && { nonce: row.nonce, address: row.address, issuedAt: Number(row.issued_at), expiresAt: Number(row.expires_at) };
  }

  async insertApiKey(k: ApiKeyRecord): Promise<void> {
    await this.pool.query(
      `WITH k AS (
         INSERT INTO api_keys (id, address, name, scope, allowed_ips, secret_hash, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id)
       ${NOTIFY_KEY}`,
      [k.id, k.address, k.name, k.scope, JSON.stringify(k.allowedIps), k.secretHash, k.expiresAt, k.createdAt],
    );
  }

  async loadApiKeys(): Promise<ApiKeyRecord[]> {
    const { rows } = await this.pool.query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys`);
    return rows.map(apiKeyOf);
  }

  async apiKey(id: string): Promise<ApiKeyRecord | undefined> {
    const { rows } = await this.pool.query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    return rows[0] && apiKeyOf(rows[0]);
  }

  async apiKeysOf(address: string): Promise<ApiKeyRecord[]> {
    const { rows } = await this.pool.query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE address = $1`, [address]);
    return rows.map(apiKeyOf);
  }

  async revokeApiKey(id: string, at: number): Promise<void> {
    await this.pool.query(
      `WITH k AS (UPDATE api_keys SET revoked_at = $1, revocation_recorded_at = clock_timestamp() WHERE id = $2 AND revoked_at IS NULL RETURNING id) ${NOTIFY_KEY}`,
      [at, id],
    );
  }

  /** The last use is advisory: no notification (an account's list reads the row). */
  async touchApiKey(id: string, at: number): Promise<void> {
    await this.pool.query('UPDATE api_keys SET last_used_at = GREATEST(last_used_at, $1) WHERE id = $2', [at, id]);
  }

  async deleteApiKey(id: string): Promise<void> {
    await this.pool.query(`WITH k AS (DELETE FROM api_keys WHERE id = $1 RETURNING id) ${NOTIFY_KEY}`, [id]);
  }

  async revokeSession(jti: string, expiresAt: number): Promise<void> {
    await this.pool.query(
      `WITH s AS (
         INSERT INTO revoked_sessions (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING RETURNING jti, expires_at)
       SELECT pg_notify('${IDENTITY_CHANNEL}', 'session:' || expires_at || ':' || jti) FROM s`,
      [jti, expiresAt],
    );
  }

  async revokedSessions(now: number): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ jti: string; expires_at: string }>(
      'SELECT jti, expires_at FROM revoked_sessions WHERE expires_at > $1', [now],
    );
    return new Map(rows.map((r) => [r.jti, Number(r.expires_at)]));
  }

  async pruneRevokedSessions(now: number): Promise<void> {
    await this.pool.query('DELETE FROM revoked_sessions WHERE expires_at <= $1', [now]);
  }

  /**
   * A named secret (the session signing secret, SESSION_SECRET), created by `make` the first time
   * and the same for every process from then on: of gateways starting together, the first insert
   * wins and all read the winner's.
   */
  async secret(name: string, make: () => Buffer): Promise<Buffer> {
    const read = async () =>
      (await this.pool.query<{ value: Buffer }>('SELECT value FROM secrets WHERE name = $1', [name])).rows[0]?.value;
    const found = await read();
    if (found !== undefined) return found;
    await this.pool.query('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, make()]);
    const value = await read();
    if (value === undefined) throw new Error(`secret ${name} was not stored`);
    return value;
  }

  /**
   * Replaces the session signing secret and forgets every revocation (no token signed with the old
   * one verifies any more). Gateways read the secret at start: restart them all after a rotation.
   */
  async rotateSessionSecret(name: string, value: Buffer): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        'INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value],
      );
      await client.query('DELETE FROM revoked_sessions');
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

function apiKeyOf(r: ApiKeyRow): ApiKeyRecord {
  const time = (v: string | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    address: r.address,
    name: r.name,
    scope: r.scope,
    allowedIps: r.allowed_ips,
    secretHash: r.secret_hash,
    expiresAt: time(r.expires_at),
    createdAt: Number(r.created_at),
    lastUsedAt: time(r.last_used_at),
    revokedAt: time(r.revoked_at),
  };
}
