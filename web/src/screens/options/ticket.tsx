/**
 * The option ticket: the instrument picked in the chain (a bid picks a sell at the bid, an ask a
 * buy at the ask), buy or sell, limit price, quantity in contracts, time in force, post-only and
 * reduce-only. While the trader types, the API's dry run (POST /options/orders/preview) shows the
 * premium, the fee and its rate, what the order would lock (premium and fee for a buy, the initial
 * margin for a sell) and whether the venue's checks pass; Enter or the button sends it
 * (POST /options/orders, with a fresh clientOrderId so a retry never trades twice). The strings the
 * trader typed are sent as typed; every figure shown comes from the API.
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import { newClientId, type BodyOf, type ExchangeClient, type ResponseOf } from '../../../../sdk/src/index.ts';
import { num } from '../../lib/format.ts';
import { notify, reportError } from '../../lib/notify.ts';
import type { Instrument, OptionRow } from './board.ts';
import type { Pick, Side } from './chain.tsx';
import { usePreview, type PreviewState } from '../../lib/use-preview.ts';

type OrderBody = BodyOf<'/options/orders', 'post'>;
type Preview = ResponseOf<'/options/orders/preview', 'post'>;
type TimeInForce = 'gtc' | 'ioc' | 'fok';

interface Draft {
  side: Side;
  price: string;
  quantity: string;
  timeInForce: TimeInForce;
  postOnly: boolean;
  reduceOnly: boolean;
}

const DECIMAL = /^\d+(\.\d+)?$/;

/** The order the draft stands for, or what is missing. */
function orderBody(marketId: string | null, d: Draft): OrderBody | string {
  if (marketId === null) return 'Pick a bid or an ask in the chain.';
  const price = d.price.trim();
  const quantity = d.quantity.trim();
  if (!DECIMAL.test(price)) return price === '' ? 'Enter a limit price.' : 'The price is a decimal number, e.g. 1250.5.';
  if (!DECIMAL.test(quantity)) return quantity === '' ? 'Enter a quantity.' : 'The quantity is a decimal number of contracts, e.g. 0.1.';
  const body: OrderBody = { marketId, side: d.side, type: 'limit', price, quantity, timeInForce: d.timeInForce };
  if (d.postOnly) body.postOnly = true;
  if (d.reduceOnly) body.reduceOnly = true;
  return body;
}

/**
 * A quote picked in the chain; `n` changes with every pick, so the same quote can be picked twice.
 * `closing` (from a position's Close): the position's size, immediate and reduce-only.
 */
export type TicketPick = Pick & { readonly n: number; readonly quantity?: string; readonly closing?: boolean };

export interface TicketProps {
  readonly client: ExchangeClient | null;
  readonly pick: TicketPick | null;
  /** The picked instrument as the live board shows it now. */
  readonly live: OptionRow | undefined;
  readonly instrument: Instrument | undefined;
  readonly onPlaced: () => void;
}

export function OptionTicket(props: TicketProps) {
  const [draft, setDraft] = useState<Draft>({ side: 'buy', price: '', quantity: '', timeInForce: 'gtc', postOnly: false, reduceOnly: false });
  const [sending, setSending] = useState(false);
  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }));
  // Before paint: the picked instrument and its price show together, never the instrument with an empty price.
  useLayoutEffect(() => {
    const p = props.pick;
    if (p === null) return;
    const quantity = p.quantity ?? (draft.quantity === '' ? (props.instrument?.minSize ?? '') : draft.quantity);
    set(p.closing === true ? { side: p.side, price: p.price, quantity, timeInForce: 'ioc', postOnly: false, reduceOnly: true } : { side: p.side, price: p.price, quantity });
  }, [props.pick?.n]);

  const marketId = props.pick?.option.id ?? null;
  const body = orderBody(marketId, draft);
  const preview = usePreview(props.client, typeof body === 'string' ? null : body, askPreview);
  const send = async (e: Event) => {
    e.preventDefault();
    if (props.client === null || typeof body === 'string' || sending) return;
    setSending(true);
    try {
      const order = await props.client.post('/options/orders', { body: { ...body, clientOrderId: newClientId() } }, { idempotent: true });
      const filled = order.filledQuantity !== '0' ? `, filled ${num(order.filledQuantity)} at ${num(order.avgFillPrice)}` : '';
      notify(order.status === 'rejected' ? 'error' : 'ok', `${order.side} ${num(order.quantity)} ${order.marketId}: ${order.status}${filled}${order.rejectReason !== null ? ` (${order.rejectReason})` : ''}`);
      props.onPlaced();
    } catch (err) {
      reportError(err, 'placing the option order');
    } finally {
      setSending(false);
    }
  };
  const live = props.live;
  const inst = props.instrument;
  return (
    <form class="opt-ticket" onSubmit={send} aria-label="Option order ticket" data-testid="option-ticket">
      <p class="opt-instrument strong" data-testid="ticket-instrument">{marketId ?? 'No option picked'}</p>
      {live !== undefined && (
        <p class="muted opt-small">
          bid <span class="num">{num(live.bid)}</span> · ask <span class="num">{num(live.ask)}</span> · mark <span class="num">{num(live.mark)}</span> · IV <span class="num">{live.iv === null ? '—' : `${num(live.iv, 1)}%`}</span> · Δ <span class="num">{num(live.delta, 3)}</span>
        </p>
      )}
      <div class="tabs" role="group" aria-label="Side">
        {(['buy', 'sell'] as const).map((s) => (
          <button key={s} type="button" class={`opt-side ${s}`} aria-pressed={draft.side === s} onClick={() => set({ side: s })}>{s === 'buy' ? 'Buy' : 'Sell'}</button>
        ))}
      </div>
      <div class="opt-fields">
        <label>
          Limit price (USDC){inst !== undefined && <span class="opt-hint"> tick {inst.tickSize}</span>}
          <input name="price" inputMode="decimal" autoComplete="off" value={draft.price} onInput={(e) => set({ price: e.currentTarget.value })} />
        </label>
        <label>
          Quantity (contracts){inst !== undefined && <span class="opt-hint"> min {inst.minSize}</span>}
          <input name="quantity" inputMode="decimal" autoComplete="off" value={draft.quantity} onInput={(e) => set({ quantity: e.currentTarget.value })} />
        </label>
        <label>
          Time in force
          <select name="timeInForce" value={draft.timeInForce} onChange={(e) => set({ timeInForce: e.currentTarget.value as TimeInForce })}>
            <option value="gtc">GTC: rests until cancelled</option>
            <option value="ioc">IOC: fill now, cancel the rest</option>
            <option value="fok">FOK: fill all now or nothing</option>
          </select>
        </label>
      </div>
      <div class="row gap">
        <label class="opt-check"><input type="checkbox" name="postOnly" checked={draft.postOnly} onChange={(e) => set({ postOnly: e.currentTarget.checked })} /> Post-only</label>
        <label class="opt-check" title="options: for IOC and FOK orders, clipped to the position"><input type="checkbox" name="reduceOnly" checked={draft.reduceOnly} onChange={(e) => set({ reduceOnly: e.currentTarget.checked })} /> Reduce-only</label>
      </div>
      <OrderPreview client={props.client} body={body} preview={preview} />
      <button type="submit" class={draft.side} disabled={props.client === null || typeof body === 'string' || sending} data-testid="send-option-order">
        {props.client === null ? 'Sign in to trade' : sending ? 'Sending…' : `${draft.side === 'buy' ? 'Buy' : 'Sell'} ${marketId ?? ''}`}
      </button>
    </form>
  );
}

const askPreview = (client: ExchangeClient, body: OrderBody) => client.post('/options/orders/preview', { body });

function OrderPreview(props: { client: ExchangeClient | null; body: OrderBody | string; preview: PreviewState<Preview> | null }) {
  const { preview } = props;
  let content;
  if (props.client === null) content = <p class="muted">Sign in to see the premium, fee and margin of an order and to place it.</p>;
  else if (typeof props.body === 'string') content = <p class="muted">{props.body}</p>;
  else if (preview === null) content = <p class="muted">Checking with the venue…</p>;
  else if (preview.error !== null) content = <p class="down">Preview failed: {preview.error}</p>;
  else if (preview.result !== null) {
    const p = preview.result;
    content = (
      <>
        <dl class="opt-facts">
          <dt>Premium</dt><dd class="num" data-testid="preview-premium">{num(p.notional)} USDC</dd>
          <dt>Fee ({p.feeRole}, {num(p.feeBps)} bp)</dt><dd class="num" data-testid="preview-fee">{num(p.estFee)} USDC</dd>
          <dt>{props.body.side === 'buy' ? 'Locks (premium + fee)' : 'Initial margin'}</dt><dd class="num" data-testid="preview-margin">{num(p.marginRequired)} {p.lockAsset}</dd>
        </dl>
        <p class={p.approved ? 'ok' : 'down'} data-testid="preview-verdict">
          {p.approved ? 'The venue would accept this order.' : `Would be refused: ${p.message ?? ''} [${p.reason ?? ''}]`}
        </p>
      </>
    );
  }
  return <div class="opt-preview" aria-live="polite" data-testid="option-preview">{content}</div>;
}
