/**
 * The trader's side of the trading screen, live (use-perp-account.ts): the perps bucket and margin,
 * positions (entry, mark, unrealised PnL, liquidation price, leverage, as GET /perps/positions values
 * them) each with a close button (POST /perps/positions/close: a reduce-only market order), and resting
 * orders with cancel (POST /perps/orders/{id}/cancel) and amend (POST /perps/orders/{id}/modify: one
 * atomic step, the order keeps its id; a refused amend leaves it as it was and says why). Signed out,
 * each panel says to sign in.
 */
import { useState } from 'preact/hooks';
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { dateTime, num, tone } from '../../lib/format.ts';
import { notify, reportError } from '../../lib/notify.ts';
import type { PerpAccount, PerpOrder, PerpPosition } from './use-perp-account.ts';

interface PanelProps {
  readonly client: ExchangeClient | null;
  readonly account: PerpAccount;
}

export function MarginSummary(props: PanelProps) {
  const { bucket, margin } = props.account;
  if (props.client === null) return null;
  return (
    <dl class="margin-summary" data-testid="perps-balance" aria-label="Perps bucket">
      <div><dt>Perps bucket</dt><dd class="num">{num(bucket?.total ?? margin?.balance)} USDC</dd></div>
      <div><dt>Cross equity</dt><dd class="num">{num(margin?.equity)}</dd></div>
      <div><dt>Cross unrealised PnL</dt><dd class={`num ${tone(margin?.unrealizedPnl)}`}>{num(margin?.unrealizedPnl)}</dd></div>
      <div><dt>Isolated margin</dt><dd class="num">{num(margin?.isolatedMargin)}</dd></div>
      <div><dt>Available margin</dt><dd class="num">{num(margin?.availableMargin)}</dd></div>
      <div><dt>Order margin</dt><dd class="num">{num(margin?.orderMargin)}</dd></div>
      <div><dt>Margin ratio</dt><dd class="num">{num(margin?.marginRatio)}</dd></div>
    </dl>
  );
}

export function Positions(props: PanelProps) {
  const list = props.account.positions;
  return (
    <section class="panel" aria-label="Positions">
      <h2>Positions {list !== null && `(${list.length})`}</h2>
      {props.client === null ? <SignInNote what="your positions" /> : list === null ? <p class="muted">loading…</p> : list.length === 0 ? <p class="muted">No open position.</p> : (
        <div class="table-scroll">
          <table class="grid" data-testid="positions">
            <thead>
              <tr>
                <th>Market</th><th>Side</th><th class="num">Size</th><th class="num">Entry</th><th class="num">Mark</th>
                <th class="num">Unrealised PnL</th><th class="num">Liq. price</th><th class="num">Leverage</th><th class="num">Margin</th>
                <th class="num">Realised</th><th class="num">Funding</th><th><span class="visually-hidden">Action</span></th>
              </tr>
            </thead>
            <tbody>{list.map((p) => <PositionRow key={p.id} position={p} {...props} />)}</tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function PositionRow(props: PanelProps & { position: PerpPosition }) {
  const p = props.position;
  const [closing, setClosing] = useState(false);
  const close = async () => {
    if (props.client === null) return;
    setClosing(true);
    try {
      const order = await props.client.closePosition({ marketId: p.marketId, marginMode: p.marginMode });
      notify('ok', `closing ${p.marketId} (${p.marginMode}): ${order.side} ${num(order.filledQuantity)} of ${num(order.quantity)} at ${num(order.avgFillPrice)}, ${order.status}`);
      props.account.refresh();
    } catch (e) {
      reportError(e, `closing the ${p.marketId} position`);
    } finally {
      setClosing(false);
    }
  };
  return (
    <tr data-market={p.marketId} data-testid="position-row">
      <td><span class="strong">{p.marketId}</span> <span class="muted mode">{p.marginMode}</span></td>
      <td class={p.side === 'long' ? 'up' : 'down'}>{p.side}</td>
      <td class="num">{num(p.size)}</td>
      <td class="num" data-testid="position-entry">{num(p.entryPrice)}</td>
      <td class="num" data-testid="position-mark">{num(p.markPrice)}</td>
      <td class={`num ${tone(p.unrealizedPnl)}`} data-testid="position-upnl">{num(p.unrealizedPnl)}</td>
      <td class="num warn" data-testid="position-liq">{num(p.liquidationPrice)}</td>
      <td class="num">{p.leverage === null ? '—' : `${num(p.leverage)}×`}</td>
      <td class="num">{num(p.margin)}</td>
      <td class={`num ${tone(p.realizedPnl)}`}>{num(p.realizedPnl)}</td>
      <td class={`num ${tone(p.funding)}`}>{num(p.funding)}</td>
      <td>
        <button type="button" class="small ghost" disabled={closing} onClick={close} aria-label={`Close the ${p.marketId} ${p.marginMode} position at market`}>
          {closing ? 'Closing…' : 'Close'}
        </button>
      </td>
    </tr>
  );
}

export function OpenOrders(props: PanelProps) {
  const list = props.account.orders;
  return (
    <section class="panel" aria-label="Open orders">
      <h2>Open orders {list !== null && `(${list.length})`}</h2>
      {props.client === null ? <SignInNote what="your open orders" /> : list === null ? <p class="muted">loading…</p> : list.length === 0 ? <p class="muted">No open order.</p> : (
        <div class="table-scroll">
          <table class="grid" data-testid="open-orders">
            <thead>
              <tr>
                <th>Market</th><th>Side</th><th>Type</th><th class="num">Price</th><th class="num">Size</th><th class="num">Filled</th>
                <th>TIF</th><th>Flags</th><th class="num">TP / SL</th><th>Placed (UTC)</th><th><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>{list.map((o) => <OrderRow key={o.id} order={o} {...props} />)}</tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function OrderRow(props: PanelProps & { order: PerpOrder }) {
  const o = props.order;
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const cancel = async () => {
    if (props.client === null) return;
    setBusy(true);
    try {
      await props.client.cancelOrder(o.id, 'perps');
      notify('ok', `cancelled ${o.side} ${num(o.remainingQuantity)} ${o.marketId} at ${num(o.price)}`);
      props.account.refresh();
    } catch (e) {
      reportError(e, 'cancelling the order');
    } finally {
      setBusy(false);
    }
  };
  const mode = o.leverage === null ? o.marginMode : `${o.marginMode} ${num(o.leverage)}×`;
  const flags = [o.postOnly && 'post-only', o.reduceOnly && 'reduce-only', mode, o.status === 'untriggered' && `stop ${o.stopPrice}`].filter(Boolean).join(', ');
  return (
    <tr data-order={o.id} data-testid="order-row">
      <td class="strong">{o.marketId}</td>
      <td class={o.side === 'buy' ? 'up' : 'down'}>{o.side}</td>
      <td>{o.type}</td>
      {editing && props.client !== null ? (
        <AmendCells order={o} client={props.client} done={() => { setEditing(false); props.account.refresh(); }} />
      ) : (
        <>
          <td class="num" data-testid="order-price">{num(o.price)}</td>
          <td class="num" data-testid="order-size">{num(o.quantity)}</td>
          <td class="num">{num(o.filledQuantity)}</td>
          <td>{o.timeInForce}</td>
          <td class="muted">{flags}</td>
          <td class="num">{num(o.takeProfitPrice)} / {num(o.stopLossPrice)}</td>
          <td class="num muted">{dateTime(o.createdAt)}</td>
          <td class="actions">
            {o.status === 'open' && <button type="button" class="small ghost" disabled={busy} onClick={() => setEditing(true)} aria-label={`Amend the ${o.side} order at ${o.price ?? 'market'}`}>Amend</button>}
            <button type="button" class="small ghost" disabled={busy} onClick={cancel} aria-label={`Cancel the ${o.side} order at ${o.price ?? 'market'}`}>Cancel</button>
          </td>
        </>
      )}
    </tr>
  );
}

/**
 * The amend form in place of the row's figures: a new price and a new total size (what has filled
 * included, as the venue counts it), sent as one amend.
 */
function AmendCells(props: { order: PerpOrder; client: ExchangeClient; done: () => void }) {
  const o = props.order;
  const [price, setPrice] = useState(o.price ?? '');
  const [quantity, setQuantity] = useState(o.quantity);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      if (await amend(props.client, o, price.trim(), quantity.trim())) props.done();
    } finally {
      setBusy(false);
    }
  };
  return (
    <td colSpan={8}>
      <form class="amend" onSubmit={submit} aria-label="Amend the order" data-testid="amend-form">
        {o.type === 'limit' && <label>New price<input name="amendPrice" inputMode="decimal" value={price} onInput={(e) => setPrice(e.currentTarget.value)} /></label>}
        <label>New total size<input name="amendSize" inputMode="decimal" value={quantity} onInput={(e) => setQuantity(e.currentTarget.value)} /></label>
        <button type="submit" class="small" disabled={busy}>{busy ? 'Amending…' : 'Amend order'}</button>
        <button type="button" class="small ghost" onClick={props.done}>Keep as is</button>
        <span class="muted hint">same order id; a smaller size at the same price keeps its place in the queue</span>
      </form>
    </td>
  );
}

/** Sends only what changed; true once the venue accepted the amend (a refusal is reported and the order stands). */
async function amend(client: ExchangeClient, o: PerpOrder, price: string, quantity: string): Promise<boolean> {
  const change = {
    ...(o.type === 'limit' && price !== o.price ? { price } : {}),
    ...(quantity !== o.quantity ? { quantity } : {}),
  };
  if (Object.keys(change).length === 0) return true;
  try {
    const amended = await client.amendOrder(o.id, change, 'perps');
    notify('ok', `amended: ${amended.side} ${num(amended.quantity)} ${amended.marketId} at ${num(amended.price)}, ${amended.status}`);
    return true;
  } catch (e) {
    reportError(e, 'amending the order (it stands unchanged)');
    return false;
  }
}

function SignInNote(props: { what: string }) {
  return <p class="muted" data-testid="sign-in-note">Sign in (top right) to see {props.what}.</p>;
}
