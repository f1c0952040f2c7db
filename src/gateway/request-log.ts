/**
 * Request ids and the request log. Every response carries `X-Request-Id`: the client's own id when
 * it sent one of 1 to 128 characters of `[A-Za-z0-9._-]` (so a log line can be matched with the
 * client's), otherwise one generated here (a UUID); anything else a client sends there is replaced,
 * never echoed, so the header cannot carry a client's text into logs or other responses. Fastify
 * takes the id from `requestId` (its `genReqId`) and binds it to the request's logger as `requestId`.
 *
 * One line per request at `info` once its response is sent: method, route pattern (null when no
 * route matched), status, duration in ms, the caller's account address when it presented a valid
 * credential, and the request id. Never the body, the query or a header value. A stream logs its
 * line when it ends (its duration is its lifetime). Requests the service makes to itself log at
 * `debug`, so the info log shows the clients: those without a socket (`app.inject`) and those of
 * the accounts the service names as its own (`quietAccounts`: the reference market maker, an HTTP
 * client of the service, once it has signed in; its sign-in and the operator's funding of it stay
 * at info).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The request's id: the client's `X-Request-Id` when it is well-formed, else a new UUID. */
export function requestId(raw: IncomingMessage): string {
  const sent = raw.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** Writes the request's log line (called once its response is sent). */
export function logRequest(req: FastifyRequest, reply: FastifyReply, quietAccounts?: ReadonlySet<string>): void {
  const own = req.identity !== null && quietAccounts?.has(req.identity.address.toLowerCase()) === true;
  const internal = own || !(req.raw.socket instanceof Socket);
  req.log[internal ? 'debug' : 'info']({
    method: req.method,
    route: req.routeOptions.url ?? null,
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
    account: req.identity?.address ?? null,
  }, 'request');
}
