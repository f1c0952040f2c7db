/**
 * The trader's orders on one spot pair: the resting ones (GET /orders/open?marketId) with a cancel
 * button each (POST /orders/{id}/cancel) and a cancel-all for the pair (POST /orders/cancel-all),
 * and the recent ones with their fills (GET /orders/me?marketId). Read every 3 s, at once after
 * an order is placed, and whenever the balances stream moves (a fill or a cancel moves a hold).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ExchangeClient, Order } from '../../../../sdk/src/index.ts';
import { dateTime, num, time } from '../../lib/format.ts';
import { notify } from '../../lib/notify.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useAction } from '../wallet/use-action.ts';
import { useOnRevision } from '../wallet/use-balances.ts';

interface Props {
  readonly client: ExchangeClient | null;
  readonly marketId: string;
  /** The balances stream's frame count. */
  readonly revision: number;
  /** How many orders the ticket placed: a change reads the lists again at once. */
  readonly placed: number;
}

export function SpotOrders(props: Props) {
  const [tab, setTab] = useState<'open' | 'history'>('open');
  return (
    <section class="panel spot-orders" aria-label="Spot orders">
      <div class="spot-panel-head">
        <h2>Orders · {props.marketId}</h2>
        <div class="tabs" role="group" aria-label="Which orders">
          <button type="button" aria-pressed={tab === 'open'} onClick={() => setTab('open')}>Open orders</button>
          <button type="button" aria-pressed={tab === 'history'} onClick={() => setTab('history')}>Order history</button>
        </div>
      </div>
      {props.client === null ? <p class="muted">Sign in to see and cancel your orders.</p>
        : tab === 'open' ? <OpenOrders {...props} client={props.client} /> : <OrderHistory {...props} client={props.client} />}
    </section>
  );
}

/** Reads again when the stream moves or an order was placed. */
function useFreshOn(props: Props, read: () => void): void {
  useOnRevision(props.revision, read, 500);
  useEffect(() => {
    if (props.placed > 0) read();
  }, [props.placed]);
}

function OpenOrders(props: Props & { client: ExchangeClient }) {
  const { client, marketId } = props;
  const [orders, read] = usePoll(() => client.get('/orders/open', { query: { marketId } }), 3_000, `${client.address ?? ''}:${marketId}`);
  useFreshOn(props, read);
  const [busy, run] = useAction();
  const cancel = (o: Order) => run(`cancelling order ${o.id}`, async () => {
    const done = await client.cancelOrder(o.id, 'clob');
    notify('ok', `Order ${done.id} (${done.side} ${num(done.quantity)} at ${num(done.price)}): ${done.status}`);
    read();
  });
  const cancelAll = () => run(`cancelling every order on ${marketId}`, async () => {
    const { cancelled } = await client.post('/orders/cancel-all', { body: { marketId } });
    notify('ok', `${cancelled.length} order${cancelled.length === 1 ? '' : 's'} on ${marketId} cancelled`);
    read();
  });
  if (orders !== null && orders.length === 0) return <p class="muted" data-testid="no-open-orders">No open order on {marketId}.</p>;
  return (
    <>
      <div class="table-scroll">
        <table class="grid" data-testid="spot-open-orders">
          <thead>
            <tr><th>Placed (UTC)</th><th>Side</th><th>Type</th><th class="num">Price</th><th class="num">Filled / quantity</th><th><span class="sr-only">Action</span></th></tr>
          </thead>
          <tbody>
            {(orders ?? []).map((o) => (
              <tr key={o.id} data-order-id={o.id}>
                <td title={dateTime(o.createdAt)}>{placedAt(o.createdAt)}</td>
                <td class={o.side === 'buy' ? 'up' : 'down'}>{o.side}</td>
                <td>{o.type} {o.timeInForce.toUpperCase()}{o.postOnly ? ' · post-only' : ''}</td>
                <td class="num">{num(o.price)}</td>
                <td class="num">{num(o.filledQuantity)} / {num(o.quantity)}</td>
                <td><button type="button" class="ghost small" disabled={busy} onClick={() => cancel(o)} aria-label={`Cancel order ${o.id}`}>Cancel</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {(orders?.length ?? 0) > 1 && (
        <div class="spot-orders-foot">
          <button type="button" class="ghost small" disabled={busy} onClick={cancelAll}>Cancel all on {marketId}</button>
        </div>
      )}
    </>
  );
}

/** The time alone for an order placed today (UTC), the date and time before. */
function placedAt(iso: string): string {
  return iso.slice(0, 10) === new Date().toISOString().slice(0, 10) ? time(iso) : dateTime(iso);
}

function OrderHistory(props: Props & { client: ExchangeClient }) {
  const { client, marketId } = props;
  const [orders, read] = usePoll(() => client.get('/orders/me', { query: { marketId, limit: 20 } }), 5_000, `${client.address ?? ''}:${marketId}`);
  useFreshOn(props, read);
  if (orders !== null && orders.length === 0) return <p class="muted">No order on {marketId} yet.</p>;
  return (
    <div class="table-scroll">
      <table class="grid" data-testid="spot-order-history">
        <thead>
          <tr><th>Placed (UTC)</th><th>Side</th><th>Type</th><th class="num">Price</th><th class="num">Filled / quantity</th><th class="num">Avg price</th><th>Status</th></tr>
        </thead>
        <tbody>
          {(orders ?? []).map((o) => (
            <tr key={o.id}>
              <td>{dateTime(o.createdAt)}</td>
              <td class={o.side === 'buy' ? 'up' : 'down'}>{o.side}</td>
              <td>{o.type}</td>
              <td class="num">{num(o.price)}</td>
              <td class="num">{num(o.filledQuantity)} / {num(o.quantity)}</td>
              <td class="num">{num(o.avgFillPrice)}</td>
              <td title={o.rejectReason ?? ''}>{o.status}{o.rejectReason !== null ? ` (${o.rejectReason})` : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
