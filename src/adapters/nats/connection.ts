/**
 * A process's connection to NATS in the distributed mode (docs/architecture.md "Distributed mode:
 * the command bus"). It reconnects for ever, a quarter second apart, so a gateway or a core
 * carries on by itself once a restarted server is back; and it pings every 2 s, two unanswered
 * pings dropping the connection, so a server that vanished without closing the socket (a host
 * lost, a partition) is noticed in about 4-6 s rather than at the operating system's TCP timeout.
 * A token or a user and password authenticate it, and TLS (with the CA that signed the server's
 * certificate, and a client certificate when the server verifies clients) protects it on the wire.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';

export type { NatsConnection };

export interface NatsConnectOptions {
  /** Keep trying when the server is not up yet at start (default: fail, naming the URL). */
  readonly waitForServer?: boolean;
  /** Credentials and TLS (config/env.ts NatsSecurity; docs/deploy.md). */
  readonly security?: {
    readonly token: string | null;
    readonly user: string | null;
    readonly password: string | null;
    readonly tls: { readonly caFile: string; readonly certFile: string | null; readonly keyFile: string | null } | null;
  };
}

export async function connectNats(url: string, name: string, options: NatsConnectOptions = {}): Promise<NatsConnection> {
  const security = options.security;
  const tls = security?.tls ?? null;
  try {
    return await connect({
      servers: url,
      ...(security !== undefined && security.token !== null ? { token: security.token } : {}),
      ...(security !== undefined && security.user !== null ? { user: security.user, pass: security.password ?? '' } : {}),
      // With a CA the server must present a certificate it signed (and the connection is refused
      // if the server does not speak TLS); the client certificate is sent when the server asks.
      ...(tls !== null ? { tls: { caFile: tls.caFile, ...(tls.certFile !== null ? { certFile: tls.certFile, keyFile: tls.keyFile! } : {}) } } : {}),
      name,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 100,
      pingInterval: 2_000,
      maxPingOut: 2,
      timeout: 5_000,
      waitOnFirstConnect: options.waitForServer ?? false,
    });
  } catch (error) {
    throw new Error(`cannot connect to NATS at ${url}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Closes `connection`: drains it (what is subscribed stops, what was published is flushed) when the
 * server is there, and gives up draining after `timeoutMs` (a dead server would never answer).
 */
export async function closeNats(connection: NatsConnection, timeoutMs = 2_000): Promise<void> {
  if (connection.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  try {
    if (!connection.isDraining()) await Promise.race([connection.drain(), timedOut]);
  } catch {
    // Draining a connection that is reconnecting fails; closing it below is all that is left.
  } finally {
    clearTimeout(timer);
  }
  if (!connection.isClosed()) await connection.close();
}
