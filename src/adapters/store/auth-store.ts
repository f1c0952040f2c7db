/**
 * Identity records that live beside the exchange core rather than in it (docs/architecture.md,
 * "Identity"): SIWE nonces, API keys and revoked sessions, the SQLite side of the gateway's ports
 * (gateway/auth/identity-store.ts). They move no money, so they are written straight to SQLite
 * (each write its own durable transaction) instead of through the sequencer. The service's own
 * secrets (the session signing secret, the maker's key) are kept here too, for the composition
 * root and the rotation tool; the gateway never reads them from the store.
 *
 * API key secrets are never stored: a key's row holds the SHA-256 of its secret only.
 */
import type {
  ApiKeyRecord, ApiKeyScope, ApiKeyStore, NonceRecord, NonceStore, SessionRevocations,
} from '../../gateway/auth/identity-store.ts';
import { migrate, type Db } from './database.ts';

const MIGRATIONS = [
  {
    id: '0200_auth',
    sql: `
      CREATE TABLE siwe_nonces (
        nonce TEXT PRIMARY KEY, address TEXT NOT NULL, issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
      CREATE INDEX siwe_nonces_expiry ON siwe_nonces (expires_at);
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY, address TEXT NOT NULL, name TEXT NOT NULL, scope TEXT NOT NULL,
        allowed_ips TEXT NOT NULL, secret_hash BLOB NOT NULL, expires_at INTEGER, created_at INTEGER NOT NULL,
        last_used_at INTEGER, revoked_at INTEGER);
      CREATE INDEX api_keys_by_address ON api_keys (address, created_at);
      CREATE TABLE revoked_sessions (jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);
      CREATE TABLE secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL);`,
  },
  {
    // Who asked for the nonce: the outstanding-nonce cap is per address and requester, so nobody
    // can exhaust another client's nonces for an address.
    id: '0201_nonce_requester',
    sql: `ALTER TABLE siwe_nonces ADD COLUMN requester TEXT NOT NULL DEFAULT '';`,
  },
];

interface ApiKeyRow {
  id: string;
  address: string;
  name: string;
  scope: ApiKeyScope;
  allowed_ips: string;
  secret_hash: Buffer;
  expires_at: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** The `secrets` row holding the session signing secret when JWT_SECRET(_FILE) is not set. */
export const SESSION_SECRET = 'jwt';

export class AuthStore implements NonceStore, SessionRevocations, ApiKeyStore {
  private readonly s;

  constructor(private readonly db: Db) {
    migrate(db, MIGRATIONS);
    this.s = {
      insertNonce: db.prepare('INSERT INTO siwe_nonces (nonce, address, issued_at, expires_at, requester) VALUES (?, ?, ?, ?, ?)'),
      takeNonce: db.prepare('DELETE FROM siwe_nonces WHERE nonce = ? RETURNING nonce, address, issued_at, expires_at'),
      pruneNonces: db.prepare('DELETE FROM siwe_nonces WHERE expires_at <= ?'),
      countNonces: db.prepare('SELECT COUNT(*) AS n FROM siwe_nonces WHERE address = ? AND requester = ?'),
      insertKey: db.prepare(
        `INSERT INTO api_keys (id, address, name, scope, allowed_ips, secret_hash, expires_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      allKeys: db.prepare('SELECT * FROM api_keys'),
      keyById: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
      keysOf: db.prepare('SELECT * FROM api_keys WHERE address = ?'),
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touchKey: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
      deleteKey: db.prepare('DELETE FROM api_keys WHERE id = ?'),
      revokeSession: db.prepare('INSERT OR IGNORE INTO revoked_sessions (jti, expires_at) VALUES (?, ?)'),
      revokedSessions: db.prepare('SELECT jti, expires_at FROM revoked_sessions WHERE expires_at > ?'),
      pruneSessions: db.prepare('DELETE FROM revoked_sessions WHERE expires_at <= ?'),
      getSecret: db.prepare('SELECT value FROM secrets WHERE name = ?'),
      putSecret: db.prepare('INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)'),
      replaceSecret: db.prepare('INSERT OR REPLACE INTO secrets (name, value) VALUES (?, ?)'),
      clearRevokedSessions: db.prepare('DELETE FROM revoked_sessions'),
    };
  }

  /** Stores a nonce `requester` (the client's address) asked for; expired nonces go first. */
  addNonce(record: NonceRecord, requester: string): void {
    this.s.pruneNonces.run(record.issuedAt);
    this.s.insertNonce.run(record.nonce, record.address, record.issuedAt, record.expiresAt, requester);
  }

  /** Live nonces for `address` that `requester` asked for. */
  outstandingNonces(address: string, requester: string): number {
    return (this.s.countNonces.get(address, requester) as { n: number }).n;
  }

  /** Removes and returns the nonce: single use is one atomic DELETE ... RETURNING. */
  takeNonce(nonce: string): NonceRecord | undefined {
    const row = this.s.takeNonce.get(nonce) as
      | { nonce: string; address: string; issued_at: number; expires_at: number }
      | undefined;
    return row && { nonce: row.nonce, address: row.address, issuedAt: row.issued_at, expiresAt: row.expires_at };
  }

  insertApiKey(k: ApiKeyRecord): void {
    this.s.insertKey.run(
      k.id, k.address, k.name, k.scope, JSON.stringify(k.allowedIps), k.secretHash, k.expiresAt, k.createdAt,
    );
  }

  loadApiKeys(): ApiKeyRecord[] {
    return (this.s.allKeys.all() as ApiKeyRow[]).map(apiKeyOf);
  }

  apiKey(id: string): ApiKeyRecord | undefined {
    const row = this.s.keyById.get(id) as ApiKeyRow | undefined;
    return row && apiKeyOf(row);
  }

  apiKeysOf(address: string): ApiKeyRecord[] {
    return (this.s.keysOf.all(address) as ApiKeyRow[]).map(apiKeyOf);
  }

  revokeApiKey(id: string, at: number): void {
    this.s.revokeKey.run(at, id);
  }

  touchApiKey(id: string, at: number): void {
    this.s.touchKey.run(at, id);
  }

  deleteApiKey(id: string): void {
    this.s.deleteKey.run(id);
  }

  revokeSession(jti: string, expiresAt: number): void {
    this.s.revokeSession.run(jti, expiresAt);
  }

  revokedSessions(now: number): Map<string, number> {
    this.s.pruneSessions.run(now);
    const rows = this.s.revokedSessions.all(now) as { jti: string; expires_at: number }[];
    return new Map(rows.map((r) => [r.jti, r.expires_at]));
  }

  /** Forgets revocations of tokens that have expired by `now` (they are refused as expired anyway). */
  pruneRevokedSessions(now: number): void {
    this.s.pruneSessions.run(now);
  }

  /**
   * Replaces the session signing secret: every token signed with the old one stops verifying, so
   * every session ends and the revocation list has nothing left to refuse.
   */
  rotateSessionSecret(value: Buffer): void {
    this.db.transaction(() => {
      this.s.replaceSecret.run(SESSION_SECRET, value);
      this.s.clearRevokedSessions.run();
    })();
  }

  /** A named secret, created by `make` the first time and kept from then on. */
  secret(name: string, make: () => Buffer): Buffer {
    const row = this.s.getSecret.get(name) as { value: Buffer } | undefined;
    if (row !== undefined) return row.value;
    this.s.putSecret.run(name, make());
    return (this.s.getSecret.get(name) as { value: Buffer }).value;
  }
}

function apiKeyOf(r: ApiKeyRow): ApiKeyRecord {
  return {
    id: r.id,
    address: r.address,
    name: r.name,
    scope: r.scope,
    allowedIps: JSON.parse(r.allowed_ips) as string[],
    secretHash: r.secret_hash,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
  };
}
