/**
 * The gateway's ports to the identity records it keeps beside the core (docs/architecture.md,
 * "Identity lives beside the core"): sign-in nonces, session revocations and API keys. The gateway
 * owns them (siwe.ts, sessions.ts and api-keys.ts are their consumers); the embedded default
 * implements all three in SQLite (adapters/store/auth-store.ts), and the composition root
 * (service.ts) chooses. They move no money, so they never pass through the sequencer; a store
 * shared by several gateways (PostgreSQL, issue 31) implements the same interfaces.
 *
 * Each write is durable when the call returns (or its promise settles): a nonce consumed, a
 * session revoked or a key revoked must stay so after a crash. Secrets are never stored: a key's
 * record holds the SHA-256 of its secret only.
 *
 * Every method may answer now or with a promise (`Maybe`): SQLite answers synchronously, and the
 * embedded mode keeps that speed (its callers get plain values back); PostgreSQL answers with
 * promises, which the callers await.
 */

/** A value now, or a promise of it: the SQLite store answers synchronously, PostgreSQL asynchronously. */
export type Maybe<T> = T | Promise<T>;

/** Applies `next` to a value now or once its promise settles: synchronous values stay synchronous. */
export function andThen<T, U>(value: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** Waits for every value that is a promise; all-synchronous lists stay synchronous. */
export function allOf(values: readonly Maybe<unknown>[]): Maybe<void> {
  return values.some((v) => v instanceof Promise) ? Promise.all(values).then(() => undefined) : undefined;
}

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
  addNonce(record: NonceRecord, requester: string): Maybe<void>;
  /** Live nonces for `address` that `requester` asked for (the cap on outstanding nonces). */
  outstandingNonces(address: string, requester: string): Maybe<number>;
  /**
   * Removes and returns the nonce, atomically: of two sign-ins racing with one nonce (on any
   * gateway) exactly one gets it.
   */
  takeNonce(nonce: string): Maybe<NonceRecord | undefined>;
}

/** Revoked sessions (sessions.ts): a logged-out token's id, kept until the token would have expired. */
export interface SessionRevocations {
  revokeSession(jti: string, expiresAt: number): Maybe<void>;
  /** Every revocation whose token has not expired by `now`: jti to the token's expiry. */
  revokedSessions(now: number): Maybe<Map<string, number>>;
  /** Forgets revocations of tokens that have expired by `now` (they are refused as expired anyway). */
  pruneRevokedSessions(now: number): Maybe<void>;
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

/**
 * API keys (api-keys.ts), written through on every change. A store only this process writes
 * (SQLite) is loaded whole at start; a shared one (PostgreSQL) is read through, key by key and
 * account by account, beside its change feed (`SharedIdentity`).
 */
export interface ApiKeyStore {
  insertApiKey(record: ApiKeyRecord): Maybe<void>;
  /** Every key: what the embedded mode loads at start. */
  loadApiKeys(): Maybe<ApiKeyRecord[]>;
  /** One key by id, as stored now. */
  apiKey(id: string): Maybe<ApiKeyRecord | undefined>;
  /** An account's keys, as stored now. */
  apiKeysOf(address: string): Maybe<ApiKeyRecord[]>;
  revokeApiKey(id: string, at: number): Maybe<void>;
  /** Records a key's last use (api-keys.ts writes it at most once a minute per key). */
  touchApiKey(id: string, at: number): Maybe<void>;
  /** Deletes an ended key (an account keeps at most so many). */
  deleteApiKey(id: string): Maybe<void>;
}

/** A change another process (or this one) made to a shared identity store. */
export type IdentityChange =
  | { readonly kind: 'apiKey'; readonly id: string }
  | { readonly kind: 'session'; readonly jti: string; readonly expiresAt: number };

/**
 * The change feed of a store several gateways share (PostgreSQL: LISTEN/NOTIFY on
 * `identity_changed`, and a poll of recent revocations as the safety net for a lost notification;
 * docs/architecture.md "Distributed mode: identity and rate budgets"). ApiKeys and Sessions given
 * one read through to the store instead of trusting what they loaded at start.
 */
export interface SharedIdentity {
  /** How long an API key read from the store may be served from memory without reading it again. */
  readonly keyTtlMs: number;
  /** Calls `listener` with every change seen; returns the unsubscribe. */
  subscribe(listener: (change: IdentityChange) => void): () => void;
}
