/**
 * The parser-error reply where a real server is impractical to drive: the 408 of a request not
 * received in time (the service waits 30 s) and the sockets it must not write to. The 431 and 400
 * replies are shown over TCP in test/api/errors-and-limits.test.ts.
 */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import type { ConnectionError, FastifyBaseLogger } from 'fastify';
import { clientErrorBody, clientErrorHandler } from './client-error.ts';
import { RateLimiter } from './rate-limit.ts';

const limits = { maxHeaderBytes: 16 * 1024, headersTimeoutMs: 5_000, requestTimeoutMs: 30_000 };
const limiter = new RateLimiter({ windowMs: 10_000, anonymousPerWindow: 5, accountPerWindow: 5, orderActionsPerWindow: 5, addressPerWindow: 1_000_000 });
const silent = { debug: () => {} } as unknown as FastifyBaseLogger;

test('a request not received within the request timeout is 408 VALIDATION_ERROR', () => {
  assert.deepEqual(clientErrorBody({ code: 'ERR_HTTP_REQUEST_TIMEOUT' }, limits), {
    status: 408,
    body: { error: 'VALIDATION_ERROR', message: 'request not received in time (headers within 5 s, the whole request within 30 s)' },
  });
});

/** A socket that records what is written to it. */
function fakeSocket(state: { writable: boolean; responseHeadersSent?: boolean }) {
  const calls: string[] = [];
  const socket = {
    writable: state.writable,
    remoteAddress: '127.0.0.1',
    _httpMessage: state.responseHeadersSent === undefined ? undefined : { headersSent: state.responseHeadersSent },
    end: (data: string) => calls.push(`end ${data.split('\r\n')[0]}`),
    destroy: () => calls.push('destroy'),
  };
  return { socket: socket as unknown as Socket, calls };
}

const parseError = (code: string) => Object.assign(new Error(code), { code, bytesParsed: 0, rawPacket: { type: 'Buffer', data: [] } }) as ConnectionError;

test('a reset peer, a closed socket or a response under way get nothing written; the socket is closed', () => {
  const handle = clientErrorHandler(limiter, limits, () => silent);
  for (const [code, state] of [
    ['ECONNRESET', { writable: true }],
    ['HPE_INVALID_METHOD', { writable: false }],
    ['ERR_HTTP_REQUEST_TIMEOUT', { writable: true, responseHeadersSent: true }],
  ] as const) {
    const { socket, calls } = fakeSocket(state);
    handle(parseError(code), socket);
    assert.deepEqual(calls, ['destroy'], code);
  }
  const { socket, calls } = fakeSocket({ writable: true, responseHeadersSent: false });
  handle(parseError('HPE_INVALID_METHOD'), socket);
  assert.deepEqual(calls, ['end HTTP/1.1 400 Bad Request'], 'a writable socket gets the envelope');
});
