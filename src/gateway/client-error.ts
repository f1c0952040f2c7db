/**
 * Requests Node's HTTP parser refuses before Fastify sees them: headers over
 * `SERVER_LIMITS.maxHeaderBytes`, a malformed request line, header or Content-Length, a request not
 * received within `SERVER_LIMITS.requestTimeoutMs`. No route, hook or error handler runs for them,
 * and Fastify's default answer is a body of its own without the headers every response carries;
 * this one answers the `{ error, message }` envelope with X-Api-Version, a new X-Request-Id (the
 * request's own header was never read; request-log.ts) and the rate-limit headers
 * (counted on the peer's anonymous budget: no credential was read), then closes the connection,
 * since the parser cannot tell where a next request on it would start.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyBaseLogger } from 'fastify';
import type { ErrorBody } from './errors.ts';
import type { RateLimiter } from './rate-limit.ts';

export interface ClientErrorLimits {
  readonly maxHeaderBytes: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

export function clientErrorHandler(limiter: RateLimiter, limits: ClientErrorLimits, log: () => FastifyBaseLogger) {
  return (error: ConnectionError, socket: Socket): void => {
    // A reset peer, or one whose socket is already closed or has a response under way: writing
    // would fail or corrupt what the peer is reading.
    if (error.code === 'ECONNRESET' || !socket.writable || responseStarted(socket)) {
      socket.destroy();
      return;
    }
    const { status, body } = clientErrorBody(error, limits);
    const requestId = randomUUID();
    log().debug({ code: error.code, status, requestId }, 'HTTP request refused by the parser');
    const budget = limiter.takeAnonymous(socket.remoteAddress ?? 'unknown');
    const json = JSON.stringify(body);
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(json)}`,
      'X-Api-Version: 1',
      `X-Request-Id: ${requestId}`,
      `X-RateLimit-Limit: ${budget.limit}`,
      `X-RateLimit-Remaining: ${budget.remaining}`,
      `X-RateLimit-Reset: ${budget.resetSeconds}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${json}`, () => socket.destroy());
  };
}

/** The status and envelope for a parser error: 431 and 408 keep their status, anything else is 400. */
export function clientErrorBody(error: Pick<ConnectionError, 'code'>, limits: ClientErrorLimits): { status: number; body: ErrorBody } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, body: { error: 'VALIDATION_ERROR', message: `request headers exceed ${limits.maxHeaderBytes} bytes` } };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        body: {
          error: 'VALIDATION_ERROR',
          message: `request not received in time (headers within ${limits.headersTimeoutMs / 1000} s, the whole request within ${limits.requestTimeoutMs / 1000} s)`,
        },
      };
    default:
      return { status: 400, body: { error: 'VALIDATION_ERROR', message: 'malformed HTTP request' } };
  }
}

/** Whether a response on this connection has begun (Node's own client-error reply makes the same check). */
function responseStarted(socket: Socket): boolean {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  return inFlight?.headersSent === true;
}
