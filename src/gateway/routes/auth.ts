/**
 * Sign-in routes: `POST /auth/nonce`, `POST /auth/siwe`, `POST /auth/logout` (contract
 * "Authentication", decisions.md "Access"). The session token is returned in the body and set
 * as the `session` cookie (httpOnly, SameSite=Lax, Secure when PUBLIC_ORIGIN is https).
 */
import { Type } from 'typebox';
import { getAddress } from 'viem';
import type { TypedApp } from '../app.ts';
import { presentedSession, SESSION_COOKIE } from '../auth/identity.ts';
import type { GatewayContext } from '../context.ts';
import { clientNetwork } from '../client-network.ts';
import { iso } from '../format.ts';
import { Address, IsoTime, responses } from '../schemas/common.ts';

export function authRoutes(app: TypedApp, ctx: GatewayContext): void {
  const secure = ctx.settings.publicOrigin.startsWith('https:');
  const origin = new URL(ctx.settings.publicOrigin);

  app.post('/auth/nonce', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      summary: 'Issue a single-use sign-in nonce (expires after 5 minutes)',
      description: 'At most 20 unused nonces per wallet address and client IP; beyond that 429 RATE_LIMITED '
        + 'until one is used or expires (what other clients ask for an address never counts against yours).',
      body: Type.Object({ walletAddress: Address }, { additionalProperties: false }),
      response: responses({
        200: Type.Object({
          nonce: Type.String(),
          expiresAt: IsoTime,
          domain: Type.String({ description: 'the EIP-4361 domain to sign for' }),
          uri: Type.String({ description: 'the EIP-4361 URI to sign for' }),
          chainId: Type.Integer(),
        }),
      }, [400, 429]),
    },
  }, async (req) => {
    const { nonce, expiresAt } = await ctx.siwe.issueNonce(req.body.walletAddress, clientNetwork(req.ip));
    return { nonce, expiresAt: iso(expiresAt), domain: origin.host, uri: ctx.settings.publicOrigin, chainId: ctx.settings.chainId };
  });

  app.post('/auth/siwe', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      summary: 'Verify a signed EIP-4361 message and open a 7-day session',
      description: 'At most RATE_LIMIT_SIGNIN_PER_HOUR new sessions (default 60) per client address per hour; beyond that 429 RATE_LIMITED with X-RateLimit-Budget: sign-in.',
      body: Type.Object(
        { message: Type.String({ maxLength: 4096 }), signature: Type.String({ maxLength: 200 }) },
        { additionalProperties: false },
      ),
      response: responses({
        200: Type.Object({ token: Type.String(), walletAddress: Type.String(), expiresAt: IsoTime }),
      }, [400, 401, 429]),
    },
  }, async (req, reply) => {
    await ctx.signIns.check(req.ip, reply);
    const address = await ctx.siwe.verify(req.body.message, req.body.signature);
    await ctx.signIns.count(req.ip, reply);
    const { token, expiresAt } = await ctx.sessions.issue(address);
    reply.setCookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'lax',
      secure,
      path: '/',
      expires: new Date(expiresAt),
    });
    return { token, walletAddress: getAddress(address), expiresAt: iso(expiresAt) };
  });

  app.post('/auth/logout', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      summary: 'Revoke the current session token and clear the cookie',
      response: responses({ 200: Type.Object({ ok: Type.Boolean() }) }, [429]),
    },
  }, async (req, reply) => {
    // The session presented is revoked even when an x-api-key beside it won identity resolution.
    const presented = presentedSession(req);
    const session = req.identity?.via === 'session' ? req.identity.session : presented === undefined ? null : await ctx.sessions.verify(presented.token);
    if (session !== null) await ctx.sessions.revoke(session);
    reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure });
    return { ok: true };
  });
}
