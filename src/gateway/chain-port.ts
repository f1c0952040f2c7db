/**
 * What the gateway needs of the chain, owned by the gateway so that it imports no adapter: the
 * deposit address a wallet route shows, and the operator's actions on the embedded simulated chain
 * (the admin routes). The runtime's chain port (runtime/chain-port.ts) and the simulated chain
 * (adapters/chain/simulated-chain.ts) implement them; a gateway of the distributed mode, which runs
 * no chain watcher, needs only the deposit addresses.
 */

/** Where an account deposits, on which chain. */
export interface DepositAddresses {
  readonly chainId: number;
  depositAddress(owner: string): string;
}

/** The simulated chain's operator controls: a deposit from a wallet, and a reorg. */
export interface SimulatedChainControls extends DepositAddresses {
  /** Puts a deposit of `amount` from `owner` on the chain; returns its transaction hash. */
  deposit(owner: string, amount: bigint): string;
  /** Rolls the chain back by `depth` blocks, dropping their transactions. */
  reorg(depth: number): { head: number; droppedTxs: number };
}
