/**
 * What route handlers may use: the sequencer (the only way to change state), read access to the
 * exchange and its history tables, the identity services, and the chain port. Built once by
 * main.ts (and by the test harness) and passed to every route module.
 */
import type { ChainPort } from '../adapters/chain/port.ts';
import type { SimulatedChain } from '../adapters/chain/simulated-chain.ts';
import type { TradingHistory } from '../adapters/store/projections/trading-history.ts';
import type { WalletHistory } from '../adapters/store/projections/wallet-history.ts';
import type { Settings } from '../config/env.ts';
import type { CommandOf, CommandType } from '../core/commands.ts';
import type { Exchange, ResultOf } from '../core/exchange.ts';
import type { Sequencer } from '../runtime/sequencer.ts';
import type { ApiKeys } from './auth/api-keys.ts';
import type { Sessions } from './auth/sessions.ts';
import type { SiweVerifier } from './auth/siwe.ts';
import { fail } from './errors.ts';

export interface GatewayContext {
  readonly settings: Settings;
  readonly sequencer: Sequencer;
  readonly exchange: Exchange;
  readonly walletHistory: WalletHistory;
  readonly tradingHistory: TradingHistory;
  readonly siwe: SiweVerifier;
  readonly sessions: Sessions;
  readonly apiKeys: ApiKeys;
  readonly chain: ChainPort;
  /** Present when the embedded simulated chain is in use (admin deposit and reorg act on it). */
  readonly simulatedChain: SimulatedChain | null;
  readonly startedAt: number;
  /** The service clock (the sequencer stamps commands with it; tests may drive it by hand). */
  now(): number;
}

/** Submits a command and waits until it is durable; a rejection becomes the matching API error. */
export async function execute<T extends CommandType>(ctx: GatewayContext, command: CommandOf<T>): Promise<ResultOf<T>> {
  const outcome = await ctx.sequencer.submit(command);
  if (!outcome.ok) fail(outcome);
  return outcome.result;
}
