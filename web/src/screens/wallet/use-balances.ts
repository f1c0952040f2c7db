/**
 * The signed-in account's four buckets, live: GET /portfolio/balances/stream (a snapshot, then the
 * whole payload again whenever a figure changed, coalesced every 250 ms). `revision` counts the
 * frames: panels that read what the stream does not carry (asset rows, history, open orders)
 * read again when it moves (useOnRevision), since every ledger entry, order hold and settlement
 * moves a bucket.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ExchangeClient, StreamMessage } from '../../../../sdk/src/index.ts';
import { useStream } from '../../lib/use-stream.ts';

export type Buckets = StreamMessage<'/portfolio/balances/stream'>['payload'];
export type BucketName = 'wallet' | 'perps' | 'options' | 'spot';

export const BUCKETS: readonly { readonly id: BucketName; readonly label: string; readonly holds: string }[] = [
  { id: 'wallet', label: 'Wallet', holds: 'deposits land here, withdrawals leave from here' },
  { id: 'perps', label: 'Perps & futures', holds: 'collateral of perpetual and dated future positions' },
  { id: 'options', label: 'Options', holds: 'premium and margin of options' },
  { id: 'spot', label: 'Spot', holds: 'USDC for spot pairs' },
];

export interface LiveBalances {
  readonly buckets: Buckets | null;
  readonly revision: number;
}

export function useLiveBalances(client: ExchangeClient | null, address: string): LiveBalances {
  const [live, setLive] = useState<LiveBalances>({ buckets: null, revision: 0 });
  useEffect(() => setLive({ buckets: null, revision: 0 }), [address]);
  useStream(client, 'balances', '/portfolio/balances/stream', {}, (event) => {
    setLive((before) => ({ buckets: event.message.payload, revision: before.revision + 1 }));
  }, address);
  return live;
}

/**
 * Calls `read` when `revision` moves, at most once every `gapMs`: a stream that moves every 250 ms
 * (margin in use follows the mark) does not turn into a request every 250 ms, and the last move
 * is never lost.
 */
export function useOnRevision(revision: number, read: () => void, gapMs = 1_000): void {
  const last = useRef(0);
  const reader = useRef(read);
  reader.current = read;
  useEffect(() => {
    if (revision <= 1) return undefined; // the first snapshot: the panel's own first read is under way
    const fire = () => {
      last.current = Date.now();
      reader.current();
    };
    const wait = last.current + gapMs - Date.now();
    if (wait <= 0) {
      fire();
      return undefined;
    }
    const timer = setTimeout(fire, wait);
    return () => clearTimeout(timer);
  }, [revision]);
}
