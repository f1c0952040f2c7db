/**
 * Stream admission: connection caps checked before a stream opens (research/reliability.md 5.4
 * and 7.9 "N parallel streams per account capped").
 *
 *   global       SSE_MAX_CONNECTIONS  -> 503 UNAVAILABLE: the server is full, which is not the
 *                                        client's doing; retry with backoff (another instance may
 *                                        have room)
 *   per IP       SSE_MAX_PER_IP       -> 429 RATE_LIMITED: every stream, public or private, counts
 *                                        against the peer address (req.ip, so TRUST_PROXY applies;
 *                                        an IPv6 peer by its /64)
 *   fair share   past 80 % of SSE_MAX_CONNECTIONS -> 429 RATE_LIMITED: an address's ceiling falls
 *                                        from SSE_MAX_PER_IP with the square of the room left
 *                                        (fair-share.ts): a quarter of it halfway from 80 % to the
 *                                        cap, 1 for the last slots
 *   per account  SSE_MAX_PER_ACCOUNT  -> 429 RATE_LIMITED: private streams count against the
 *                                        authenticated account, across all its sessions and keys
 *   per account  SSE_MAX_OPTION_STREAMS_PER_ACCOUNT -> 429 RATE_LIMITED: option instrument streams
 *                                        (one instrument per connection by contract) have a budget
 *                                        of their own, so that a market maker can follow a whole
 *                                        chain without giving up its private streams
 *
 * The fair share keeps a few addresses from locking everyone out: under SSE_MAX_PER_IP alone, 17
 * addresses fill the default 10,000 streams and every other client gets 503. The last 20 % goes to
 * addresses holding few streams: one holding none is admitted until the cap itself, one holding many
 * is refused first, and filling the cap at the defaults takes about 160 addresses. Streams already
 * open are never closed by it.
 *
 * A slot is taken when the stream is admitted and given back exactly once when it closes.
 * Tested by test/streams/streams-limits.test.ts (caps over HTTP), test/streams/streams-fair-share.test.ts
 * (the fair share, over HTTP from several loopback addresses) and test/streams/sse.test.ts.
 */
import { apiError, type ApiError } from '../errors.ts';
import { addressCeiling } from '../fair-share.ts';

export interface CapSettings {
  readonly maxConnections: number;
  readonly maxPerIp: number;
  readonly maxPerAccount: number;
  readonly maxOptionStreamsPerAccount: number;
}

/** Which per-account budget an authenticated stream counts against. */
export type AccountBudget = 'private' | 'options';

export class ConnectionCaps {
  private total = 0;
  private readonly perIp = new Map<string, number>();
  private readonly perAccount = { private: new Map<string, number>(), options: new Map<string, number>() };

  constructor(private readonly settings: CapSettings) {}

  /** Takes a slot, or returns the refusal to send instead of a stream. */
  admit(ip: string, account: string | null, budget: AccountBudget = 'private'): { release: () => void } | ApiError {
    const s = this.settings;
    if (this.total >= s.maxConnections) {
      const message = `the server holds its maximum of ${s.maxConnections} streams; retry later`;
      return apiError('UNAVAILABLE', message);
    }
    const held = this.perIp.get(ip) ?? 0;
    if (held >= s.maxPerIp) {
      return apiError('RATE_LIMITED', `at most ${s.maxPerIp} open streams per IP address`);
    }
    const ceiling = addressCeiling(s.maxPerIp, this.total, s.maxConnections);
    if (held >= ceiling) {
      const message = `the server holds ${this.total} of its ${s.maxConnections} streams: while it is this full, an IP address may hold at most ${ceiling}; retry later`;
      return apiError('RATE_LIMITED', message);
    }
    const perAccount = this.perAccount[budget];
    const accountMax = budget === 'private' ? s.maxPerAccount : s.maxOptionStreamsPerAccount;
    if (account !== null && (perAccount.get(account) ?? 0) >= accountMax) {
      const what = budget === 'private' ? 'private streams' : 'option instrument streams';
      return apiError('RATE_LIMITED', `at most ${accountMax} open ${what} per account`);
    }
    this.total++;
    bump(this.perIp, ip, 1);
    if (account !== null) bump(perAccount, account, 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        bump(this.perIp, ip, -1);
        if (account !== null) bump(perAccount, account, -1);
      },
    };
  }

  count(): number {
    return this.total;
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const next = (map.get(key) ?? 0) + by;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}
