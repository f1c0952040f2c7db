/**
 * Turns what the chain shows into core commands, once per block:
 *   - deposits to our addresses: `chain.deposit_observed` whenever their confirmation count
 *     grows (the core credits once, at the configured depth); deposits the core is waiting for
 *     whose transaction left the chain: `chain.deposit_reorged`;
 *   - withdrawals: pending -> processing (made durable BEFORE the payout is broadcast) -> sent
 *     (or insufficient_liquidity, retried next block) -> confirmed at the configured depth; a sent
 *     payout whose transaction was dropped goes back to processing and is broadcast again.
 *
 * Exactly-once payouts across crashes: the processing state is journaled before `sendWithdrawal`,
 * and `sendWithdrawal` is idempotent by withdrawal id, so a restart that finds a withdrawal in
 * processing asks the chain again and gets the transaction already sent, if any.
 *
 * The first pass after start scans the whole chain (nothing is missed while the process was
 * down); later passes look at the blocks that can still change a pending deposit.
 */
import type { ChainPort } from '../adapters/chain/port.ts';
import type { Settlement } from '../core/wallet/wallet.ts';
import type { Sequencer } from './sequencer.ts';

export interface ChainWatcherOptions {
  readonly depositConfirmations: number;
  readonly log: (message: string, detail?: unknown) => void;
}

export class ChainWatcher {
  private running = false;
  private again = false;
  private scannedFullChain = false;

  constructor(
    private readonly chain: ChainPort,
    private readonly sequencer: Sequencer,
    private readonly options: ChainWatcherOptions,
  ) {}

  start(): void {
    this.chain.onBlock(() => void this.poll());
    void this.poll();
  }

  /** Runs one pass; overlapping calls coalesce into one more pass after the current one. */
  async poll(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        await this.syncDeposits();
        await this.syncWithdrawals();
      } while (this.again);
    } catch (error) {
      this.options.log('chain watcher pass failed', error);
    } finally {
      this.running = false;
    }
  }

  private async syncDeposits(): Promise<void> {
    const wallet = this.sequencer.exchange.wallet;
    const window = this.options.depositConfirmations + 16;
    const from = this.scannedFullChain ? Math.max(1, this.chain.head() - window) : 1;
    this.scannedFullChain = true;
    for (const d of this.chain.depositsSince(from)) {
      const known = wallet.depositByTx(d.txHash);
      if (known !== undefined && (known.status !== 'pending' || known.confirmations >= d.confirmations)) continue;
      await this.sequencer.submit({
        type: 'chain.deposit_observed',
        txHash: d.txHash,
        account: d.owner,
        amount: d.amount,
        confirmations: d.confirmations,
      });
    }
    for (const pending of wallet.openDeposits()) {
      if (pending.txHash !== null && this.chain.txState(pending.txHash).state === 'dropped') {
        await this.sequencer.submit({ type: 'chain.deposit_reorged', txHash: pending.txHash });
      }
    }
  }

  private async syncWithdrawals(): Promise<void> {
    for (const w of this.sequencer.exchange.wallet.openWithdrawals()) await this.advance(w);
  }

  private async advance(w: Settlement): Promise<void> {
    switch (w.status) {
      case 'pending':
      case 'insufficient_liquidity': {
        const moved = await this.sequencer.submit({ type: 'withdrawal.move', id: w.id, move: { to: 'processing' } });
        if (moved.ok) await this.broadcast(w);
        return;
      }
      case 'processing':
        return this.broadcast(w);
      case 'sent':
        return this.checkSent(w);
      default:
        return;
    }
  }

  private async broadcast(w: Settlement): Promise<void> {
    const sent = this.chain.sendWithdrawal(w.id, w.walletAddress, w.amount);
    const move = sent.ok ? { to: 'sent' as const, txHash: sent.txHash } : { to: 'insufficient_liquidity' as const };
    await this.sequencer.submit({ type: 'withdrawal.move', id: w.id, move });
  }

  private async checkSent(w: Settlement): Promise<void> {
    if (w.txHash === null) return;
    const tx = this.chain.txState(w.txHash);
    if (tx.state === 'mined' && tx.confirmations >= this.options.depositConfirmations) {
      await this.sequencer.submit({
        type: 'withdrawal.move',
        id: w.id,
        move: { to: 'confirmed', confirmations: tx.confirmations },
      });
    } else if (tx.state === 'dropped' || tx.state === 'unknown') {
      this.options.log(`withdrawal ${w.id} transaction ${w.txHash} left the chain; broadcasting again`);
      await this.sequencer.submit({ type: 'withdrawal.move', id: w.id, move: { to: 'processing' } });
    }
  }
}
