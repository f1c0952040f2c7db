/**
 * The chain port: what the exchange needs from a blockchain holding its USDC. Its consumer, the
 * chain watcher (chain-watcher.ts), owns it, so runtime/ imports no adapter. The embedded default
 * is the simulated chain (adapters/chain/simulated-chain.ts); an EVM adapter (viem, the USDC ERC-20
 * contract) implements the same interface without any change to the core, which only ever sees
 * commands built by the watcher from these observations.
 *
 * Contract for implementations:
 *   - deposit addresses are per account and stable;
 *   - `sendWithdrawal` is idempotent by `ref`: calling it again for a withdrawal whose transaction
 *     is still on the chain or in the mempool returns that transaction instead of paying twice;
 *   - confirmations count the including block (1 = just mined); a transaction that left the
 *     canonical chain reports `dropped`.
 */

export interface ChainDeposit {
  readonly txHash: string;
  /** The account (wallet address, lower-case) whose deposit address received the funds. */
  readonly owner: string;
  readonly amount: bigint;
  readonly blockNumber: number;
  readonly confirmations: number;
}

export type ChainTxState =
  | { readonly state: 'mempool' }
  | { readonly state: 'mined'; readonly blockNumber: number; readonly confirmations: number }
  | { readonly state: 'dropped' }
  | { readonly state: 'unknown' };

export type SendResult = { readonly ok: true; readonly txHash: string } | { readonly ok: false; readonly reason: 'insufficient_liquidity' };

export interface ChainPort {
  readonly chainId: number;
  readonly asset: string;
  depositAddress(owner: string): string;
  head(): number;
  /** Deposits in canonical blocks numbered `fromBlock` or later. */
  depositsSince(fromBlock: number): ChainDeposit[];
  txState(txHash: string): ChainTxState;
  sendWithdrawal(ref: string, to: string, amount: bigint): SendResult;
  /** Calls `listener` after each new block (or reorg) with the new head. */
  onBlock(listener: (head: number) => void): void;
  start(): void;
  stop(): void;
}
