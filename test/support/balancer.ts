/**
 * A round-robin HTTP load balancer on loopback, in front of a cluster's gateways for the API suite
 * run against the distributed mode (test/support/cluster-target.ts): each request goes to the next
 * gateway in turn, so a client's write and its next read land on different gateways and the suite
 * checks read-your-writes across them. A response streams through as it arrives, so an SSE stream
 * stays on the gateway that opened it for its lifetime; closing either side closes the other.
 *
 * Headers pass through unchanged (hop-by-hop ones excepted) and no X-Forwarded-For is added: the
 * gateways see every client as the balancer's 127.0.0.1, which is what a test client on loopback
 * is to the embedded service, and a test that sends its own X-Forwarded-For to a service with
 * TRUST_PROXY=127.0.0.1 is believed by the gateway exactly as by that service.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Headers of one connection, not of the message (RFC 9110 §7.6.1): never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);

function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

export class RoundRobinBalancer {
  private next = 0;
  private readonly agents: http.Agent[];
  /** Requests forwarded to each backend, by index (the tests' evidence that both were used). */
  readonly forwarded: number[];

  private constructor(readonly server: http.Server, private readonly backends: readonly URL[]) {
    this.agents = backends.map(() => new http.Agent({ keepAlive: true }));
    this.forwarded = backends.map(() => 0);
    server.on('request', (req, res) => this.forward(req, res));
  }

  static async start(backends: readonly string[], port = 0): Promise<RoundRobinBalancer> {
    const balancer = new RoundRobinBalancer(http.createServer(), backends.map((b) => new URL(b)));
    await new Promise<void>((resolve, reject) => {
      balancer.server.once('error', reject);
      balancer.server.listen(port, '127.0.0.1', () => resolve());
    });
    return balancer;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const index = this.next++ % this.backends.length;
    this.forwarded[index]!++;
    const backend = this.backends[index]!;
    const upstream = http.request({
      host: backend.hostname,
      port: backend.port,
      method: req.method,
      path: req.url,
      headers: forwardable(req.headers),
      agent: this.agents[index],
    });
    upstream.on('response', (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.statusMessage, forwardable(reply.headers));
      // An event stream's bytes must reach the client as they are written, not when a buffer fills.
      res.flushHeaders();
      reply.pipe(res);
      reply.on('error', () => res.destroy());
    });
    upstream.on('error', (error) => {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'BAD_GATEWAY', message: `gateway ${index}: ${error.message}` }));
      }
    });
    // The client went away (an EventSource closed, a fetch aborted): so does the gateway's request.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    for (const agent of this.agents) agent.destroy();
    await closed;
  }
}
