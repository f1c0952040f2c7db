/**
 * Turns what the chain shows into core commands, once per block:
 *   - deposits to our addresses: `chain.deposit_observed` whenever their confirmation count
 *     changes (the core credits once, at the configured depth); deposits the core is waiting for
 *     whose transaction left the chain: `chain.deposit_reorged`;
 *   - withdrawals: pending -> processing (made durable BEFORE the payout is broadcast) -> sent
 *     (or insufficient_liquidity, retried after a delay that doubles from one second up to
 *     `retryMaxDelayMs`, so that the operator has time to refill the hot wallet before the core's
 *     attempt limit fails and refunds the withdrawal) -> confirmed at the configured depth; a sent
 *     payout whose transaction was dropped goes back to processing and is broadcast again;
 *   - a reorg deeper than the confirmation depth: the newest `reorgWatch` confirmed deposits and
 *     withdrawals are checked every pass. A credited deposit whose transaction left the chain is
 *     reported (`chain.deposit_reorged`: the core raises its alarm once; the credit stands, it may
 *     have been spent); a confirmed payout that left the chain is reported to the operator, not
 *     sent again (the transaction may return with the old chain, and paying twice is worse).
 *
 * Exactly-once payouts across crashes: the processing state is journaled before `sendWithdrawal`,
 * and `sendWithdrawal` is idempotent by withdrawal id, so a restart that finds a withdrawal in
 * processing asks the chain again and gets the transaction already sent, if any.
 *
 * The first pass after start scans the whole chain (nothing is missed while the process was
 * down); later passes scan for new deposits from a little below the head of the last completed
 * pass (however many blocks came since), and read each pending deposit's transaction directly.
 */
import type { Settlement } from '../core/wallet/wallet.ts';
import type { ChainPort } from './chain-port.ts';
import type { Sequencer } from './sequencer.ts';

export interface ChainWatcherOptions {
  readonly depositConfirmations: number;
  /** How many of the newest confirmed deposits and withdrawals are re-checked for a deep reorg. */
  readonly reorgWatch: number;
  readonly log: (message: string, detail?: unknown) => void;
  /** A payout that left the chain after its withdrawal was confirmed: the operator must act. */
  readonly alarm: (message: string, detail?: unknown) => void;
  /** The longest wait between two broadcasts of a withdrawal the hot wallet could not pay. */
  readonly retryMaxDelayMs: number;
  /** The service clock (the core's clock stamps `updatedAt`). */
  readonly now: () => number;
}

/** The first retry of a payout the hot wallet could not cover waits this long; each next one twice as long. */
const RETRY_BASE_DELAY_MS = 1000;

/**
 * Blocks below the confirmation depth that are scanned again for new deposits: a reorg replaces the
 * newest blocks, and the replacements may carry deposits the core has not seen.
 */
const REORG_RESCAN_MARGIN_BLOCKS = 16;

/** What the deep-reorg check reads of a confirmed settlement (the wallet's, or its event's record). */
type ConfirmedTx = Pick<Settlement, 'id' | 'kind' | 'txHash' | 'amount' | 'walletAddress'>;

export class ChainWatcher {
  private running = false;
  private again = false;
  /** The chain head when the last pass finished its deposits; null until then (the first pass scans the whole chain). */
  private lastPassHead: number | null = null;
  /** Confirmed payouts already reported as dropped (reported once per withdrawal and process). */
  private readonly reportedPayouts = new Set<string>();
  /**
   * The newest `reorgWatch` confirmed deposits and withdrawals, oldest first: taken from the wallet
   * once, on the first pass, then from the settlement events of each durable batch.
   */
  private confirmed: ConfirmedTx[] | null = null;

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
        await this.checkSettled();
      } while (this.again);
    } catch (error) {
      this.options.log('chain watcher pass failed', error);
    } finally {
      this.running = false;
    }
  }

  /**
   * New deposits from the blocks that can have changed since the last completed pass, then every
   * deposit the core is waiting for, read from the chain one by one: a pass that comes late (a
   * slow journal, a burst of blocks) neither skips a deposit nor leaves one pending.
   */
  private async syncDeposits(): Promise<void> {
    const head = this.chain.head();
    const from = this.lastPassHead === null ? 1 : Math.max(1, Math.min(this.lastPassHead, head) - this.rescanBlocks());
    await this.observeNewDeposits(from);
    await this.followOpenDeposits();
    this.lastPassHead = head;
  }

  /** Blocks below the last pass's head scanned again: a reorg up to this depth may have added deposits there. */
  private rescanBlocks(): number {
    return this.options.depositConfirmations + REORG_RESCAN_MARGIN_BLOCKS;
  }

  /** Deposits the core has not seen yet (the ones it has are followed by transaction). */
  private async observeNewDeposits(fromBlock: number): Promise<void> {
    const wallet = this.sequencer.exchange.wallet;
    for (const d of this.chain.depositsSince(fromBlock)) {
      if (wallet.depositByTx(d.txHash) !== undefined) continue;
      await this.sequencer.submit({
        type: 'chain.deposit_observed',
        txHash: d.txHash,
        account: d.owner,
        amount: d.amount,
        confirmations: d.confirmations,
      });
    }
  }

  /** Pending deposits: their transaction left the chain, or its confirmation count moved (either way: a reorg can lower it). */
  private async followOpenDeposits(): Promise<void> {
    for (const pending of this.sequencer.exchange.wallet.openDeposits()) {
      if (pending.txHash === null) continue;
      const tx = this.chain.txState(pending.txHash);
      if (tx.state === 'dropped') {
        await this.sequencer.submit({ type: 'chain.deposit_reorged', txHash: pending.txHash });
      } else if (tx.state === 'mined' && tx.confirmations !== pending.confirmations) {
        await this.sequencer.submit({
          type: 'chain.deposit_observed',
          txHash: pending.txHash,
          account: pending.walletAddress,
          amount: pending.amount,
          confirmations: tx.confirmations,
        });
      }
    }
  }

  /** Confirmed deposits and withdrawals whose transaction a reorg past the confirmation depth dropped. */
  private async checkSettled(): Promise<void> {
    const wallet = this.sequencer.exchange.wallet;
    for (const s of this.watchedConfirmed()) {
      if (s.txHash === null || this.chain.txState(s.txHash).state !== 'dropped') continue;
      if (s.kind === 'deposit') {
        if (!wallet.reorgReported(s.txHash)) await this.sequencer.submit({ type: 'chain.deposit_reorged', txHash: s.txHash });
      } else if (!this.reportedPayouts.has(s.id)) {
        this.reportedPayouts.add(s.id);
        this.options.alarm(`withdrawal ${s.id} was confirmed but its payout ${s.txHash} left the chain; not sent again`, {
          withdrawal: s.id, txHash: s.txHash, amount: String(s.amount), walletAddress: s.walletAddress,
        });
      }
    }
  }

  private watchedConfirmed(): readonly ConfirmedTx[] {
    if (this.confirmed !== null) return this.confirmed;
    const limit = this.options.reorgWatch;
    const confirmed: ConfirmedTx[] = this.sequencer.exchange.wallet.recentlyConfirmed(limit);
    this.sequencer.subscribe((events) => {
      for (const e of events) {
        if (e.type !== 'settlement' || e.settlement.status !== 'confirmed' || e.settlement.txHash === null) continue;
        confirmed.push(e.settlement);
        if (confirmed.length > limit) confirmed.shift();
      }
    });
    return (this.confirmed = confirmed);
  }

  private async syncWithdrawals(): Promise<void> {
    for (const w of this.sequencer.exchange.wallet.openWithdrawals()) await this.advance(w);
  }

  /** Whether a withdrawal the hot wallet could not pay has waited long enough to be tried again. */
  private retryDue(w: Settlement): boolean {
    const delay = Math.min(RETRY_BASE_DELAY_MS * 2 ** Math.max(0, w.attempts - 1), this.options.retryMaxDelayMs);
    return this.options.now() - w.updatedAt >= delay;
  }

  private async advance(w: Settlement): Promise<void> {
    switch (w.status) {
      case 'pending':
      case 'insufficient_liquidity': {
        if (w.status === 'insufficient_liquidity' && !this.retryDue(w)) return;
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
