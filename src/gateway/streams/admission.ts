/**
 * Stream admission: connection caps checked before a stream opens (research/reliability.md 5.4
 * and 7.9 "N parallel streams per account capped").
 *
 *   global       SSE_MAX_CONNECTIONS  -> 503 UNAVAILABLE: the server is full, which is not the
 *                                        client's doing; retry with backoff (another instance may
 *                                        have room)
 *   per IP       SSE_MAX_PER_IP       -> 429 RATE_LIMITED: every stream, public or private, counts
 *                                        against the peer address (req.ip, so TRUST_PROXY applies)
 *   per account  SSE_MAX_PER_ACCOUNT  -> 429 RATE_LIMITED: private streams count against the
 *                                        authenticated account, across all its sessions and keys
 *   per account  SSE_MAX_OPTION_STREAMS_PER_ACCOUNT -> 429 RATE_LIMITED: option instrument streams
 *                                        (one instrument per connection by contract) have a budget
 *                                        of their own, so that a market maker can follow a whole
 *                                        chain without giving up its private streams
 *
 * A slot is taken when the stream is admitted and given back exactly once when it closes.
 * Tested by test/streams/streams-limits.test.ts (caps over HTTP) and test/streams/sse.test.ts.
 */
import { apiError, type ApiError } from '../errors.ts';

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
    if ((this.perIp.get(ip) ?? 0) >= s.maxPerIp) {
      return apiError('RATE_LIMITED', `at most ${s.maxPerIp} open streams per IP address`);
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
