/**
 * The signed-in trader's perp side, live: resting orders (GET /perps/orders/open), positions valued
 * at the mark (GET /perps/positions: entry, mark, unrealised PnL, liquidation price, leverage) and
 * the margin view (GET /perps/balances), plus the perps bucket from the balances stream.
 *
 * What triggers a read: the private streams — GET /perps/stream/user (every fill and position change
 * of the account, on every perp and future market) and GET /portfolio/balances/stream (the buckets) —
 * each of their messages makes the lists read again at once; the trader's own actions call
 * `refresh()`; and, because no stream carries the mark-dependent figures (unrealised PnL, liquidation
 * price, equity move with the mark) nor an order the venue cancels without a fill, a read every 3 s.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ExchangeClient, ResponseOf } from '../../../../sdk/src/index.ts';
import { reportError } from '../../lib/notify.ts';
import { useStream } from '../../lib/use-stream.ts';

export type PerpOrder = ResponseOf<'/perps/orders/open', 'get'>[number];
export type PerpPosition = ResponseOf<'/perps/positions', 'get'>[number];
export type PerpMargin = ResponseOf<'/perps/balances', 'get'>;
export interface Bucket {
  readonly available: string;
  readonly locked: string;
  readonly total: string;
}

export interface PerpAccount {
  readonly orders: readonly PerpOrder[] | null;
  readonly positions: readonly PerpPosition[] | null;
  readonly margin: PerpMargin | null;
  readonly bucket: Bucket | null;
  readonly refresh: () => void;
}

const POLL_MS = 3_000;

export function usePerpAccount(client: ExchangeClient | null): PerpAccount {
  const [orders, setOrders] = useState<readonly PerpOrder[] | null>(null);
  const [positions, setPositions] = useState<readonly PerpPosition[] | null>(null);
  const [margin, setMargin] = useState<PerpMargin | null>(null);
  const [bucket, setBucket] = useState<Bucket | null>(null);
  const reader = useRef<() => void>(() => undefined);

  useEffect(() => {
    setOrders(null);
    setPositions(null);
    setMargin(null);
    setBucket(null);
    if (client === null) {
      reader.current = () => undefined;
      return undefined;
    }
    let stopped = false;
    let failing = false;
    let running = false;
    let again = false;
    const read = async () => {
      if (running) {
        again = true; // one more read after this one: what triggered it may have come after its answers
        return;
      }
      running = true;
      try {
        const [o, p, m] = await Promise.all([client.get('/perps/orders/open'), client.get('/perps/positions'), client.get('/perps/balances')]);
        if (stopped) return;
        setOrders(o);
        setPositions(p);
        setMargin(m);
        failing = false;
      } catch (e) {
        if (!failing && !stopped) reportError(e, 'reading your orders and positions');
        failing = true;
      } finally {
        running = false;
        if (again && !stopped) {
          again = false;
          void read();
        }
      }
    };
    reader.current = () => void read();
    void read();
    const timer = setInterval(read, POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client]);

  useStream(client, 'your perp fills and positions', '/perps/stream/user', { query: { openOnly: true } }, (event) => {
    if (event.kind !== 'snapshot') reader.current();
  }, 'user');
  useStream(client, 'your balances', '/portfolio/balances/stream', {}, (event) => {
    setBucket(event.message.payload.perps);
    if (event.kind !== 'snapshot') reader.current();
  }, 'balances');

  return { orders, positions, margin, bucket, refresh: () => reader.current() };
}
