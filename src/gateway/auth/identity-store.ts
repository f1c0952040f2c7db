/**
 * The gateway's ports to the identity records it keeps beside the core (docs/architecture.md,
 * "Identity lives beside the core"): sign-in nonces, session revocations and API keys. The gateway
 * owns them (siwe.ts, sessions.ts and api-keys.ts are their consumers); the embedded default
 * implements all three in SQLite (adapters/store/auth-store.ts), and the composition root
 * (service.ts) chooses. They move no money, so they never pass through the sequencer; a store
 * shared by several gateways (PostgreSQL, issue 31) implements the same interfaces.
 *
 * Each write is durable when the call returns: a nonce consumed, a session revoked or a key
 * revoked must stay so after a crash. Secrets are never stored: a key's record holds the SHA-256 of
 * its secret only.
 */

/** A sign-in nonce, issued to an address and valid until `expiresAt`. */
export interface NonceRecord {
  readonly nonce: string;
  readonly address: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

/** Sign-in nonces (siwe.ts): single use, whoever holds them. */
export interface NonceStore {
  /** Stores a nonce that `requester` (the client's network address) asked for; expired nonces may go first. */
  addNonce(record: NonceRecord, requester: string): void;
  /** Live nonces for `address` that `requester` asked for (the cap on outstanding nonces). */
  outstandingNonces(address: string, requester: string): number;
  /**
   * Removes and returns the nonce, atomically: of two sign-ins racing with one nonce (on any
   * gateway) exactly one gets it.
   */
  takeNonce(nonce: string): NonceRecord | undefined;
}

/** Revoked sessions (sessions.ts): a logged-out token's id, kept until the token would have expired. */
export interface SessionRevocations {
  revokeSession(jti: string, expiresAt: number): void;
  /** Every revocation whose token has not expired by `now`: jti to the token's expiry. */
  revokedSessions(now: number): Map<string, number>;
  /** Forgets revocations of tokens that have expired by `now` (they are refused as expired anyway). */
  pruneRevokedSessions(now: number): void;
}

export type ApiKeyScope = 'read' | 'trade';

export interface ApiKeyRecord {
  readonly id: string;
  readonly address: string;
  readonly name: string;
  readonly scope: ApiKeyScope;
  readonly allowedIps: readonly string[];
  readonly secretHash: Buffer;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** API keys (api-keys.ts), loaded whole at start and written through on every change. */
export interface ApiKeyStore {
  insertApiKey(record: ApiKeyRecord): void;
  loadApiKeys(): ApiKeyRecord[];
  revokeApiKey(id: string, at: number): void;
  /** Records a key's last use (api-keys.ts writes it at most once a minute per key). */
  touchApiKey(id: string, at: number): void;
  /** Deletes an ended key (an account keeps at most so many). */
  deleteApiKey(id: string): void;
}
