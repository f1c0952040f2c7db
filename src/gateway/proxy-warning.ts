/**
 * Behind a reverse proxy without TRUST_PROXY, every client appears as the proxy's address: they all
 * share one anonymous budget, one address ceiling, one sign-in throttle and one set of stream caps,
 * and an API key's IP pin sees the proxy. The service cannot tell a proxy from a client, but a
 * request carrying `X-Forwarded-For`, `Forwarded` or `X-Real-IP` from a peer it does not trust is
 * what a proxy sends: the first one is logged as a warning naming the peer and the setting (README
 * "Behind a proxy"). Nothing else changes: a client may send those headers itself.
 */
import type { FastifyRequest } from 'fastify';

const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const;

export function proxyWarning(trustProxy: readonly string[], warn: (message: string) => void) {
  let warned = false;
  return async (req: FastifyRequest): Promise<void> => {
    if (warned) return;
    const header = PROXY_HEADERS.find((h) => req.headers[h] !== undefined);
    if (header === undefined) return;
    const peer = req.socket.remoteAddress ?? 'unknown';
    if (trustProxy.length > 0 && req.ip !== peer) return; // a trusted proxy: its header was believed
    warned = true;
    warn(
      `a request from ${peer} carries ${header} but TRUST_PROXY ${trustProxy.length === 0 ? 'is not set' : 'does not list that peer'}: ` +
      'behind a proxy, set TRUST_PROXY to its address, or every client shares its rate limits and sign-in throttle (logged once)',
    );
  };
}
