/**
 * Who is calling, and may they call this route. Identity is resolved once per request (before rate
 * limiting, so authenticated clients are limited per account): an `x-api-key` header wins, then an
 * `Authorization: Bearer` session token, then the `session` cookie. Resolution never fails a
 * request by itself: public routes ignore bad credentials ("sending a key on them is harmless").
 *
 * Each route declares its access tier in `config.access` (contract "Endpoints", decisions.md):
 *   public   no credentials needed
 *   session  a signed-in session only; an API key gets 403 FORBIDDEN (keys never manage keys or move money)
 *   read     a session, or an API key of scope read or trade
 *   trade    a session, or an API key of scope trade; a read key gets 403 INSUFFICIENT_SCOPE
 *   admin    `Authorization: Bearer <ADMIN_TOKEN>`
 * Missing, expired or revoked credentials are 401 UNAUTHENTICATED; a key used from an address
 * outside its `allowedIps` is 403 IP_NOT_ALLOWED.
 *
 * CSRF: a request that presents the session cookie (and no Bearer token or API key) and changes
 * state must not come from another origin (`Origin` other than PUBLIC_ORIGIN is 403), whatever the
 * route's tier: public ones too (a sibling site must not sign a user out); bodies must be JSON
 * (text/plain is not parsed).
 *
 * The admin token is compared as SHA-256 digests in constant time: comparing the tokens themselves
 * would leak their length through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, apiError } from '../errors.ts';
import type { ApiKeys } from './api-keys.ts';
import type { ApiKeyRecord, Maybe } from './identity-store.ts';
import type { Session, Sessions } from './sessions.ts';

export type Access = 'public' | 'session' | 'read' | 'trade' | 'admin';

export type Identity =
  | { readonly via: 'session'; readonly address: string; readonly session: Session; readonly fromCookie: boolean }
  | { readonly via: 'apiKey'; readonly address: string; readonly key: ApiKeyRecord };

export const SESSION_COOKIE = 'session';

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
    identityError: ApiError | null;
  }
  interface FastifyContextConfig {
    access?: Access;
    /** Counts against the order-action rate budget instead of the general one. */
    orderAction?: boolean;
    /** false: the GET reads no live core state and skips the durability barrier (durable-reads.ts). */
    durableRead?: boolean;
  }
}

export interface IdentityDeps {
  readonly sessions: Sessions;
  readonly apiKeys: ApiKeys;
  readonly publicOrigin: string;
  readonly adminToken: string | null;
}

export function createIdentityResolver(deps: IdentityDeps) {
  return async function resolveIdentity(req: FastifyRequest): Promise<void> {
    req.identity = null;
    req.identityError = null;
    const key = req.headers['x-api-key'];
    if (key !== undefined) {
      const check = await unlessUnreachable(deps.apiKeys.authenticate(Array.isArray(key) ? (key[0] ?? '') : key, req.ip));
      if (check.ok) req.identity = { via: 'apiKey', address: check.key.address, key: check.key };
      else req.identityError = apiError(check.code, check.message);
      return;
    }
    const presented = presentedSession(req);
    if (presented === undefined) return;
    const session = await unlessUnreachable(deps.sessions.verify(presented.token));
    if (session === null) {
      req.identityError = apiError('UNAUTHENTICATED', 'session is invalid, expired or signed out');
      return;
    }
    req.identity = { via: 'session', address: session.address, session, fromCookie: presented.fromCookie };
  };
}

/**
 * A shared identity store (PostgreSQL) that cannot be reached leaves a credential neither good nor
 * bad: 503 UNAVAILABLE (with Retry-After), not a 500 and not a 401 that would sign the client out.
 */
function unlessUnreachable<T>(answer: Maybe<T>): Maybe<T> {
  if (!(answer instanceof Promise)) return answer;
  return answer.catch(() => {
    throw apiError('UNAVAILABLE', 'the sign-in records cannot be reached; retry shortly');
  });
}

export function createAccessCheck(deps: IdentityDeps) {
  return async function checkAccess(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const access = req.routeOptions.config.access ?? 'public';
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.headers['x-api-key'] === undefined && presentedSession(req)?.fromCookie === true) {
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== deps.publicOrigin) {
        throw apiError('FORBIDDEN', `cross-origin request from ${origin} refused`);
      }
    }
    if (access === 'public') return;
    if (access === 'admin') return checkAdmin(req, deps.adminToken);
    const id = req.identity;
    if (id === null) throw req.identityError ?? apiError('UNAUTHENTICATED', 'sign in or send an API key');
    if (id.via === 'apiKey') {
      if (access === 'session') throw apiError('FORBIDDEN', 'this endpoint needs a signed-in session; API keys cannot use it');
      if (access === 'trade' && id.key.scope !== 'trade') {
        throw apiError('INSUFFICIENT_SCOPE', 'this endpoint needs an API key with scope "trade"');
      }
      return;
    }
  };
}

/** The caller's address on a route whose access check already passed. */
export function callerAddress(req: FastifyRequest): string {
  if (req.identity === null) throw apiError('UNAUTHENTICATED', 'sign in or send an API key');
  return req.identity.address;
}

/** The session token the request presents (Bearer first, then the cookie), whatever else it sends. */
export function presentedSession(req: FastifyRequest): { token: string; fromCookie: boolean } | undefined {
  const bearer = bearerToken(req);
  const token = bearer ?? req.cookies?.[SESSION_COOKIE];
  return token === undefined || token === '' ? undefined : { token, fromCookie: bearer === undefined };
}

function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer ([A-Za-z0-9_.-]+)$/i.exec(header); // the scheme is case-insensitive (RFC 7235)
  return m === null ? '' : m[1];
}

function checkAdmin(req: FastifyRequest, adminToken: string | null): void {
  const header = req.headers.authorization ?? '';
  const presented = /^bearer /i.test(header) ? header.slice(7) : '';
  const digest = (token: string) => createHash('sha256').update(token).digest();
  const same = adminToken !== null && adminToken.length > 0 && timingSafeEqual(digest(presented), digest(adminToken));
  if (!same) throw apiError('UNAUTHENTICATED', 'admin token required');
}
