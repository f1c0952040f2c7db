/**
 * The OpenAPI 3.1 document's header: what the service is and the conventions every route
 * follows. Paths come from the routes' own TypeBox schemas (@fastify/swagger), so the document
 * describes exactly what is served. Decisions that the contract leaves open are written here.
 */
import type { SwaggerOptions } from '@fastify/swagger';
import type { Settings } from '../config/env.ts';

const DESCRIPTION = `
USDC-settled perpetuals, dated futures, options and spot behind one gateway.

**Numbers.** Every price, size, amount, rate and percentage is a decimal string in plain notation
(\`"12.5"\`). A JSON number, an exponent (\`1e5\`), hex, a leading \`+\`, spaces, \`.5\`, \`5.\`, \`-0\`
or an empty string is refused with 400 \`INVALID_DECIMAL\`; more fractional digits than the
market's \`priceDecimals\`/\`sizeDecimals\` gives \`INVALID_TICK\`/\`INVALID_STEP\`; zero or negative sizes
and amounts give \`INVALID_DECIMAL\`. Responses never contain exponents or \`-0\`; trailing zeros are trimmed.
USDC amounts carry at most 6 decimals.

**Times.** ISO 8601 UTC with milliseconds, except candles (Unix seconds) and stream envelopes
(\`engineTs\`/\`sourceTs\` in Unix milliseconds).

**Errors.** Every error is \`{ "error": CODE, "message": text }\`. 400 \`VALIDATION_ERROR\`,
\`INVALID_DECIMAL\`, \`INVALID_TICK\`, \`INVALID_STEP\`, \`INSUFFICIENT_BALANCE\`, \`RANGE_TOO_LARGE\`;
401 \`UNAUTHENTICATED\`; 403 \`INSUFFICIENT_SCOPE\`, \`IP_NOT_ALLOWED\`, \`FORBIDDEN\`; 404 \`NOT_FOUND\`;
409 \`DUPLICATE_CLIENT_ORDER_ID\`, \`CONFLICT\`; 413 \`PAYLOAD_TOO_LARGE\`; 415 \`UNSUPPORTED_MEDIA_TYPE\`
(bodies must be \`application/json\`); 422 business rejections; 429 \`RATE_LIMITED\`; 500 \`INTERNAL\`;
503 \`UNAVAILABLE\`. Unknown fields in a body are refused (400), never silently dropped.

**Consistency.** An acknowledged command is durable (it survives a crash). Reads never run ahead of
that: a GET answers with state whose every command is durable (it may wait a moment for the current
group commit), so nothing a client reads can be taken back by a crash; if the journal cannot be
written, reads answer 503 \`UNAVAILABLE\` rather than show it. Stream events are published once
durable, and the balances stream's figures, read live, are sent only once what they show is durable.
While the service starts (it rebuilds its state from the newest snapshot and the journal after it),
\`GET /health\` answers 503 with \`status: "starting"\` and the progress, and every other route 503
\`UNAVAILABLE\` with \`Retry-After\`.

**Authentication.** Sign in with Ethereum: \`POST /auth/nonce\`, then \`POST /auth/siwe\` with an
EIP-4361 message for this origin and chain; the session JWT (7 days) comes back in the body and as
the httpOnly \`session\` cookie, and is also accepted as \`Authorization: Bearer\`. \`POST /auth/logout\`
revokes it. API keys (\`x-api-key\`) are made from a session; scope \`read\` covers market data and
account reads, \`trade\` adds order actions. Key management and money movement (wallet) need a session.
A request that sends the session cookie and changes state (on any route, \`POST /auth/logout\` included)
from another \`Origin\` is refused (403).

**Rate limits.** Fixed 10-second windows: 200 requests per IP for anonymous clients, 1,000 per account
(shared by its sessions and keys), order actions on a separate per-account budget, and 5,000 per
client address for all its requests, signed in or not (its accounts together); 60 new sessions per
address per hour. Every response carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and
\`X-RateLimit-Reset\` (whole seconds until the window resets); over budget is 429 \`RATE_LIMITED\` with
\`Retry-After\` and \`X-RateLimit-Budget\` naming the budget that ran out (\`anonymous\`, \`account\`,
\`orders\`, \`address\`, \`sign-in\`).

**Streams.** Server-Sent Events (\`text/event-stream\`). A stream opens with \`event: snapshot\`, then
sends \`update\` or \`delta\` frames with diffs only, each \`{ eventId, eventType, eventSeq, engineTs, sourceTs,
payload }\` with \`eventSeq\` strictly increasing and gap-free per connection (the SSE \`id:\` equals it); on a
gap or disconnect, reconnect and apply the new snapshot (no resume). \`:heartbeat\` comments keep the
connection alive. \`event: error\` carries \`{ code, message, retryable }\` with code \`INVALID_PARAMS\`,
\`UNAUTHENTICATED\`, \`SLOW_CONSUMER\` (the client did not read fast enough), \`UPSTREAM_UNAVAILABLE\` or
\`INTERNAL\`, and the stream ends. Parameters and credentials are checked before a stream opens (400, 401,
403, 404 as usual); too many open streams for an IP address or account is 429 \`RATE_LIMITED\`, a full
server 503 \`UNAVAILABLE\`. Private streams never accept a token in the query string.
\`GET /markets/board/stream\` is the exception to snapshot-then-diffs: about once a second it sends a
data-only message (no \`event:\` field) carrying the full board snapshot (eventType
\`OptionsBoardSnapshot\`). On \`GET /options/stream/events\` the reference overlay is never tradable:
orders route against the order book.

**Durability.** A 2xx answer to a state change means it is durably journaled: it survives a crash.
History reads (order and trade lists, the public trade tape, wallet history and settlements, candles, market stats) always
include every state change answered before the read began.

**Request ids.** Every response, errors included, carries \`X-Request-Id\`: the client's own when it
sends one of 1 to 128 characters of \`[A-Za-z0-9._-]\`, otherwise a generated one (a malformed id is
replaced, never echoed). Quote it when reporting a problem: the service logs it with the request.

**Operators.** With \`ADMIN_TOKEN\` set, \`/admin/*\` and \`GET /metrics\` (Prometheus text) answer
\`Authorization: Bearer <ADMIN_TOKEN>\` (401 otherwise); without it they do not exist (404).

**Versioning.** Responses carry \`X-Api-Version: 1\`. The surface grows additively.
`;

type OpenApiDocument = Extract<SwaggerOptions, { openapi?: unknown }>['openapi'];

export function openApiDocument(settings: Settings): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: { title: 'Exchange API', version: '1.0.0', description: DESCRIPTION.trim() },
    servers: [{ url: settings.publicOrigin }],
    tags: [
      { name: 'auth', description: 'Sign-in with Ethereum and sessions' },
      { name: 'api-keys', description: 'API key management (session only)' },
      { name: 'market-data', description: 'Public markets, books, trade tapes, stats, candles, fees, the TradingView UDF datafeed (/udf)' },
      { name: 'perps', description: 'Perpetuals and dated futures: orders, quotes, positions' },
      {
        name: 'options-spot',
        description: 'Options and spot: orders, amends, strategies, quotes, market-maker protection, portfolio',
      },
      { name: 'orders', description: 'Across every venue: the dead-man switch (cancel all after a timeout)' },
      { name: 'wallet', description: 'Balances, bucket transfers, withdrawals, settlements' },
      { name: 'admin', description: 'Operator endpoints (enabled by ADMIN_TOKEN)' },
      {
        name: 'streams',
        description: 'Server-Sent Events: order books, public trades, own fills and positions, balances, the option board',
      },
      { name: 'system', description: 'Health, server time' },
    ],
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'session', description: 'session JWT cookie' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'session JWT' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'API key secret' },
        admin: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
      },
    },
  };
}
