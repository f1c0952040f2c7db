/**
 * The account's options side: the options bucket (balance, what resting buys reserve, the initial
 * margin of the shorts, what is available, unrealised PnL, net delta and vega per underlying), the
 * option positions valued at the mark (with a Close that fills the ticket with the opposite side,
 * immediate and reduce-only), and the open option orders with Cancel (POST /options/orders/{id}/cancel).
 * Every figure is the API's (GET /portfolio/me, GET /options/orders/open).
 */
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { useState } from 'preact/hooks';
import { dateTime, num, tone } from '../../lib/format.ts';
import { notify, reportError } from '../../lib/notify.ts';
import type { OpenOrder, OptionAccount, OptionPosition } from './use-option-account.ts';

const OPTION_ID = /-\d+(\.\d+)?-[CP]$/;

interface AccountProps {
  readonly client: ExchangeClient | null;
  readonly account: OptionAccount;
  readonly onClose: (position: OptionPosition) => void;
}

export function OptionAccountPanel(props: AccountProps) {
  if (props.client === null) {
    return (
      <section class="panel opt-account" aria-label="Option positions and orders">
        <h2>Positions and orders</h2>
        <p class="muted">Sign in (top right) to see your option positions and open orders. Fund the options bucket from the <a href="#/wallet">wallet</a>.</p>
      </section>
    );
  }
  const f = props.account.funds;
  const positions = (f?.positions ?? []).filter((p) => p.status === 'open');
  const orders = (props.account.orders ?? []).filter((o) => OPTION_ID.test(o.marketId));
  return (
    <section class="panel opt-account" aria-label="Option positions and orders">
      <h2>Options bucket</h2>
      <dl class="opt-funds" data-testid="option-funds">
        <dt>Balance</dt><dd class="num">{num(f?.balance)}</dd>
        <dt>Available</dt><dd class="num">{num(f?.available)}</dd>
        <dt>Reserved by buys</dt><dd class="num">{num(f?.reserved)}</dd>
        <dt>Initial margin</dt><dd class="num">{num(f?.initialMargin)}</dd>
        <dt>Unrealised PnL</dt><dd class={`num ${tone(f?.unrealizedPnl)}`}>{num(f?.unrealizedPnl)}</dd>
        {(f?.greeks ?? []).flatMap((g) => [
          <dt key={`${g.underlying}-name`}>{g.underlying} Δ / vega</dt>,
          <dd key={`${g.underlying}-value`} class="num">{num(g.delta, 4)} / {num(g.vega, 2)}</dd>,
        ])}
      </dl>
      {f !== null && f.balance === '0' && <p class="muted opt-small">The options bucket is empty: move USDC to it in the <a href="#/wallet">wallet</a>.</p>}
      <h3>Positions</h3>
      <Positions positions={positions} onClose={props.onClose} />
      <h3>Open orders</h3>
      <Orders client={props.client} orders={orders} refresh={props.account.refresh} />
    </section>
  );
}

function Positions(props: { positions: readonly OptionPosition[]; onClose: (p: OptionPosition) => void }) {
  if (props.positions.length === 0) return <p class="muted" data-testid="option-positions">No open option position.</p>;
  return (
    <div class="table-scroll">
      <table class="grid" data-testid="option-positions">
        <thead>
          <tr>
            <th>Instrument</th><th>Side</th><th class="num">Size</th><th class="num">Entry</th><th class="num">Mark</th>
            <th class="num">Unrealised PnL</th><th class="num">Δ</th><th class="num">Vega</th><th class="num">Initial margin</th><th />
          </tr>
        </thead>
        <tbody>
          {props.positions.map((p) => (
            <tr key={p.id} data-market={p.marketId}>
              <td class="mono">{p.marketId}</td>
              <td class={p.side === 'long' ? 'up' : 'down'}>{p.side}</td>
              <td class="num">{num(p.size)}</td>
              <td class="num">{num(p.entryPrice)}</td>
              <td class="num">{num(p.markPrice)}</td>
              <td class={`num ${tone(p.unrealizedPnl)}`}>{num(p.unrealizedPnl)}</td>
              <td class="num">{num(p.delta, 4)}</td>
              <td class="num">{num(p.vega, 2)}</td>
              <td class="num">{num(p.initialMargin)}</td>
              <td><button type="button" class="ghost small" onClick={() => props.onClose(p)} aria-label={`Close ${p.marketId}: fill the ticket`}>Close…</button></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Orders(props: { client: ExchangeClient; orders: readonly OpenOrder[]; refresh: () => void }) {
  const [cancelling, setCancelling] = useState<ReadonlySet<string>>(new Set());
  if (props.orders.length === 0) return <p class="muted" data-testid="option-orders">No open option order.</p>;
  const cancel = async (o: OpenOrder) => {
    setCancelling((s) => new Set(s).add(o.id));
    try {
      const r = await props.client.post('/options/orders/{id}/cancel', { params: { id: o.id }, body: {} }, { idempotent: true });
      notify('ok', `${r.marketId} order ${r.id}: ${r.status}`);
      props.refresh();
    } catch (e) {
      reportError(e, `cancelling the ${o.marketId} order ${o.id}`);
    } finally {
      setCancelling((s) => new Set([...s].filter((id) => id !== o.id)));
    }
  };
  return (
    <div class="table-scroll">
      <table class="grid" data-testid="option-orders">
        <thead>
          <tr><th>Instrument</th><th>Side</th><th class="num">Price</th><th class="num">Quantity</th><th class="num">Filled</th><th>TIF</th><th>Placed (UTC)</th><th /></tr>
        </thead>
        <tbody>
          {props.orders.map((o) => (
            <tr key={o.id} data-order={o.id}>
              <td class="mono">{o.marketId}</td>
              <td class={o.side === 'buy' ? 'up' : 'down'}>{o.side}{o.postOnly ? ' · post-only' : ''}</td>
              <td class="num">{num(o.price)}</td>
              <td class="num">{num(o.quantity)}</td>
              <td class="num">{num(o.filledQuantity)}</td>
              <td>{o.timeInForce.toUpperCase()}</td>
              <td class="num">{dateTime(o.createdAt)}</td>
              <td><button type="button" class="ghost small" disabled={cancelling.has(o.id)} onClick={() => void cancel(o)} aria-label={`Cancel the ${o.side} order for ${o.marketId} at ${o.price ?? 'market'}`}>Cancel</button></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
