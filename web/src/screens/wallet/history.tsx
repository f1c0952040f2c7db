/**
 * History, newest first, a page at a time: the ledger of the account's buckets (GET
 * /wallet/history: every deposit, withdrawal, transfer, fee, funding payment, PnL and premium, with
 * the balance after it; paged back with `before` = the smallest id seen) and the deposit and
 * withdrawal records with their on-chain status (GET /wallet/settlements; paged back with `before`
 * = the last record's id). The newest page follows the balances stream; older pages stay put.
 */
import { useState } from 'preact/hooks';
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { dateTime, num, tone } from '../../lib/format.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { BUCKETS, useOnRevision } from './use-balances.ts';

const PAGE = 20;
type Tab = 'ledger' | 'settlements';

interface Props {
  readonly client: ExchangeClient;
  readonly address: string;
  readonly revision: number;
}

export function History(props: Props) {
  const [tab, setTab] = useState<Tab>('ledger');
  return (
    <section class="panel history" aria-label="History">
      <div class="panel-head">
        <h2>History</h2>
        <div class="tabs" role="group" aria-label="Which history">
          <button type="button" aria-pressed={tab === 'ledger'} onClick={() => setTab('ledger')}>Ledger</button>
          <button type="button" aria-pressed={tab === 'settlements'} onClick={() => setTab('settlements')}>Deposits & withdrawals</button>
        </div>
      </div>
      {tab === 'ledger' ? <Ledger {...props} /> : <Settlements {...props} />}
    </section>
  );
}

/**
 * One history list a page at a time: a stack of page cursors (the newest page has none; "Older"
 * pushes the cursor of the page's last row, "Newer" pops), the page read with `readPage`, the newest
 * page polled every `newestEveryMs` and re-read when the balances move, older pages kept still.
 */
function usePagedHistory<T, C>(props: Props, readPage: (query: { limit: number; before?: C }) => Promise<T[]>, cursorOf: (row: T) => C, newestEveryMs: number) {
  const [stack, setStack] = useState<readonly C[]>([]);
  const before = stack[stack.length - 1];
  const query = before === undefined ? { limit: PAGE } : { limit: PAGE, before };
  const [rows, read] = usePoll(() => readPage(query), before === undefined ? newestEveryMs : 300_000, `${props.address}:${String(before ?? 'newest')}`);
  useOnRevision(props.revision, () => {
    if (before === undefined) read();
  });
  const list = rows ?? [];
  const last = list[list.length - 1];
  const page = stack.length + 1;
  return {
    list,
    /** Read at least once, and holding no row. */
    empty: rows !== null && list.length === 0,
    page,
    pager: <Pager page={page} full={list.length === PAGE} older={() => last !== undefined && setStack((s) => [...s, cursorOf(last)])} newer={() => setStack((s) => s.slice(0, -1))} />,
  };
}

function Pager(props: { page: number; full: boolean; older: () => void; newer: () => void }) {
  return (
    <div class="pager">
      <button type="button" class="ghost small" disabled={props.page === 1} onClick={props.newer}>← Newer</button>
      <span class="muted">page {props.page}</span>
      <button type="button" class="ghost small" disabled={!props.full} onClick={props.older}>Older →</button>
    </div>
  );
}

const bucketLabel = (id: string) => BUCKETS.find((b) => b.id === id)?.label ?? id;
const words = (code: string) => code.charAt(0).toUpperCase() + code.slice(1).replace(/_/g, ' ');

/** A ledger entry's reference in words: a transfer's route, a settlement id, a transaction hash. */
function reference(ref: string | null, txHash: string | null): string {
  const route = ref === null ? null : /^(\w+)->(\w+)$/.exec(ref);
  if (route !== null) return `${bucketLabel(route[1]!)} → ${bucketLabel(route[2]!)}`;
  if (ref !== null) return ref;
  return txHash === null ? '' : `${txHash.slice(0, 10)}…`;
}

function Ledger(props: Props) {
  const { list, empty, page, pager } = usePagedHistory(props, (query: { limit: number; before?: number }) => props.client.get('/wallet/history', { query }), (e) => Number(e.id), 10_000);
  return (
    <>
      <div class="table-scroll">
        <table class="grid" data-testid="ledger">
          <thead>
            <tr><th>Time (UTC)</th><th>Entry</th><th>Bucket</th><th>Asset</th><th class="num">Amount</th><th class="num">Balance after</th><th>Reference</th></tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr key={e.id} data-type={e.type}>
                <td>{dateTime(e.createdAt)}</td>
                <td>{words(e.type)}</td>
                <td>{bucketLabel(e.bucket)}</td>
                <td>{e.asset}</td>
                <td class={`num ${tone(e.amount)}`}>{num(e.amount)}</td>
                <td class="num">{num(e.balanceAfter)}</td>
                <td class="muted" title={e.txHash ?? e.ref ?? ''}>{reference(e.ref, e.txHash)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {empty && <p class="muted small-note">{page === 1 ? 'No entry yet: deposit to start.' : 'No older entries.'}</p>}
      {pager}
    </>
  );
}

function Settlements(props: Props) {
  const { list, empty, page, pager } = usePagedHistory(props, (query: { limit: number; before?: string }) => props.client.get('/wallet/settlements', { query }), (s) => s.id, 5_000);
  return (
    <>
      <div class="table-scroll">
        <table class="grid" data-testid="settlements">
          <thead>
            <tr><th>Created (UTC)</th><th>Kind</th><th>Id</th><th class="num">Amount</th><th>Status</th><th class="num">Confirmations</th><th>Transaction</th><th>Updated (UTC)</th></tr>
          </thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.id} data-kind={s.kind}>
                <td>{dateTime(s.createdAt)}</td>
                <td>{s.kind === 'deposit' ? 'Deposit' : 'Withdrawal'}</td>
                <td class="mono">{s.id}</td>
                <td class="num">{num(s.amount)} {s.asset}</td>
                <td><span class={`status ${s.status}`} title={s.failureReason ?? ''}>{words(s.status)}</span>{s.failureReason !== null && <span class="down"> {s.failureReason}</span>}</td>
                <td class="num">{s.confirmations}</td>
                <td class="mono muted" title={s.txHash ?? ''}>{s.txHash === null ? '—' : `${s.txHash.slice(0, 10)}…`}</td>
                <td>{dateTime(s.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {empty && <p class="muted small-note">{page === 1 ? 'No deposit or withdrawal yet.' : 'No older records.'}</p>}
      {pager}
    </>
  );
}
