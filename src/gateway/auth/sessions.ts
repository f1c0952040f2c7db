/**
 * Session tokens: HS256 JWTs signed with a secret of at least 32 bytes, valid 7 days, delivered
 * as the `session` cookie and accepted as `Authorization: Bearer`. Verification pins the
 * algorithm, the token type, issuer and audience, and requires exp/iat/sub/jti (RFC 8725; jose
 * accepts tokens without exp unless told otherwise, research/stack.md 2.4).
 *
 * Logout revokes the token's id (jti) until the token would have expired anyway; revocations are
 * kept in the store (a port, identity-store.ts: SQLite by default) and in memory, so a logged-out
 * token is refused after a restart too, and `prune` (the service calls it every minute) forgets
 * those whose token has expired, in both. Over a store several gateways share (PostgreSQL, with
 * `shared`), the revocations loaded at start are kept current from the store's change feed: a
 * logout on any gateway is refused here as soon as its notification arrives, and within the feed's
 * poll (1 s) if the notification is lost (docs/architecture.md "Distributed mode: identity and
 * rate budgets").
 *
 * Verified tokens are cached (bounded) because jose's WebCrypto verify costs ~0.25 ms, which
 * would otherwise dominate authenticated request cost.
 */
import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { andThen, type Maybe, type SessionRevocations, type SharedIdentity } from './identity-store.ts';

export const SESSION_TTL_MS = 7 * 86_400_000;
const AUDIENCE = 'exchange:session';
const TOKEN_TYPE = 'session+jwt';
const CACHE_MAX = 10_000;
/** header.payload.signature in unpadded base64url; an HS256 signature is 32 bytes = 43 characters. */
const COMPACT_HS256 = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.([A-Za-z0-9_-]{43})$/;

export interface Session {
  readonly address: string;
  readonly jti: string;
  readonly expiresAt: number;
}

export class Sessions {
  private readonly cache = new Map<string, Session>();
  private readonly revoked = new Map<string, number>();
  /** Whether the store's revocations are in memory (a shared store's load at start: verification waits for it). */
  private loaded = false;
  private loading: Promise<void> | null = null;
  private readonly unsubscribe: () => void = () => undefined;

  constructor(
    private readonly store: SessionRevocations,
    private readonly secret: Uint8Array,
    private readonly issuer: string,
    private readonly now: () => number = Date.now,
    shared?: SharedIdentity,
  ) {
    if (secret.byteLength < 32) throw new Error('session secret must be at least 32 bytes');
    if (shared !== undefined) {
      // Subscribed before loading: a revocation made meanwhile arrives by one way or the other.
      this.unsubscribe = shared.subscribe((change) => {
        if (change.kind === 'session' && change.expiresAt > this.now()) this.revoked.set(change.jti, change.expiresAt);
      });
    }
    const first = this.load();
    if (first instanceof Promise) first.catch(() => undefined);
  }

  /** Loads the store's revocations: a shared store's asynchronously, verification waiting; a failed load is tried again. */
  private load(): Maybe<void> {
    if (this.loaded) return;
    if (this.loading !== null) return this.loading;
    const done = andThen(this.store.revokedSessions(this.now()), (revoked) => {
      for (const [jti, expiresAt] of revoked) this.revoked.set(jti, expiresAt);
      this.loaded = true;
    });
    if (!(done instanceof Promise)) return;
    const loading = done.finally(() => {
      this.loading = null;
    });
    loading.catch(() => undefined);
    this.loading = loading;
    return loading;
  }

  /** Stops following the shared store's changes. */
  close(): void {
    this.unsubscribe();
  }

  async issue(address: string): Promise<{ token: string; expiresAt: number }> {
    const issuedAt = Math.floor(this.now() / 1000);
    const expiresAt = (issuedAt * 1000) + SESSION_TTL_MS;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYPE })
      .setSubject(address)
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt(issuedAt)
      .setExpirationTime(Math.floor(expiresAt / 1000))
      .setJti(randomBytes(16).toString('base64url'))
      .sign(this.secret);
    return { token, expiresAt };
  }

  /** The session a token stands for, or null when it is invalid, expired or revoked. */
  async verify(token: string): Promise<Session | null> {
    if (!this.loaded) await this.load();
    const now = this.now();
    const cached = this.cache.get(token);
    if (cached !== undefined) {
      if (cached.expiresAt > now && !this.revoked.has(cached.jti)) return cached;
      this.cache.delete(token);
      return null;
    }
    if (token.length > 2048) return null;
    // One spelling per token: jose's base64url decoder tolerates padding, whitespace and unused
    // low bits in the last character, which would let one signature verify under many strings.
    const signature = COMPACT_HS256.exec(token)?.[1];
    if (signature === undefined) return null;
    if (Buffer.from(signature, 'base64url').toString('base64url') !== signature) return null;
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        typ: TOKEN_TYPE,
        issuer: this.issuer,
        audience: AUDIENCE,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        currentDate: new Date(now),
      });
      const session: Session = { address: payload.sub!, jti: payload.jti!, expiresAt: payload.exp! * 1000 };
      if (!/^0x[0-9a-f]{40}$/.test(session.address) || this.revoked.has(session.jti)) return null;
      if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(token, session);
      return session;
    } catch {
      return null;
    }
  }

  /** Forgets revocations and cached sessions whose token has expired by now. */
  prune(): void {
    const now = this.now();
    for (const [jti, expiresAt] of this.revoked) if (expiresAt <= now) this.revoked.delete(jti);
    for (const [token, session] of this.cache) if (session.expiresAt <= now) this.cache.delete(token);
    // Housekeeping: a shared store's failed prune is retried by the next one.
    const pruned = this.store.pruneRevokedSessions(now);
    if (pruned instanceof Promise) pruned.catch(() => undefined);
  }

  /** Revocations held in memory (for tests and the health of the prune). */
  revokedCount(): number {
    return this.revoked.size;
  }

  /** Revokes the session's token, durably (and, over a shared store, for every gateway) when the call returns or settles. */
  revoke(session: Session): Maybe<void> {
    return andThen(this.store.revokeSession(session.jti, session.expiresAt), () => {
      this.revoked.set(session.jti, session.expiresAt);
    });
  }
}
