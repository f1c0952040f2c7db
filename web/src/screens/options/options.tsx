/**
 * Options (#/options/<underlying>): the board as a chain per expiry (expiry tabs; calls left, puts
 * right, strikes in the middle; the expiry's forward shown and the at-the-money strike marked),
 * live from the board stream; the IV smile of the selected expiry (fitted curve and marks); DVOL
 * and its history; an option ticket with the API's preview, or the strategy builder for
 * multi-leg orders with its combined preview (a click on a bid or an ask in the chain feeds
 * whichever is open); and the account's option positions and open orders with cancel.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { account } from '../../api/account.ts';
import { useMarkets } from '../../api/markets.ts';
import { countdown, num } from '../../lib/format.ts';
import { notify } from '../../lib/notify.ts';
import { useStore } from '../../lib/store.ts';
import { atTheMoney, chainOf, expiryCode, useBoard, useInstruments, type Board } from './board.ts';
import { Chain, type Pick } from './chain.tsx';
import { Dvol } from './dvol.tsx';
import { OptionAccountPanel } from './option-account.tsx';
import { Smile } from './smile.tsx';
import { StrategyBuilder, type Leg } from './strategy.tsx';
import { OptionTicket, type TicketPick } from './ticket.tsx';
import { useOptionAccount, type OptionPosition } from './use-option-account.ts';
import './options.css';

type Mode = 'ticket' | 'strategy';

export function Options(props: { underlying: string }) {
  const u = props.underlying;
  const board = useBoard(u);
  const expiry = useExpiry(board);
  const signedIn = useStore(account);
  const client = signedIn?.client ?? null;
  const optionAccount = useOptionAccount(client, signedIn?.address ?? null);
  const instruments = useInstruments(u);
  const [mode, setMode] = useState<Mode>('ticket');
  const [pick, setPick] = useState<TicketPick | null>(null);
  const [legs, setLegs] = useState<Leg[]>([]);
  const rows = useMemo(() => (board === null || expiry.value === null ? [] : chainOf(board, expiry.value)), [board, expiry.value]);
  const forward = expiry.value === null ? undefined : board?.expiryForwards[expiry.value];
  const atm = atTheMoney(rows, forward?.forwardPrice);
  const held = useMemo(() => new Map((optionAccount.funds?.positions ?? []).filter((p) => p.status === 'open').map((p) => [p.marketId, `${p.side === 'long' ? '+' : '-'}${p.size}`])), [optionAccount.funds]);
  useEffect(() => {
    setPick(null);
    setLegs([]);
  }, [u]);

  const onPick = (p: Pick) => {
    if (mode === 'ticket') setPick((before) => ({ ...p, n: (before?.n ?? 0) + 1 }));
    else setLegs((list) => [...list, { key: Date.now() + list.length, market: p.option.id, side: p.side, price: p.price, quantity: list.at(-1)?.quantity ?? instruments.get(p.option.id)?.minSize ?? '1' }]);
  };
  const onClose = (position: OptionPosition) => {
    const option = board?.options.find((o) => o.id === position.marketId);
    const side = position.side === 'long' ? 'sell' : 'buy';
    const price = option?.[side === 'sell' ? 'bid' : 'ask'] ?? null;
    if (option === undefined || price === null) {
      notify('info', `${position.marketId} has no ${side === 'sell' ? 'bid' : 'ask'} on the ${u} board to close against: open its underlying's chain or enter a price.`);
      return;
    }
    setMode('ticket');
    setPick((before) => ({ option, side, price, n: (before?.n ?? 0) + 1, quantity: position.size, closing: true }));
  };
  const pickedId = pick?.option.id ?? null;
  return (
    <div class="opt-screen">
      <UnderlyingBar underlying={u} board={board} />
      <div class="opt-main">
        <div class="opt-left">
          <section class="panel opt-chain-panel" aria-label={`${u} option chain`}>
            <div class="tabs opt-expiries" role="group" aria-label="Expiry">
              {(board?.expiries ?? []).map((e) => (
                <button key={e} type="button" aria-pressed={e === expiry.value} onClick={() => expiry.set(e)}>{expiryCode(e)}</button>
              ))}
            </div>
            {board === null ? <p class="muted">Loading the {u} board…</p> : expiry.value === null ? <p class="muted">No listed {u} expiry.</p> : (
              <>
                <ExpiryLine expiry={expiry.value} forward={forward} />
                <Chain rows={rows} atm={atm} forward={forward?.forwardPrice ?? null} held={held} selected={mode === 'ticket' ? pickedId : null} onPick={onPick} />
              </>
            )}
          </section>
          <Dvol underlying={u} live={board?.volatilityIndex?.dvol ?? null} />
        </div>
        <aside class="opt-side">
          <Smile rows={rows} forward={forward} expiryCode={expiry.value === null ? '' : expiryCode(expiry.value)} />
          <section class="panel opt-order-panel" aria-label="Order entry">
            <div class="tabs" role="group" aria-label="Order entry">
              <button type="button" aria-pressed={mode === 'ticket'} onClick={() => setMode('ticket')}>Ticket</button>
              <button type="button" aria-pressed={mode === 'strategy'} onClick={() => setMode('strategy')}>Strategy builder{legs.length > 0 ? ` (${legs.length})` : ''}</button>
            </div>
            {mode === 'ticket'
              ? <OptionTicket client={client} pick={pick} live={board?.options.find((o) => o.id === pickedId)} instrument={pickedId === null ? undefined : instruments.get(pickedId)} onPlaced={optionAccount.refresh} />
              : <StrategyBuilder client={client} legs={legs} onLegs={setLegs} onExecuted={optionAccount.refresh} />}
          </section>
        </aside>
      </div>
      <OptionAccountPanel client={client} account={optionAccount} onClose={onClose} />
    </div>
  );
}

/** The selected expiry: the first with a fitted slice until the trader picks one; kept while listed. */
function useExpiry(board: Board | null): { value: string | null; set: (e: string) => void } {
  const [chosen, set] = useState<string | null>(null);
  const listed = board?.expiries ?? [];
  const value = chosen !== null && listed.includes(chosen) ? chosen : (listed.find((e) => (board?.expiryForwards[e]?.svi ?? null) !== null) ?? listed[0] ?? null);
  return { value, set };
}

function UnderlyingBar(props: { underlying: string; board: Board | null }) {
  const underlyings = [...new Set(useMarkets().filter((m) => m.marketType === 'perp').map((m) => m.underlying))];
  const b = props.board;
  return (
    <section class="panel opt-bar row gap" aria-label="Underlying">
      <div class="tabs opt-tabs" role="group" aria-label="Underlying">
        {(underlyings.length > 0 ? underlyings : [props.underlying]).map((x) => (
          <a key={x} class="button ghost" href={`#/options/${x}`} aria-current={x === props.underlying ? 'page' : undefined}>{x} options</a>
        ))}
      </div>
      <span><span class="muted">Index</span> <span class="num strong" data-testid="underlying-price">{num(b?.underlyingPrice)}</span></span>
      <span><span class="muted">DVOL</span> <span class="num strong">{num(b?.volatilityIndex?.dvol)}</span></span>
      <span class="muted opt-small">Marks, IVs and Greeks are reference values from the fitted surface; the books are the tradable prices.</span>
    </section>
  );
}

function ExpiryLine(props: { expiry: string; forward: Board['expiryForwards'][string] | undefined }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const f = props.forward;
  const source = f?.forwardSource === 'future' ? `from ${f.futuresMarketId}` : f?.forwardSource === 'parity' ? 'from put-call parity' : f?.forwardSource === 'index' ? 'the index' : '';
  return (
    <p class="row gap opt-expiry-line">
      <span><span class="muted">Expiry</span> <span class="num">{props.expiry.replace('T', ' ').slice(0, 16)} UTC</span> <span class="muted">({countdown(props.expiry, now)})</span></span>
      <span><span class="muted">Forward</span> <span class="num strong" data-testid="forward">{num(f?.forwardPrice)}</span> <span class="muted opt-small">{source}</span></span>
      {f?.calendarArbitrageFree === false && <span class="warn opt-small">calendar arbitrage against the previous expiry</span>}
    </p>
  );
}
