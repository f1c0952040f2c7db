/**
 * What route handlers may use: the sequencer (the only way to change state), the core's query
 * surface (core/queries.ts) and the history tables, the identity services, and the chain port.
 * Built once by main.ts (and by the test harness) and passed to every route module.
 */
import type { Settings } from '../config/env.ts';
import type { CommandOf, CommandType } from '../core/commands.ts';
import type { ResultOf } from '../core/exchange.ts';
import type { CoreQueries } from '../core/queries.ts';
import type { ApiKeys } from './auth/api-keys.ts';
import type { DepositAddresses, SimulatedChainControls } from './chain-port.ts';
import type { CommandDoor } from './command-door.ts';
import type { Histories } from './history-port.ts';
import type { Sessions } from './auth/sessions.ts';
import type { SiweVerifier } from './auth/siwe.ts';
import type { SignInThrottle } from './rate-limit.ts';
import { reject } from '../core/errors.ts';
import { fail } from './errors.ts';

export type { Histories };

export interface GatewayContext {
  readonly settings: Settings;
  /** The only way to change state (command-door.ts): the in-process sequencer, or a remote core's door. */
  readonly sequencer: CommandDoor;
  /** Live state, read only through the core's query surface: the local core's, or a gateway replica's. */
  readonly core: CoreQueries;
  /** The history tables: read them through `histories(ctx)`, which waits until they are current. */
  readonly history: Histories;
  readonly siwe: SiweVerifier;
  readonly sessions: Sessions;
  readonly apiKeys: ApiKeys;
  /** New sessions per client address per hour (rate-limit.ts). */
  readonly signIns: SignInThrottle;
  /** Deposit addresses (chain-port.ts): the chain port of the service, or what a gateway knows of it. */
  readonly chain: DepositAddresses;
  /** Present when the embedded simulated chain is in use (admin deposit and reorg act on it). */
  readonly simulatedChain: SimulatedChainControls | null;
  /** performance.now() when the service started (monotonic: uptime never goes back with the system clock). */
  readonly startedAt: number;
  /** The service clock (the sequencer stamps commands with it; tests may drive it by hand). */
  now(): number;
  /** Wall clock minus service time while a step of the system clock is not taken, else 0 (runtime/steady-clock.ts). */
  clockSkewMs(): number;
}

/** Submits a command and waits until it is durable; a rejection becomes the matching API error. */
export async function execute<T extends CommandType>(ctx: GatewayContext, command: CommandOf<T>): Promise<ResultOf<T>> {
  const outcome = await ctx.sequencer.submit(command);
  if (!outcome.ok) fail(outcome);
  return outcome.result;
}

/**
 * The history tables once they hold every command acknowledged so far (the journal worker writes
 * them just after each commit): every history read goes through here, so a client reads back what
 * it was told is done. 503 UNAVAILABLE if the history can no longer follow the journal.
 */
export async function histories(ctx: GatewayContext): Promise<Histories> {
  try {
    await ctx.sequencer.historyBarrier();
  } catch {
    fail(reject('UNAVAILABLE', 'the history is not available; the exchange core has stopped'));
  }
  return ctx.history;
}
