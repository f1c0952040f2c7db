/**
 * The network a peer address stands for when counting anonymous clients (rate limits, stream slots
 * per address, the sign-in nonce cap). An IPv4 address is one client; an IPv6 host is normally
 * given a whole /64, so counting each IPv6 address apart would hand one client 2^64 budgets: IPv6
 * peers are counted by their /64 prefix. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4.
 */
import { isIPv6 } from 'node:net';

export function clientNetwork(ip: string): string {
  const address = normaliseIp(ip);
  return isIPv6(address) ? `${prefix64(address)}::/64` : address;
}

/** An IPv4-mapped IPv6 address (as a dual-stack socket reports IPv4 peers) as its IPv4; others unchanged. */
export function normaliseIp(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m === null ? ip : m[1]!;
}

/** The first four groups of an IPv6 address, zero-padded and lower-case (`::` expanded). */
function prefix64(ip: string): string {
  const address = ip.split('%')[0]!; // no zone index
  const [head = '', tail] = address.split('::');
  const groups = head === '' ? [] : head.split(':');
  if (tail !== undefined) {
    const rest = tail === '' ? [] : tail.split(':');
    // an embedded IPv4 tail (::a.b.c.d forms) counts as two groups; only the first four matter here
    const restGroups = rest.length > 0 && rest[rest.length - 1]!.includes('.') ? rest.length + 1 : rest.length;
    while (groups.length + restGroups < 8) groups.push('0');
    groups.push(...rest);
  }
  return groups.slice(0, 4).map((g) => (g.includes('.') ? '0' : g.toLowerCase().padStart(4, '0'))).join(':');
}
