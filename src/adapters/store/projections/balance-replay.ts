/**
 * The restart's check of a wallet history against the ledger replayed from the journal, shared by
 * the SQLite history (wallet-history.ts) and the PostgreSQL one (adapters/postgres/history).
 */
import { ledgerKey, systemAccount, type Ledger } from '../../../core/ledger/ledger.ts';
import { formatDecimal } from '../../../core/money.ts';

/**
 * Each recorded account's balance after its last line (`recorded`: account key -> balance) against
 * the replayed `ledger`, and no replayed balance on an account the history has no line for (user
 * buckets and the insurance fund: the accounts whose lines are recorded). Empty when all agree.
 */
export function replayDifferences(recorded: ReadonlyMap<string, bigint>, ledger: Ledger): string[] {
  const replayed = new Map(ledger.entries());
  const differences: string[] = [];
  for (const [key, shown] of recorded) {
    const balance = replayed.get(key) ?? 0n;
    if (balance !== shown) differences.push(`${key} recorded ${formatDecimal(shown)}, replayed ${formatDecimal(balance)}`);
  }
  const insurance = ledgerKey(systemAccount('insurance', ''));
  for (const [key, balance] of replayed) {
    if (balance === 0n || recorded.has(key) || !(key.startsWith('u:') || key.startsWith(insurance))) continue;
    differences.push(`${key} has no recorded line, replayed ${formatDecimal(balance)}`);
  }
  return differences;
}
