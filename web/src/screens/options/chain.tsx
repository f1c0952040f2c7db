/**
 * The option chain of one expiry: calls on the left, puts on the right, strikes in the middle;
 * per side delta, IV, mark, bid and ask from the board (bid and ask are the books' top of book at
 * the board's tick). The at-the-money strike (nearest the forward) is highlighted and the
 * in-the-money side shaded. A bid or an ask is a button: a bid picks a sell at that price, an ask
 * a buy, for the ticket or as a strategy leg (whichever the screen is building).
 */
import { num } from '../../lib/format.ts';
import type { OptionRow, StrikeRow } from './board.ts';

export type Side = 'buy' | 'sell';

export interface Pick {
  readonly option: OptionRow;
  readonly side: Side;
  readonly price: string;
}

interface ChainProps {
  readonly rows: readonly StrikeRow[];
  readonly atm: string | null;
  readonly forward: string | null;
  /** Open positions by instrument: "+0.1" long, "-0.2" short. */
  readonly held: ReadonlyMap<string, string>;
  readonly selected: string | null;
  readonly onPick: (pick: Pick) => void;
}

export function Chain(props: ChainProps) {
  const F = props.forward === null ? null : Number(props.forward);
  return (
    <div class="table-scroll opt-chain-scroll">
      <table class="grid opt-chain" data-testid="option-chain">
        <thead>
          <tr class="opt-sides">
            <th colSpan={5} class="opt-calls-head">Calls</th>
            <th class="opt-strike-head" />
            <th colSpan={5} class="opt-puts-head">Puts</th>
          </tr>
          <tr>
            <th class="num">Δ</th><th class="num">IV</th><th class="num">Mark</th><th class="num">Bid</th><th class="num">Ask</th>
            <th class="opt-strike">Strike</th>
            <th class="num">Bid</th><th class="num">Ask</th><th class="num">Mark</th><th class="num">IV</th><th class="num">Δ</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => {
            const k = Number(r.strike);
            const atm = r.strike === props.atm;
            return (
              <tr key={r.strike} data-strike={r.strike} class={atm ? 'opt-atm' : undefined} aria-current={atm ? 'true' : undefined}>
                <ChainSide {...props} option={r.call} itm={F !== null && k < F} order={['delta', 'iv', 'mark', 'bid', 'ask']} />
                <td class="opt-strike num">
                  {num(r.strike)}
                  {atm && <span class="opt-atm-tag" title="at the money: the strike nearest the forward">ATM</span>}
                </td>
                <ChainSide {...props} option={r.put} itm={F !== null && k > F} order={['bid', 'ask', 'mark', 'iv', 'delta']} />
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

type Column = 'delta' | 'iv' | 'mark' | 'bid' | 'ask';

function ChainSide(props: ChainProps & { option: OptionRow | undefined; itm: boolean; order: Column[] }) {
  const o = props.option;
  const cls = `num${props.itm ? ' opt-itm' : ''}${o !== undefined && o.id === props.selected ? ' opt-selected' : ''}`;
  if (o === undefined) return <>{props.order.map((c) => <td key={c} class={cls}>—</td>)}</>;
  const held = props.held.get(o.id);
  return (
    <>
      {props.order.map((c) => {
        if (c === 'bid' || c === 'ask') return <td key={c} class={cls}><Quote option={o} column={c} onPick={props.onPick} /></td>;
        if (c === 'delta') return <td key={c} class={cls}>{num(o.delta, 2)}</td>;
        if (c === 'iv') return <td key={c} class={cls}>{o.iv === null ? '—' : `${num(o.iv, 1)}%`}</td>;
        return (
          <td key={c} class={cls}>
            {num(o.mark)}
            {held !== undefined && <span class={`opt-held ${held.startsWith('-') ? 'down' : 'up'}`} title={`your position: ${held}`}>{held}</span>}
          </td>
        );
      })}
    </>
  );
}

function Quote(props: { option: OptionRow; column: 'bid' | 'ask'; onPick: (pick: Pick) => void }) {
  const price = props.option[props.column];
  if (price === null) return <span class="muted">—</span>;
  const side: Side = props.column === 'bid' ? 'sell' : 'buy';
  return (
    <button
      type="button"
      class={`opt-quote ${props.column}`}
      aria-label={`${side === 'buy' ? 'Buy' : 'Sell'} ${props.option.id} at ${price}`}
      data-testid={`${props.column}-${props.option.id}`}
      onClick={() => props.onPick({ option: props.option, side, price })}
    >
      {num(price)}
    </button>
  );
}
