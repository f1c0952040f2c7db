/**
 * The spot order ticket: buy or sell, limit or market, time in force, post-only. While the trader
 * types, the API's dry run (POST /orders/preview, the same checks as placing, no side effect)
 * shows what the order would do before anything is sent: its notional, what it would lock (USDC
 * for a buy, the base asset for a sell), the fee and its rate, and whether the venue would accept
 * it or which check fails. Enter or the button sends it (POST /orders through the SDK's
 * placeOrder, with a fresh clientOrderId from newClientId, so a retry never trades twice). The
 * browser sends the decimal strings as typed; every figure comes from the API.
 */
import { useEffect, useId, useState } from 'preact/hooks';
import { newClientId, type ClobOrderInput, type ExchangeClient, type Market, type ResponseOf } from '../../../../sdk/src/index.ts';
import { num } from '../../lib/format.ts';
import { notify } from '../../lib/notify.ts';
import { usePreview, type PreviewState } from '../../lib/use-preview.ts';
import { useAction } from '../wallet/use-action.ts';
import type { AssetRow } from './spot-balances.tsx';

type Preview = ResponseOf<'/orders/preview', 'post'>;
type Side = 'buy' | 'sell';
type TimeInForce = 'gtc' | 'ioc' | 'fok';

interface Draft {
  readonly side: Side;
  readonly type: 'limit' | 'market';
  readonly price: string;
  readonly quantity: string;
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
}

const START: Draft = { side: 'buy', type: 'limit', price: '', quantity: '', timeInForce: 'gtc', postOnly: false };
const DECIMAL = /^\d+(\.\d+)?$/;

/** The order the draft stands for, or what is missing. */
function orderBody(marketId: string, d: Draft): ClobOrderInput | string {
  const quantity = d.quantity.trim();
  const price = d.price.trim();
  if (quantity === '') return 'Enter a quantity.';
  if (!DECIMAL.test(quantity)) return 'The quantity is a decimal number, e.g. 0.01.';
  if (d.type === 'limit' && price === '') return 'Enter a limit price.';
  if (price !== '' && !DECIMAL.test(price)) return 'The price is a decimal number, e.g. 95000.5.';
  const body: ClobOrderInput = { marketId, side: d.side, type: d.type, quantity, timeInForce: d.timeInForce };
  return {
    ...body,
    ...(price !== '' ? { price } : {}),
    ...(d.type === 'limit' && d.postOnly ? { postOnly: true } : {}),
  };
}

export interface SpotTicketProps {
  readonly client: ExchangeClient | null;
  readonly marketId: string;
  readonly pair: Market | undefined;
  readonly assets: readonly AssetRow[] | null;
  /** A price picked in the book; `n` changes with every pick so the same price can be picked twice. */
  readonly picked: { price: string; n: number } | null;
  readonly onPlaced: () => void;
}

export function SpotTicket(props: SpotTicketProps) {
  const [draft, setDraft] = useState<Draft>(START);
  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }));
  useEffect(() => {
    if (props.picked !== null) set({ price: props.picked.price, type: 'limit' });
  }, [props.picked?.n]);
  useEffect(() => setDraft((d) => ({ ...START, side: d.side })), [props.marketId]);
  const body = orderBody(props.marketId, draft);
  const preview = usePreview(props.client, typeof body === 'string' ? null : body, askPreview, 3_000);
  const [sending, run] = useAction();
  const send = async (e: Event) => {
    e.preventDefault();
    if (props.client === null || typeof body === 'string' || sending) return;
    const client = props.client;
    await run('placing the spot order', async () => {
      const order = await client.placeOrder({ ...body, clientOrderId: newClientId() });
      const filled = /[1-9]/.test(order.filledQuantity) ? `, filled ${num(order.filledQuantity)} at ${num(order.avgFillPrice)}` : '';
      const refused = order.rejectReason !== null ? ` (${order.rejectReason})` : '';
      notify(order.status === 'rejected' ? 'error' : 'ok', `${order.side} ${num(order.quantity)} ${order.marketId} ${order.type}${order.price !== null ? ` at ${num(order.price)}` : ''}: ${order.status}${filled}${refused}`);
      props.onPlaced();
    });
  };
  const base = props.pair?.baseSymbol ?? 'base';
  const quote = props.pair?.quoteSymbol ?? 'USDC';
  const spend = props.assets?.find((a) => a.asset === (draft.side === 'buy' ? quote : base));
  const signedIn = props.client !== null;
  return (
    <form class="panel spot-ticket" onSubmit={send} aria-label="Spot order ticket" data-testid="spot-ticket">
      <h2>Spot order</h2>
      <Toggle label="Side" value={draft.side} options={[['buy', `Buy ${base}`], ['sell', `Sell ${base}`]]} onChange={(side) => set({ side })} sided />
      <Toggle label="Order type" value={draft.type} options={[['limit', 'Limit'], ['market', 'Market']]}
        onChange={(type) => set({ type, timeInForce: type === 'market' ? 'ioc' : 'gtc' })} />
      <label>
        {draft.type === 'limit' ? `Limit price (${quote})` : `Worst price (${quote}, optional)`}
        <input name="price" inputMode="decimal" autoComplete="off" value={draft.price} placeholder={draft.type === 'market' ? 'up to the price band' : props.pair?.indexPrice ?? ''}
          onInput={(e) => set({ price: e.currentTarget.value })} />
      </label>
      <label>
        Quantity ({base}){props.pair !== undefined && <span class="spot-hint"> step {props.pair.stepSize}, min {props.pair.minSize}</span>}
        <input name="quantity" inputMode="decimal" autoComplete="off" value={draft.quantity} onInput={(e) => set({ quantity: e.currentTarget.value })} />
      </label>
      <TimeInForceSelect type={draft.type} value={draft.timeInForce} onChange={(timeInForce) => set({ timeInForce })} />
      <label class="spot-check">
        <input type="checkbox" name="postOnly" checked={draft.postOnly && draft.type === 'limit'} disabled={draft.type !== 'limit'} onChange={(e) => set({ postOnly: e.currentTarget.checked })} />
        Post-only (rests as a maker order, or is refused)
      </label>
      <PreviewBox signedIn={signedIn} body={body} preview={preview} base={base} quote={quote} />
      <p class="muted spot-available" data-testid="spot-available">
        {signedIn ? <>Available to {draft.side === 'buy' ? 'spend' : 'sell'}: <span class="num">{num(spend?.available)}</span> {draft.side === 'buy' ? quote : base}</> : 'Sign in to trade.'}
      </p>
      <button type="submit" class={draft.side} disabled={!signedIn || typeof body === 'string' || sending} data-testid="spot-place-order">
        {!signedIn ? 'Sign in to trade' : sending ? 'Sending…' : `${draft.side === 'buy' ? 'Buy' : 'Sell'} ${base}`}
      </button>
    </form>
  );
}

function TimeInForceSelect(props: { type: Draft['type']; value: TimeInForce; onChange: (v: TimeInForce) => void }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>Time in force</label>
      <select id={id} name="timeInForce" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as TimeInForce)}>
        {props.type === 'limit' && <option value="gtc">GTC (good till cancelled)</option>}
        <option value="ioc">IOC (immediate or cancel)</option>
        <option value="fok">FOK (fill or kill)</option>
      </select>
    </div>
  );
}

/** The API's dry run of a spot order: 250 ms after the trader stops typing, then every 3 s (the book moves). */
const askPreview = (client: ExchangeClient, body: ClobOrderInput) => client.post('/orders/preview', { body });

function PreviewBox(props: { signedIn: boolean; body: ClobOrderInput | string; preview: PreviewState<Preview> | null; base: string; quote: string }) {
  const { preview } = props;
  return (
    <div class="spot-preview" aria-live="polite" data-testid="spot-preview">
      {!props.signedIn ? <p class="muted">Sign in to see what an order would lock and cost, and to place it.</p>
        : typeof props.body === 'string' ? <p class="muted">{props.body}</p>
          : preview === null ? <p class="muted">Checking with the venue…</p>
            : preview.error !== null ? <p class="down">Preview failed: {preview.error}</p>
              : preview.result !== null && <PreviewFigures preview={preview.result} quote={props.quote} />}
    </div>
  );
}

function PreviewFigures(props: { preview: Preview; quote: string }) {
  const p = props.preview;
  return (
    <>
      <p class={p.approved ? 'up' : 'down'} data-testid="spot-preview-verdict">
        {p.approved ? 'The venue would accept this order.' : `Would be refused: ${p.message ?? ''} [${p.reason ?? ''}]`}
      </p>
      <dl class="spot-facts">
        <dt>Notional</dt><dd class="num">{num(p.notional)} {props.quote}</dd>
        <dt>Locks</dt><dd class="num" data-testid="spot-preview-lock">{num(p.marginRequired)} {p.lockAsset}</dd>
        <dt>Est. fee</dt><dd class="num" data-testid="spot-preview-fee">{num(p.estFee)} {props.quote} <span class="muted">({p.feeBps} bps, {p.feeRole})</span></dd>
      </dl>
    </>
  );
}

function Toggle<T extends string>(props: { label: string; value: T; options: [T, string][]; onChange: (v: T) => void; sided?: boolean }) {
  return (
    <div class="tabs spot-toggle" role="group" aria-label={props.label}>
      {props.options.map(([v, text]) => (
        <button key={v} type="button" aria-pressed={props.value === v} class={props.sided === true && props.value === v ? v : ''} onClick={() => props.onChange(v)}>
          {text}
        </button>
      ))}
    </div>
  );
}
