/**
 * Open TCP connections, in all and per client address, counted as the server accepts them so that
 * one address cannot hold the server's sockets (docs/architecture.md "Limits").
 *
 *   in all       MAX_CONNECTIONS         the server's own `maxConnections`: a connection over it is
 *                                        closed by Node before any JavaScript runs for it
 *   per address  MAX_CONNECTIONS_PER_IP  counted on the 'connection' event by the peer's network
 *                                        (an IPv6 peer by its /64: client-network.ts); past 80 % of
 *                                        MAX_CONNECTIONS the ceiling falls with the room left
 *                                        (fair-share.ts), so the last connections go to addresses
 *                                        holding few
 *
 * A connection over a cap is reset at once (RST: no answer, no TIME_WAIT kept for it); there is no
 * request on it yet to answer. Refusals are logged as a warning at most once a minute, with their
 * count.
 *
 * A peer listed in TRUST_PROXY carries many clients on its connections: the per-address cap and the
 * fair share do not apply to it (only MAX_CONNECTIONS does), and the proxy is expected to limit its
 * own clients' connections. The per-address caps of everything above TCP (rate limits, stream
 * slots) count the forwarded client address instead (req.ip).
 *
 * How long a connection may take to send its request is the server's header and request timeouts
 * (app.ts SERVER_LIMITS). Tested by test/api/connection-limits.test.ts.
 */
import type { Server } from 'node:http';
import { BlockList, isIP, type Socket } from 'node:net';
import { clientNetwork, normaliseIp } from './client-network.ts';
import { addressCeiling } from './fair-share.ts';

export interface ConnectionLimitSettings {
  /** Open TCP connections in all. */
  readonly maxTotal: number;
  /** Open TCP connections per client address (IPv6: per /64), TRUST_PROXY peers excepted. */
  readonly maxPerAddress: number;
}

export interface ConnectionStats {
  readonly open: number;
  /** Connections refused since start: over the per-address cap, over the fair share, over the total. */
  readonly refused: { readonly perAddress: number; readonly fairShare: number; readonly total: number };
}

type Log = (message: string, detail: Record<string, unknown>) => void;
type Refusal = keyof ConnectionStats['refused'];

const LOG_EVERY_MS = 60_000;

export class ConnectionLimiter {
  private open = 0;
  private readonly perAddress = new Map<string, number>();
  private readonly refused: Record<Refusal, number> = { perAddress: 0, fairShare: 0, total: 0 };
  private readonly isProxy: (peer: string) => boolean;
  private lastLogAt = -Infinity;
  private refusedSinceLog = 0;

  constructor(
    private readonly settings: ConnectionLimitSettings,
    trustProxy: readonly string[],
    private readonly log: Log,
  ) {
    this.isProxy = proxyMatcher(trustProxy);
  }

  /** Sets the server's total cap and counts every connection it accepts from now on. */
  attach(server: Server): void {
    server.maxConnections = this.settings.maxTotal;
    server.on('drop', () => this.refuse('total', null));
    server.on('connection', (socket: Socket) => this.accept(socket));
  }

  /** Counts an accepted connection until it closes, or resets it when its address is over its cap. */
  accept(socket: Socket): void {
    const peer = socket.remoteAddress;
    if (peer === undefined || socket.destroyed) return; // already gone
    const key = this.isProxy(peer) ? null : clientNetwork(peer);
    if (this.open >= this.settings.maxTotal) {
      this.reset(socket, 'total', key);
      return;
    }
    if (key !== null) {
      const held = this.perAddress.get(key) ?? 0;
      if (held >= this.settings.maxPerAddress) {
        this.reset(socket, 'perAddress', key);
        return;
      }
      if (held >= addressCeiling(this.settings.maxPerAddress, this.open, this.settings.maxTotal)) {
        this.reset(socket, 'fairShare', key);
        return;
      }
      this.perAddress.set(key, held + 1);
    }
    this.open++;
    socket.once('close', () => {
      this.open--;
      if (key === null) return;
      const held = (this.perAddress.get(key) ?? 1) - 1;
      if (held <= 0) this.perAddress.delete(key);
      else this.perAddress.set(key, held);
    });
  }

  stats(): ConnectionStats {
    return { open: this.open, refused: { ...this.refused } };
  }

  private reset(socket: Socket, why: Refusal, key: string | null): void {
    socket.resetAndDestroy();
    this.refuse(why, key);
  }

  private refuse(why: Refusal, key: string | null): void {
    this.refused[why]++;
    this.refusedSinceLog++;
    const now = performance.now();
    if (now - this.lastLogAt < LOG_EVERY_MS) return;
    this.lastLogAt = now;
    const { maxTotal, maxPerAddress } = this.settings;
    this.log('TCP connections refused (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_IP)', {
      refused: this.refusedSinceLog, last: { why, address: key }, open: this.open, maxTotal, maxPerAddress,
    });
    this.refusedSinceLog = 0;
  }
}

/** The address ranges proxy-addr (Fastify's trustProxy) knows by name. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/**
 * Whether a peer is one of the TRUST_PROXY entries, read as Fastify's trustProxy reads them: an
 * address, `address/prefix`, `address/netmask` or a range name. An entry that is none of these
 * matches nothing here (Fastify refuses it at start).
 */
export function proxyMatcher(entries: readonly string[]): (peer: string) => boolean {
  const ranges = entries.flatMap((e) => NAMED_RANGES[e.toLowerCase()] ?? [e]);
  if (ranges.length === 0) return () => false;
  const list = new BlockList();
  for (const range of ranges) {
    const [raw = '', bits] = range.split('/');
    const address = normaliseIp(raw);
    const family = isIP(address) === 6 ? 'ipv6' : isIP(address) === 4 ? 'ipv4' : null;
    if (family === null) continue;
    if (bits === undefined) {
      list.addAddress(address, family);
      continue;
    }
    const prefix = /^\d+$/.test(bits) ? Number(bits) : family === 'ipv4' ? netmaskBits(bits) : null;
    if (prefix === null || prefix > (family === 'ipv4' ? 32 : 128)) continue;
    list.addSubnet(address, prefix, family);
  }
  return (peer) => {
    const address = normaliseIp(peer);
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4');
  };
}

/** The prefix length of a dotted IPv4 netmask (255.255.255.0 -> 24), or null when it is not one. */
function netmaskBits(mask: string): number | null {
  if (isIP(mask) !== 4) return null;
  const value = mask.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  const bits = value.toString(2).padStart(32, '0');
  return /^1*0*$/.test(bits) ? bits.indexOf('0') === -1 ? 32 : bits.indexOf('0') : null;
}
