/**
 * Session tokens: HS256 JWTs signed with a secret of at least 32 bytes, valid 7 days, delivered
 * as the `session` cookie and accepted as `Authorization: Bearer`. Verification pins the
 * algorithm, the token type, issuer and audience, and requires exp/iat/sub/jti (RFC 8725; jose
 * accepts tokens without exp unless told otherwise, research/stack.md 2.4).
 *
 * Logout revokes the token's id (jti) until the token would have expired anyway; revocations are
 * kept in the store (a port, identity-store.ts: SQLite by default) and in memory, so a logged-out
 * token is refused after a restart too, and `prune` (the service calls it every minute) forgets
 * those whose token has expired, in both.
 *
 * Verified tokens are cached (bounded) because jose's WebCrypto verify costs ~0.25 ms, which
 * would otherwise dominate authenticated request cost.
 */
import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { SessionRevocations } from './identity-store.ts';

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
  private readonly revoked: Map<string, number>;

  constructor(
    private readonly store: SessionRevocations,
    private readonly secret: Uint8Array,
    private readonly issuer: string,
    private readonly now: () => number = Date.now,
  ) {
    if (secret.byteLength < 32) throw new Error('session secret must be at least 32 bytes');
    this.revoked = store.revokedSessions(now());
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
    this.store.pruneRevokedSessions(now);
  }

  /** Revocations held in memory (for tests and the health of the prune). */
  revokedCount(): number {
    return this.revoked.size;
  }

  revoke(session: Session): void {
    this.store.revokeSession(session.jti, session.expiresAt);
    this.revoked.set(session.jti, session.expiresAt);
  }
}
