/**
 * A loopback HTTP proxy for the SDK tests, in front of the real service: it passes requests and
 * streams through unchanged, except for the faults a test asks for — the answer of a chosen request
 * lost after the service acted on it (the client's socket destroyed), one SSE frame left out of a
 * stream (a gap in eventSeq), or every open stream's client socket cut (a dropped connection).
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FaultProxy {
  readonly url: string;
  /** The next request `match` accepts reaches the service, but its answer is lost (socket destroyed). */
  loseNextAnswer(match: (method: string, path: string) => boolean): void;
  /** The next SSE frame `match` accepts is not passed on. */
  dropNextFrame(match: (frame: string) => boolean): void;
  /** Destroys the client socket of every stream open now; returns how many. */
  cutStreams(): number;
  /** Requests seen, as "METHOD /path". */
  readonly seen: string[];
  /** SSE frames left out so far. */
  dropped(): number;
  close(): Promise<void>;
}

export async function faultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  let lose: ((method: string, path: string) => boolean) | null = null;
  let drop: ((frame: string) => boolean) | null = null;
  const streams = new Set<Socket>();
  const seen: string[] = [];
  let dropped = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    seen.push(`${req.method} ${path.split('?')[0]}`);
    const losing = lose !== null && lose(req.method ?? 'GET', path.split('?')[0]!);
    if (losing) lose = null;
    const headers = { ...req.headers, host: target.host };
    const up = request({ host: target.hostname, port: target.port, method: req.method, path, headers }, (upRes) => {
      const isStream = (upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
      if (losing) {
        upRes.resume();
        upRes.on('end', () => req.socket.destroy());
        return;
      }
      const { 'transfer-encoding': _te, 'content-length': _cl, connection: _c, ...rest } = upRes.headers;
      res.writeHead(upRes.statusCode ?? 502, rest);
      if (!isStream) {
        upRes.pipe(res);
        return;
      }
      const socket = req.socket;
      streams.add(socket);
      socket.on('close', () => {
        streams.delete(socket);
        upRes.destroy();
      });
      let buffered = '';
      upRes.setEncoding('utf8');
      upRes.on('data', (text: string) => {
        buffered += text;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const frame = buffered.slice(0, end + 2);
          buffered = buffered.slice(end + 2);
          if (drop !== null && drop(frame)) {
            drop = null;
            dropped++;
            continue;
          }
          res.write(frame);
        }
      });
      upRes.on('end', () => res.end());
      upRes.on('error', () => socket.destroy());
    });
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    dropped: () => dropped,
    loseNextAnswer(match) {
      lose = match;
    },
    dropNextFrame(match) {
      drop = match;
    },
    cutStreams() {
      const n = streams.size;
      for (const s of streams) s.destroy();
      return n;
    },
    async close() {
      for (const s of streams) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
