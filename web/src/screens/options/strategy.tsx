/**
 * The strategy builder: multi-leg option orders executed all or nothing. Legs come from the chain
 * (a bid adds a sell at the bid, an ask a buy at the ask); each has its side, quantity (the ratio
 * between legs is their quantities) and limit price, all editable. While the legs change, the API's
 * dry run (POST /options/orders/strategy/preview) shows per leg what the book would fill now, its
 * premium and fee, and whether the whole strategy would execute (and which check fails); the net
 * premium and total fee are the exact sums of the legs' figures (SDK decimal helpers). Execute sends
 * POST /options/orders/strategy: every leg fills in full at its limit, or nothing does.
 */
import { useState } from 'preact/hooks';
import { addDecimal, negateDecimal, type BodyOf, type ExchangeClient, type ResponseOf } from '../../../../sdk/src/index.ts';
import { num, tone } from '../../lib/format.ts';
import { notify, reportError } from '../../lib/notify.ts';
import type { Side } from './chain.tsx';
import { usePreview } from '../../lib/use-preview.ts';

type StrategyBody = BodyOf<'/options/orders/strategy', 'post'>;
type StrategyPreview = ResponseOf<'/options/orders/strategy/preview', 'post'>;

export interface Leg {
  readonly key: number;
  readonly market: string;
  readonly side: Side;
  readonly quantity: string;
  readonly price: string;
}

const DECIMAL = /^\d+(\.\d+)?$/;
const MAX_LEGS = 8;

/** "28NOV26-98000-C" for BTC-28NOV26-98000-C: the chain already names the underlying. */
const shortId = (marketId: string) => marketId.replace(/^[A-Z0-9]+-/, '');

function strategyBody(name: string, legs: readonly Leg[]): StrategyBody | string {
  if (legs.length < 2) return 'Add at least two legs: click bids and asks in the chain.';
  if (legs.length > MAX_LEGS) return `A strategy has at most ${MAX_LEGS} legs.`;
  for (const l of legs) {
    if (!DECIMAL.test(l.quantity.trim())) return `Enter a quantity for ${l.market} (a decimal number of contracts).`;
    if (!DECIMAL.test(l.price.trim())) return `Enter a limit price for ${l.market}.`;
  }
  const body: StrategyBody = { legs: legs.map((l) => ({ market: l.market, side: l.side, quantity: l.quantity.trim(), price: l.price.trim() })) };
  if (name.trim() !== '') body.strategyName = name.trim();
  return body;
}

const askPreview = (client: ExchangeClient, body: StrategyBody) => client.post('/options/orders/strategy/preview', { body });

export interface StrategyProps {
  readonly client: ExchangeClient | null;
  readonly legs: readonly Leg[];
  readonly onLegs: (legs: Leg[]) => void;
  readonly onExecuted: () => void;
}

export function StrategyBuilder(props: StrategyProps) {
  const [name, setName] = useState('');
  const [sending, setSending] = useState(false);
  const body = strategyBody(name, props.legs);
  const preview = usePreview(props.client, typeof body === 'string' ? null : body, askPreview);
  const change = (key: number, patch: Partial<Leg>) => props.onLegs(props.legs.map((l) => (l.key === key ? { ...l, ...patch } : l)));
  const execute = async (e: Event) => {
    e.preventDefault();
    if (props.client === null || typeof body === 'string' || sending) return;
    setSending(true);
    try {
      const r = await props.client.post('/options/orders/strategy', { body });
      notify('ok', `strategy ${r.strategyName ?? r.strategyId}: ${r.fullyFilled ? 'every leg filled' : 'not filled'} (${r.legs.length} legs)`);
      props.onExecuted();
    } catch (err) {
      reportError(err, 'executing the strategy');
    } finally {
      setSending(false);
    }
  };
  return (
    <form class="opt-strategy" onSubmit={execute} aria-label="Strategy builder" data-testid="strategy">
      <p class="muted opt-small">Click bids (sell) and asks (buy) in the chain to add legs. All legs fill in full at their limits, or none does.</p>
      {props.legs.length > 0 && (
        <ol class="opt-leg-list" data-testid="strategy-legs">
          {props.legs.map((l, i) => (
            <li key={l.key}>
              <div class="row gap">
                <span class="mono" title={l.market}>{i + 1}. {shortId(l.market)}</span>
                <span class="spacer" />
                <button type="button" class="ghost small" aria-label={`Remove leg ${i + 1}, ${l.market}`} onClick={() => props.onLegs(props.legs.filter((x) => x.key !== l.key))}>Remove</button>
              </div>
              <div class="opt-leg-fields">
                <label>
                  Side<span class="opt-sr"> of leg {i + 1}</span>
                  <select value={l.side} class={l.side === 'buy' ? 'up' : 'down'} onChange={(e) => change(l.key, { side: e.currentTarget.value as Side })}>
                    <option value="buy">Buy</option>
                    <option value="sell">Sell</option>
                  </select>
                </label>
                <label>
                  Quantity<span class="opt-sr"> of leg {i + 1}</span>
                  <input inputMode="decimal" autoComplete="off" value={l.quantity} onInput={(e) => change(l.key, { quantity: e.currentTarget.value })} />
                </label>
                <label>
                  Limit price<span class="opt-sr"> of leg {i + 1}</span>
                  <input inputMode="decimal" autoComplete="off" value={l.price} onInput={(e) => change(l.key, { price: e.currentTarget.value })} />
                </label>
              </div>
            </li>
          ))}
        </ol>
      )}
      <label>
        Name (optional)
        <input name="strategyName" value={name} maxLength={64} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <div class="opt-preview" aria-live="polite" data-testid="strategy-preview">
        {props.client === null ? <p class="muted">Sign in to preview and execute a strategy.</p>
          : typeof body === 'string' ? <p class="muted">{body}</p>
            : preview === null ? <p class="muted">Checking with the venue…</p>
              : preview.error !== null ? <p class="down">Preview failed: {preview.error}</p>
                : preview.result !== null && <CombinedPreview preview={preview.result} />}
      </div>
      <div class="row gap">
        <button type="submit" disabled={props.client === null || typeof body === 'string' || sending} data-testid="execute-strategy">
          {sending ? 'Sending…' : `Execute ${props.legs.length}-leg strategy`}
        </button>
        {props.legs.length > 0 && <button type="button" class="ghost" onClick={() => props.onLegs([])}>Clear legs</button>}
      </div>
    </form>
  );
}

function CombinedPreview({ preview }: { preview: StrategyPreview }) {
  let net = '0';
  let fees = '0';
  for (const l of preview.legs) {
    net = addDecimal(net, l.side === 'buy' ? l.notional : negateDecimal(l.notional));
    fees = addDecimal(fees, l.estFee);
  }
  return (
    <>
      <ul class="opt-leg-preview">
        {preview.legs.map((l) => (
          <li key={l.marketId} title={l.marketId}>
            <span class="mono"><span class={l.side === 'buy' ? 'up' : 'down'}>{l.side}</span> {num(l.quantity)} {shortId(l.marketId)} @ {num(l.price)}</span>
            <span class="muted opt-small">fillable now <span class="num">{num(l.fillableQuantity)}</span> · premium <span class="num">{num(l.notional)}</span> · fee <span class="num">{num(l.estFee)}</span> ({num(l.feeBps)} bp)</span>
          </li>
        ))}
      </ul>
      <dl class="opt-facts">
        <dt>Net premium ({net.startsWith('-') ? 'received' : 'paid'})</dt><dd class={`num ${tone(negateDecimal(net))}`} data-testid="strategy-net">{num(net.replace(/^-/, ''))} USDC</dd>
        <dt>Fees</dt><dd class="num" data-testid="strategy-fees">{num(fees)} USDC</dd>
      </dl>
      <p class={preview.approved ? 'ok' : 'down'} data-testid="strategy-verdict">
        {preview.approved ? 'Every leg would fill now: the strategy would execute.' : `Would not execute: ${preview.message ?? ''} [${preview.reason ?? ''}]`}
      </p>
    </>
  );
}
