/**
 * The perp/future order ticket: buy or sell, limit or market, time in force, post-only,
 * reduce-only, take-profit and stop-loss exits, cross or isolated margin. While the trader types, the
 * API's dry run (POST /perps/orders/preview) shows what the order would do — notional, the initial
 * margin it locks, the fee and its rate, and whether the venue's checks pass (and which fails) —
 * before anything is sent; Enter or the button sends it (POST /perps/orders through the SDK's
 * placeOrder, with a fresh clientOrderId so a retry never trades twice). Every figure comes from the
 * API; the browser sends the decimal strings as typed. Margin comes from the venue's tiers; an
 * isolated order may choose a lower leverage (1× up to the market's maximum, sent as `leverage`): its
 * fills then post notional / leverage of isolated margin. The ticket shows the position the order
 * would change as GET /perps/positions values it now, and from the preview the position the order
 * would leave: its size, leverage and estimated liquidation price (the position view's formula).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ExchangeClient, PerpOrderInput, ResponseOf } from '../../../../sdk/src/index.ts';
import type { Market } from '../../api/markets.ts';
import { num, sign } from '../../lib/format.ts';
import { notify, reportError } from '../../lib/notify.ts';
import { usePreview, type PreviewState } from '../../lib/use-preview.ts';
import type { PerpAccount } from './use-perp-account.ts';

type Preview = ResponseOf<'/perps/orders/preview', 'post'>;
type Side = 'buy' | 'sell';
type TimeInForce = 'gtc' | 'ioc' | 'fok';
type MarginMode = 'cross' | 'isolated';

export interface Draft {
  side: Side;
  type: 'limit' | 'market';
  price: string;
  quantity: string;
  timeInForce: TimeInForce;
  postOnly: boolean;
  reduceOnly: boolean;
  marginMode: MarginMode;
  /** An isolated order's leverage, a whole number as the select offers it; '' for the tiers' (the maximum). */
  leverage: string;
  exits: boolean;
  takeProfitPrice: string;
  stopLossPrice: string;
}

const START: Draft = {
  side: 'buy', type: 'limit', price: '', quantity: '', timeInForce: 'gtc', postOnly: false, reduceOnly: false,
  marginMode: 'cross', leverage: '', exits: false, takeProfitPrice: '', stopLossPrice: '',
};
const DECIMAL = /^\d+(\.\d+)?$/;

/** The order body the draft stands for, or why there is none yet. */
export function orderBody(marketId: string, d: Draft): PerpOrderInput | string {
  const quantity = d.quantity.trim();
  const price = d.price.trim();
  if (quantity === '') return 'Enter a size.';
  if (!DECIMAL.test(quantity)) return 'The size is a decimal number, e.g. 0.01.';
  if (d.type === 'limit' && !DECIMAL.test(price)) return price === '' ? 'Enter a limit price.' : 'The price is a decimal number, e.g. 95000.5.';
  const body: PerpOrderInput = { marketId, side: d.side, quantity, type: d.type, marginMode: d.marginMode };
  const extra: Partial<PerpOrderInput> = d.type === 'limit' ? { price, timeInForce: d.timeInForce, postOnly: d.postOnly || undefined } : {};
  if (d.reduceOnly) extra.reduceOnly = true;
  // Leverage is the venue's for isolated orders only (a cross position draws on the whole account).
  if (d.marginMode === 'isolated' && d.leverage !== '' && !d.reduceOnly) extra.leverage = d.leverage;
  if (d.exits) {
    for (const key of ['takeProfitPrice', 'stopLossPrice'] as const) {
      const v = d[key].trim();
      if (v === '') continue;
      if (!DECIMAL.test(v)) return `The ${key === 'takeProfitPrice' ? 'take-profit' : 'stop-loss'} price is a decimal number.`;
      extra[key] = v;
    }
  }
  return { ...body, ...extra };
}

export interface TicketProps {
  readonly market: Market | undefined;
  readonly marketId: string;
  readonly client: ExchangeClient | null;
  readonly account: PerpAccount;
  /** A price picked in the book; `n` changes with every pick so the same price can be picked twice. */
  readonly picked: { price: string; n: number } | null;
}

export function Ticket(props: TicketProps) {
  const [draft, setDraft] = useState<Draft>(START);
  const [sending, setSending] = useState(false);
  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }));
  useEffect(() => {
    if (props.picked !== null) set({ price: props.picked.price, type: 'limit' });
  }, [props.picked?.n]);
  useEffect(() => setDraft((d) => ({ ...START, side: d.side, marginMode: d.marginMode, leverage: d.leverage })), [props.marketId]);

  const body = orderBody(props.marketId, draft);
  const preview = usePreview(props.client, typeof body === 'string' ? null : body, askPreview);
  const send = async (e: Event) => {
    e.preventDefault();
    if (props.client === null || typeof body === 'string' || sending) return;
    setSending(true);
    await placeOrder(props.client, body);
    props.account.refresh();
    setSending(false);
  };
  const signedIn = props.client !== null;
  return (
    <form class="panel ticket" onSubmit={send} aria-label="Order ticket" data-testid="ticket">
      <h2>Order</h2>
      <DraftFields draft={draft} set={set} market={props.market} />
      <PreviewBox {...props} draft={draft} body={body} preview={preview} />
      <button type="submit" class={draft.side} disabled={!signedIn || typeof body === 'string' || sending} data-testid="place-order">
        {!signedIn ? 'Sign in to trade' : sending ? 'Sending…' : `${draft.side === 'buy' ? 'Buy / Long' : 'Sell / Short'} ${props.marketId}`}
      </button>
    </form>
  );
}

/** Sends the order and says what the venue did with it (or why it refused). */
async function placeOrder(client: ExchangeClient, body: PerpOrderInput): Promise<void> {
  try {
    const order = await client.placeOrder(body);
    const filled = sign(order.filledQuantity) > 0 ? `, filled ${num(order.filledQuantity)} at ${num(order.avgFillPrice)}` : '';
    const reason = order.rejectReason !== null ? ` (${order.rejectReason})` : '';
    notify(order.status === 'rejected' ? 'error' : 'ok', `${order.side} ${num(order.quantity)} ${order.marketId} ${order.type}: ${order.status}${filled}${reason}`);
  } catch (err) {
    reportError(err, 'placing the order');
  }
}

function DraftFields(props: { draft: Draft; set: (change: Partial<Draft>) => void; market: Market | undefined }) {
  const { draft, set, market: m } = props;
  return (
    <>
      <Toggle label="Side" value={draft.side} options={[['buy', 'Buy / Long'], ['sell', 'Sell / Short']]} onChange={(side) => set({ side })} sided />
      <Toggle label="Order type" value={draft.type} options={[['limit', 'Limit'], ['market', 'Market']]} onChange={(type) => set({ type })} />
      {draft.type === 'limit' && (
        <DecimalField label={`Price (${m?.quoteSymbol ?? 'USDC'})`} name="price" value={draft.price} placeholder={m?.markPrice ?? ''} onInput={(price) => set({ price })} />
      )}
      <DecimalField label={`Size (${m?.baseSymbol ?? 'base'})`} hint={m === undefined ? undefined : `step ${m.stepSize}, min ${m.minSize}`} name="quantity" value={draft.quantity} onInput={(quantity) => set({ quantity })} />
      <div class="ticket-row">
        {draft.type === 'limit' && (
          <label>
            Time in force
            <select name="timeInForce" value={draft.timeInForce} onChange={(e) => set({ timeInForce: e.currentTarget.value as TimeInForce })}>
              <option value="gtc" title="good till cancelled">GTC</option>
              <option value="ioc" title="immediate or cancel">IOC</option>
              <option value="fok" title="fill or kill">FOK</option>
            </select>
          </label>
        )}
        <label>
          Margin
          <select name="marginMode" value={draft.marginMode} onChange={(e) => set({ marginMode: e.currentTarget.value as MarginMode })}>
            <option value="cross">Cross</option>
            <option value="isolated">Isolated</option>
          </select>
        </label>
        {draft.marginMode === 'isolated' && <LeverageField value={draft.leverage} max={m?.maxLeverage} onChange={(leverage) => set({ leverage })} />}
      </div>
      <div class="checks">
        {draft.type === 'limit' && <Check label="Post-only" checked={draft.postOnly} onChange={(postOnly) => set({ postOnly })} />}
        <Check label="Reduce-only" checked={draft.reduceOnly} onChange={(reduceOnly) => set({ reduceOnly })} />
        <Check label="TP/SL" checked={draft.exits} onChange={(exits) => set({ exits })} />
      </div>
      {draft.exits && (
        <div class="ticket-row">
          <DecimalField label="Take profit (mark)" name="takeProfitPrice" value={draft.takeProfitPrice} onInput={(takeProfitPrice) => set({ takeProfitPrice })} />
          <DecimalField label="Stop loss (mark)" name="stopLossPrice" value={draft.stopLossPrice} onInput={(stopLossPrice) => set({ stopLossPrice })} />
        </div>
      )}
    </>
  );
}

/** An isolated order's leverage: 1× up to the market's maximum (its first margin tier's); the maximum sends none. */
function LeverageField(props: { value: string; max: number | undefined; onChange: (v: string) => void }) {
  const max = props.max ?? 1;
  const choices = Array.from({ length: Math.max(0, max - 1) }, (_, i) => String(max - 1 - i));
  return (
    <label>
      Leverage
      <select name="leverage" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">{max}× (max)</option>
        {choices.map((v) => <option key={v} value={v}>{v}×</option>)}
      </select>
    </label>
  );
}

function DecimalField(props: { label: string; hint?: string; name: string; value: string; placeholder?: string; onInput: (v: string) => void }) {
  return (
    <label>
      <span>{props.label}{props.hint !== undefined && <span class="hint"> {props.hint}</span>}</span>
      <input name={props.name} inputMode="decimal" autoComplete="off" value={props.value} placeholder={props.placeholder} onInput={(e) => props.onInput(e.currentTarget.value)} />
    </label>
  );
}

/** The API's dry run of a perp order (the ticket asks it 250 ms after the trader stops typing). */
const askPreview = (client: ExchangeClient, body: PerpOrderInput) => client.post('/perps/orders/preview', { body });

function PreviewBox(props: TicketProps & { draft: Draft; body: PerpOrderInput | string; preview: PreviewState<Preview> | null }) {
  const { preview, draft } = props;
  const position = props.account.positions?.find((p) => p.marketId === props.marketId && p.marginMode === draft.marginMode);
  const quote = props.market?.quoteSymbol ?? 'USDC';
  return (
    <div class="preview" aria-live="polite" data-testid="order-preview">
      {props.client === null ? <p class="muted">Sign in to see the margin and fee of an order and to place it.</p>
        : typeof props.body === 'string' ? <p class="muted">{props.body}</p>
          : preview === null ? <p class="muted">Checking with the venue…</p>
            : preview.error !== null ? <p class="down">Preview failed: {preview.error}</p>
              : preview.result !== null && <PreviewFigures preview={preview.result} quote={quote} />}
      <dl class="facts">
        <dt>Available margin</dt><dd class="num" data-testid="available-margin">{num(props.account.margin?.availableMargin)} {quote}</dd>
        <dt>Max leverage</dt><dd class="num" title="the first margin tier's; an isolated order may choose less">{props.market !== undefined ? `${props.market.maxLeverage}×` : '—'}</dd>
        <dt>Position now ({draft.marginMode})</dt>
        <dd class="num">{position === undefined ? 'none' : `${position.side} ${num(position.size)} · ${position.leverage === null ? '—' : `${num(position.leverage)}×`}`}</dd>
      </dl>
    </div>
  );
}

function PreviewFigures(props: { preview: Preview; quote: string }) {
  const p = props.preview;
  return (
    <>
      <p class={p.approved ? 'up' : 'down'} data-testid="preview-verdict">
        {p.approved ? 'The venue would accept this order.' : `Would be refused: ${p.message ?? ''} [${p.reason ?? ''}]`}
      </p>
      <dl class="facts">
        <dt>Notional</dt><dd class="num">{num(p.notional)} {props.quote}</dd>
        <dt>Initial margin</dt><dd class="num" data-testid="preview-margin">{num(p.marginRequired)} {props.quote}</dd>
        <dt>Est. fee <span class="hint">({p.feeBps} bps {p.feeRole})</span></dt><dd class="num" data-testid="preview-fee">{num(p.estFee)} {props.quote}</dd>
        <dt>Position after</dt><dd class="num" data-testid="preview-position">{positionAfter(p.estimatedPositionSize)}</dd>
        <dt>Leverage after</dt><dd class="num">{p.estimatedLeverage === null ? '—' : `${num(p.estimatedLeverage)}×`}</dd>
        <dt title="where the position would be liquidated once the order filled in full at its expected price, at today's mark for every other position">Est. liq. price</dt>
        <dd class="num" data-testid="preview-liq">{liquidationAfter(p)}</dd>
      </dl>
    </>
  );
}

/** The position the order would leave, as the preview estimates it (signed size): side and size. */
function positionAfter(size: string | null): string {
  if (size === null) return '—';
  const s = sign(size);
  return s === 0 ? 'flat' : `${s > 0 ? 'long' : 'short'} ${num(size.replace(/^-/, ''))}`;
}

/** Its estimated liquidation price; "none" for a position no positive price would liquidate. */
function liquidationAfter(p: Preview): string {
  if (p.estimatedLiquidationPrice !== null) return num(p.estimatedLiquidationPrice);
  return sign(p.estimatedPositionSize) === 0 ? '—' : 'none';
}

function Toggle<T extends string>(props: { label: string; value: T; options: [T, string][]; onChange: (v: T) => void; sided?: boolean }) {
  return (
    <div class="tabs toggle" role="group" aria-label={props.label}>
      {props.options.map(([v, text]) => (
        <button key={v} type="button" aria-pressed={props.value === v} class={props.sided === true && props.value === v ? v : ''} onClick={() => props.onChange(v)}>
          {text}
        </button>
      ))}
    </div>
  );
}

function Check(props: { label: string; checked: boolean; onChange: (v: boolean) => void }) {
  return (
    <label class="check">
      <input type="checkbox" checked={props.checked} onChange={(e) => props.onChange(e.currentTarget.checked)} />
      {props.label}
    </label>
  );
}
