/**
 * Opening a stream, shared by every stream route. Everything that can refuse a stream happens
 * before the response head is written, so a refusal is an ordinary `{ error, message }` reply:
 * 401/403 (the access hook, and here the Origin rule for cookie sessions), 400 (the query schema,
 * validated before the handler), 404 (the route's own lookup), 429/503 (connection caps, core
 * down). Then the reply is hijacked, the head is written with the headers the onRequest hooks set
 * (version, rate limit), and `start` joins the view groups and writes the snapshot in the same
 * synchronous step, so no published event falls between the snapshot and the first diff. With
 * `resume=true` and a Last-Event-ID, `start` may write the frames missed since then instead of the
 * snapshot (hub.ts Group; docs/architecture.md "Streams").
 *
 * Streams are HTTP/1.1 chunked responses; an HTTP/1.0 request, or one pipelined behind another
 * response on the same connection, is refused with 400.
 *
 * Credentials: private streams take the session cookie, `Authorization: Bearer` or `x-api-key`
 * (any scope), never a token in the query string (unknown parameters are refused, and identity
 * is never read from the URL). A cookie-authenticated stream from another `Origin` is 403
 * (research/reliability.md 5.4). While open, the credential is re-checked by the hub.
 * Tested by test/streams/perps-private.test.ts and test/streams/streams-limits.test.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../auth/identity.ts';
import { clientNetwork } from '../client-network.ts';
import type { GatewayContext } from '../context.ts';
import { ApiError, apiError } from '../errors.ts';
import type { AccountBudget } from './admission.ts';
import { admitCancelOnDisconnect, cancelOnDisconnect } from './cancel-on-disconnect.ts';
import type { CredentialCheck, StreamHub } from './hub.ts';
import type { StreamConnection } from './sse.ts';

/**
 * Joins a connection to a stream's view: writes its snapshot (or, resuming after `resumeAfter`, the
 * frames it missed) and adds it to the groups that send it the rest.
 */
export type StreamJoin = (conn: StreamConnection, address: string | null, resumeAfter: number | null) => void;

/**
 * A stream route as both sides of the relay see it (docs/deploy.md "Streams across gateways"): the
 * gateway that takes the request checks it and admits the connection; whichever process runs the
 * views (this one, or the stream producer) opens it from the same validated input.
 */
export interface StreamRoute<I> {
  /** The route's name on the relay. */
  readonly name: string;
  /** Whether the stream needs an identity (the caller's private data, or an option instrument's). */
  readonly private: boolean;
  /** The per-account cap it counts against (default `private`; admission.ts). */
  readonly budget?: AccountBudget;
  /** The refusals (400, 404) the input earns here, thrown before the stream opens. */
  check(input: I): void;
  /** The join for this input (after `check`; may first read the view's start: 503 if it cannot). */
  open(input: I): StreamJoin | Promise<StreamJoin>;
}

/** Where a relaying gateway sends the streams it admitted (adapters/nats/stream-relay.ts). */
export interface StreamRelay {
  join(conn: StreamConnection, opening: StreamOpening): void;
}

/** A stream to open on the producer: the route, its validated input, the caller, the resume point. */
export interface StreamOpening {
  readonly route: string;
  readonly input: unknown;
  readonly address: string | null;
  readonly resumeAfter: number | null;
}

/**
 * Opens `route` for the request: with views here, joins them; on a relaying gateway, hands the
 * admitted connection to the relay. Either way every refusal comes before the head is written.
 */
export async function openRoute<I>(hub: StreamHub, req: FastifyRequest, reply: FastifyReply, route: StreamRoute<I>, input: I, cancelOnDisconnect = false) {
  const relay = hub.relay;
  let join: StreamJoin;
  if (relay === null) {
    join = await route.open(input);
  } else {
    route.check(input);
    join = (conn, address, resumeAfter) => relay.join(conn, { route: route.name, input, address, resumeAfter });
  }
  openStream(hub, req, reply, { private: route.private, budget: route.budget, cancelOnDisconnect, start: join });
}

export interface StreamStart {
  /** Whether the stream needs an identity (the caller's private data, or an option instrument's). */
  readonly private: boolean;
  /** The per-account cap it counts against (default `private`; admission.ts). */
  readonly budget?: AccountBudget;
  /** Runs right after the head is written: join groups, write the snapshot. */
  start: StreamJoin;
  /** Query `cancelOnDisconnect=true` on a private stream: its close cancels the caller's orders (cancel-on-disconnect.ts). */
  readonly cancelOnDisconnect?: boolean;
}

export function openStream(hub: StreamHub, req: FastifyRequest, reply: FastifyReply, spec: StreamStart) {
  if (hub.isClosed || !hub.ctx.sequencer.isHealthy()) {
    throw apiError('UNAVAILABLE', 'the exchange core is unavailable');
  }
  const caller = spec.private ? privateCaller(hub.ctx, req) : null;
  const cancelOnClose = caller !== null && spec.cancelOnDisconnect === true;
  if (cancelOnClose) admitCancelOnDisconnect(req, reply);
  const slot = hub.caps.admit(clientNetwork(req.ip), caller?.address ?? null, spec.budget);
  if (slot instanceof ApiError) throw slot;
  if (reply.raw.socket === null || req.raw.httpVersion === '1.0') {
    slot.release();
    throw apiError('VALIDATION_ERROR', 'a stream needs HTTP/1.1 and must not be pipelined behind a request');
  }
  reply.hijack();
  const conn = hub.connect(reply.raw, headersOf(reply), caller?.credential ?? null, slot.release);
  if (cancelOnClose) cancelOnDisconnect(hub, conn, caller.address);
  try {
    spec.start(conn, caller?.address ?? null, resumePoint(req));
  } catch (error) {
    hub.reportError(error, 'stream start failed');
    conn.fail('INTERNAL', 'the stream could not start; reconnect', true);
  }
}

/**
 * The SSE `Last-Event-ID` a reconnecting client sends (the eventSeq it last applied), when the
 * request asked to resume with the query parameter `resume=true` (validated by the route's query
 * schema, which turns it into a boolean). Null otherwise, or when the header is absent or not a
 * whole number: the stream then starts with a snapshot. Opt-in because EventSource sends the header
 * on its own reconnects, and a client that did not ask must get the snapshot the contract promises.
 */
function resumePoint(req: FastifyRequest): number | null {
  if ((req.query as { resume?: unknown } | null | undefined)?.resume !== true) return null;
  const header = req.headers['last-event-id'];
  if (typeof header !== 'string' || !/^\d{1,15}$/.test(header)) return null;
  return Number(header);
}

function headersOf(reply: FastifyReply): Record<string, string | number | string[]> {
  const out: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) out[name] = value;
  return out;
}

interface PrivateCaller {
  readonly address: string;
  readonly credential: CredentialCheck;
}

/** The caller of a private stream and how to re-check its credential. */
function privateCaller(ctx: GatewayContext, req: FastifyRequest): PrivateCaller {
  const id = req.identity;
  if (id === null) throw req.identityError ?? apiError('UNAUTHENTICATED', 'sign in or send an API key');
  if (id.via === 'apiKey') {
    const keyId = id.key.id;
    return { address: id.address, credential: () => ctx.apiKeys.isActive(keyId) };
  }
  if (id.fromCookie) {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== ctx.settings.publicOrigin) {
      throw apiError('FORBIDDEN', `cross-origin stream from ${origin} refused`);
    }
  }
  const token = id.fromCookie
    ? (req.cookies[SESSION_COOKIE] ?? '')
    : (req.headers.authorization ?? '').slice('Bearer '.length);
  const jti = id.session.jti;
  return { address: id.address, credential: async () => (await ctx.sessions.verify(token))?.jti === jti };
}
