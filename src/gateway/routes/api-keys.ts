/**
 * API key management (`/perps/me/api-keys`), session only: a key can never create, list or
 * revoke keys. The plaintext secret appears once, in the creation response.
 */
import { Type } from 'typebox';
import type { TypedApp } from '../app.ts';
import { API_KEY_LIMITS, type ApiKeyView } from '../auth/api-keys.ts';
import { callerAddress } from '../auth/identity.ts';
import type { GatewayContext } from '../context.ts';
import { iso, isoOrNull } from '../format.ts';
import { IsoTime, NullableIsoTime, responses, StringEnum } from '../schemas/common.ts';

const Scope = StringEnum(['read', 'trade']);
const ApiKeyMetadata = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Scope,
  allowedIps: Type.Array(Type.String()),
  expiresAt: NullableIsoTime,
  createdAt: IsoTime,
  lastUsedAt: NullableIsoTime,
  status: StringEnum(['active', 'revoked', 'expired']),
});

const view = (k: ApiKeyView) => ({
  id: k.id,
  name: k.name,
  scope: k.scope,
  allowedIps: [...k.allowedIps],
  expiresAt: isoOrNull(k.expiresAt),
  createdAt: iso(k.createdAt),
  lastUsedAt: isoOrNull(k.lastUsedAt),
  status: k.status,
});

export function apiKeyRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/perps/me/api-keys', {
    config: { access: 'session' },
    schema: {
      tags: ['api-keys'],
      summary: 'List the account\'s API keys (secrets are never returned)',
      response: responses({ 200: Type.Array(ApiKeyMetadata) }),
    },
  }, async (req) => (await ctx.apiKeys.list(callerAddress(req))).map(view));

  app.post('/perps/me/api-keys', {
    config: { access: 'session' },
    schema: {
      tags: ['api-keys'],
      summary: 'Create an API key; the secret is shown once',
      description: `Omitting expiresInDays makes a key that does not expire. At most ${API_KEY_LIMITS.maxActivePerAccount} active keys per account (409 CONFLICT beyond); the list keeps ${API_KEY_LIMITS.maxKeptPerAccount} keys in all, a new key making room by forgetting the oldest revoked or expired one. allowedIps lists addresses or CIDR ranges (at most ${API_KEY_LIMITS.maxAllowedIps}); IPv4-mapped IPv6 matches its IPv4 form.`,
      body: Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 64 }),
          scope: Scope,
          allowedIps: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: API_KEY_LIMITS.maxAllowedIps })),
          expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: API_KEY_LIMITS.maxExpiresInDays })),
        },
        { additionalProperties: false },
      ),
      response: responses(
        { 201: Type.Intersect([ApiKeyMetadata, Type.Object({ secret: Type.String(), message: Type.String() })]) },
        [400, 401, 403, 409, 429],
      ),
    },
  }, async (req, reply) => {
    const { view: key, secret } = await ctx.apiKeys.create(callerAddress(req), req.body);
    reply.status(201);
    return { ...view(key), secret, message: 'Store this secret now: it is shown only once and cannot be retrieved.' };
  });

  app.delete('/perps/me/api-keys/:id', {
    config: { access: 'session' },
    schema: {
      tags: ['api-keys'],
      summary: 'Revoke an API key (takes effect at once, including open streams)',
      params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      response: responses({ 200: ApiKeyMetadata }, [401, 403, 404, 429]),
    },
  }, async (req) => view(await ctx.apiKeys.revoke(callerAddress(req), req.params.id)));
}
