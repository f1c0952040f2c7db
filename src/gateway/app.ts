/**
 * The HTTP gateway: one Fastify instance serving the whole interface. The request lifecycle, in
 * order: identify the caller -> rate limit -> check the route's access tier -> parse JSON ->
 * strict schema validation -> handler (which parses decimals and submits commands to the
 * sequencer) -> response schema serialisation. Every failure on the way becomes the
 * `{ error, message }` envelope with the status decisions.md assigns to its code.
 *
 * Server limits are explicit (docs/architecture.md "Limits": Fastify's own timeouts are unlimited), and
 * so are the open TCP connections, in all and per client address (connection-limits.ts).
 */
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
  type RouteOptions,
} from 'fastify';
import type { Settings } from '../config/env.ts';
import { ApiError, apiError, type ErrorBody } from './errors.ts';
import { createAccessCheck, createIdentityResolver, type Access, type IdentityDeps } from './auth/identity.ts';
import { clientErrorHandler } from './client-error.ts';
import { ConnectionLimiter } from './connection-limits.ts';
import { RateLimiter } from './rate-limit.ts';
import type { RateBudgets } from './rate-budgets.ts';
import { logRequest, REQUEST_ID_HEADER, requestId } from './request-log.ts';
import { strictValidatorCompiler } from './validation.ts';
import { openApiDocument } from './openapi.ts';
import { NoQuery } from './schemas/common.ts';
import { registerTerminal } from './terminal.ts';

export const SERVER_LIMITS = {
  bodyLimitBytes: 256 * 1024,
  /**
   * A request's line and headers must arrive within this of its first byte (of the connection, for
   * its first request), the whole request, body included, within `requestTimeoutMs`; else 408 and
   * the connection closed (client-error.ts). Neither bounds a response: a stream, whose request is
   * complete, runs on. An idle keep-alive connection between requests is `keepAliveTimeoutMs`'s.
   */
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  /**
   * How often Node looks for requests past those timeouts (its default, 30 s, let a slow-header
   * client hold its socket 36 s before its 408): they are enforced within this much.
   */
  connectionsCheckingIntervalMs: 1_000,
  /** A connection on which nothing is read or written for this long is closed. */
  connectionTimeoutMs: 60_000,
  /** A keep-alive connection idle between requests is closed after this (it counts against the connection caps meanwhile). */
  keepAliveTimeoutMs: 72_000,
  maxParamLength: 200,
  /** All request headers together (Node's default, stated): more is refused 431 by the parser. */
  maxHeaderBytes: 16 * 1024,
} as const;

export type App = FastifyInstance;
export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface AppOptions {
  readonly settings: Settings;
  readonly identity: IdentityDeps;
  readonly logger?: boolean;
  /** Where log lines go (default stdout); tests read them. */
  readonly logStream?: { write(line: string): void };
  /** Runs before every other hook: answers requests itself while the core recovers (startup.ts). */
  readonly gate?: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** Runs once each response is sent, after its log line (the service's metrics, metrics.ts). */
  readonly onResponse?: (req: FastifyRequest, reply: FastifyReply) => void;
  /** The service's own accounts (the reference market maker), lower case: their requests log at debug. */
  readonly quietAccounts?: ReadonlySet<string>;
  /** Where rate-limit budgets are counted (rate-budgets.ts): this process's memory unless given (shared ones: PostgreSQL). */
  readonly rateBudgets?: RateBudgets;
}

export async function createApp(options: AppOptions): Promise<TypedApp> {
  const { settings } = options;
  const limiter = new RateLimiter(settings.rateLimit, undefined, options.rateBudgets);
  const app = Fastify({
    logger: options.logger === false || settings.logLevel === 'silent' ? false : { level: settings.logLevel, stream: options.logStream },
    // X-Request-Id: the client's when well-formed, else a new one (request-log.ts); logged as requestId.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: requestId,
    bodyLimit: SERVER_LIMITS.bodyLimitBytes,
    requestTimeout: SERVER_LIMITS.requestTimeoutMs,
    connectionTimeout: SERVER_LIMITS.connectionTimeoutMs,
    keepAliveTimeout: SERVER_LIMITS.keepAliveTimeoutMs,
    routerOptions: { maxParamLength: SERVER_LIMITS.maxParamLength },
    trustProxy: settings.trustProxy.length > 0 ? [...settings.trustProxy] : false,
    return503OnClosing: true,
    http: {
      maxHeaderSize: SERVER_LIMITS.maxHeaderBytes,
      headersTimeout: SERVER_LIMITS.headersTimeoutMs,
      requestTimeout: SERVER_LIMITS.requestTimeoutMs,
      connectionsCheckingInterval: SERVER_LIMITS.connectionsCheckingIntervalMs,
    },
    // Requests the HTTP parser refuses never reach a hook or the error handler (client-error.ts).
    clientErrorHandler: clientErrorHandler(limiter, SERVER_LIMITS, (): FastifyBaseLogger => app.log),
    // Router-level refusals (a malformed %-escape, an over-long path parameter) skip the hooks and
    // the error handler; without this they answer Fastify's own body, not the envelope.
    frameworkErrors: (error, req, reply) => {
      reply.header('X-Api-Version', '1');
      reply.header(REQUEST_ID_HEADER, req.id);
      const send = (e: unknown) => {
        sendError(app, e, req as FastifyRequest, reply as FastifyReply);
        responded(req as FastifyRequest, reply as FastifyReply); // no onResponse hook runs for these
      };
      limiter.hook()(req as FastifyRequest, reply as FastifyReply).then(() => send(error), send);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const connections = new ConnectionLimiter(settings.connections, settings.trustProxy, (message, detail) => app.log.warn(detail, message));
  connections.attach(app.server);

  app.setValidatorCompiler(strictValidatorCompiler);
  app.removeContentTypeParser('text/plain');
  acceptEmptyJsonBody(app);
  app.decorateRequest('identity', null);
  app.decorateRequest('identityError', null);
  await app.register(cookie);
  await app.register(swagger, { openapi: openApiDocument(settings) });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });

  app.addHook('onRoute', stateQueryAndCredentials);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Api-Version', '1');
    reply.header(REQUEST_ID_HEADER, req.id);
  });
  const responded = (req: FastifyRequest, reply: FastifyReply): void => {
    logRequest(req, reply, options.quietAccounts);
    options.onResponse?.(req, reply);
  };
  app.addHook('onResponse', async (req, reply) => responded(req, reply));
  if (options.gate !== undefined) app.addHook('onRequest', options.gate);
  app.addHook('onRequest', createIdentityResolver(options.identity));
  app.addHook('onRequest', limiter.hook());
  app.addHook('onRequest', createAccessCheck(options.identity));

  app.setErrorHandler((error, req, reply) => sendError(app, error, req, reply));
  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send({ error: 'NOT_FOUND', message: `route ${req.method} ${req.url.split('?')[0]} not found` });
  });
  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
  await registerTerminal(app);
  return app;
}

/** The OpenAPI security requirement of each access tier (any one of the listed schemes will do). */
const SECURITY: Record<Access, readonly Record<string, string[]>[]> = {
  public: [],
  session: [{ bearer: [] }, { session: [] }],
  read: [{ bearer: [] }, { session: [] }, { apiKey: [] }],
  trade: [{ bearer: [] }, { session: [] }, { apiKey: [] }],
  admin: [{ admin: [] }],
};

/**
 * Every API route (one that declares its access tier) states its query and its credentials: a GET
 * without query parameters refuses any (an ignored filter is a silently wrong answer), and the
 * OpenAPI document names the schemes each operation accepts.
 */
function stateQueryAndCredentials(route: RouteOptions): void {
  const access = (route.config as { access?: Access } | undefined)?.access;
  if (access === undefined) return;
  const schema = (route.schema ??= {}) as { querystring?: unknown; security?: unknown };
  if (route.method === 'GET' && schema.querystring === undefined) schema.querystring = NoQuery;
  schema.security ??= SECURITY[access];
}

function sendError(app: FastifyInstance, error: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toErrorBody(error);
  if (status >= 500) app.log.error({ err: error, url: req.url, method: req.method }, 'request failed');
  // A 503 is worth retrying (the core is starting, or failing over to a standby): say when.
  if (status === 503 && !reply.hasHeader('Retry-After')) reply.header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_S));
  reply.status(status).send(body);
}

/** Seconds a client waits before retrying a 503: a standby core leads within a few seconds. */
const UNAVAILABLE_RETRY_AFTER_S = 1;

/**
 * Stops the server the way a restart wants it: no new connection, every request in flight
 * answered, then every connection closed. Node closes the connections idle at `close()` only; one
 * whose request was still being answered then stayed open, idle, until its keep-alive timeout
 * (72 s): a clean stop of the service with the maker trading took 70 s about one time in eight.
 * So the idle ones are closed again every 50 ms until the server has stopped.
 */
export async function closeApp(app: FastifyInstance): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
  }
}

/** Maps anything thrown on the way to a status and the public envelope (no internals leak). */
export function toErrorBody(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof ApiError) return { status: error.status, body: { error: error.code, message: error.message } };
  const e = error as Partial<FastifyError> & { validation?: unknown };
  if (e.validation !== undefined) return { status: 400, body: { error: 'VALIDATION_ERROR', message: e.message ?? 'invalid request' } };
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: { error: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' } };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { error: 'PAYLOAD_TOO_LARGE', message: `body exceeds ${SERVER_LIMITS.bodyLimitBytes} bytes` } };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, body: { error: 'VALIDATION_ERROR', message: 'body is not valid JSON' } };
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    const message = error instanceof SyntaxError ? 'body is not valid JSON' : (e.message ?? 'bad request');
    return { status: status === 404 ? 404 : 400, body: { error: status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR', message } };
  }
  return { status: 500, body: { error: 'INTERNAL', message: 'internal error' } };
}

/**
 * An empty body sent as application/json is no body: many clients send the header on every POST,
 * and the endpoints whose body is optional (cancel-all: none cancels everything) must not refuse
 * them. A body with a Content-Encoding (gzip, ...) is refused 415. Anything else goes to Fastify's
 * own JSON parser (prototype poisoning refused, as before);
 * an endpoint that needs a body still answers 400 from its schema.
 */
function acceptEmptyJsonBody(app: TypedApp): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // A compressed body would reach the parser as bytes it cannot read: say why instead of "not JSON".
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      done(apiError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding} is not supported: send the body uncompressed`), undefined);
      return;
    }
    if (body === '') {
      done(null, undefined);
      return;
    }
    parseJson(req, body as string, done);
  });
}
