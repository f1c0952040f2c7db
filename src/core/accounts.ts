/**
 * Accounts: one per wallet address (lower-case 0x hex). The core gives each a small integer id
 * on first sight, in command order, so ids are identical on every replay and can serve as the
 * order book's owner key. Identity (SIWE, sessions, API keys) lives in the gateway; the core only
 * ever sees an address that the gateway has already authenticated.
 */
import { fail } from './assert.ts';

export interface Account {
  readonly id: number;
  readonly address: string;
  readonly createdAt: number;
}

const ADDRESS = /^0x[0-9a-f]{40}$/;

export class Accounts {
  private readonly byAddress = new Map<string, Account>();
  private readonly byId: Account[] = [];

  /** The account for `address`, opened now if it is new. */
  open(address: string, now: number): Account {
    const existing = this.byAddress.get(address);
    if (existing !== undefined) return existing;
    if (!ADDRESS.test(address)) fail(`account address must be lower-case 0x hex: ${address}`);
    const account: Account = { id: this.byId.length + 1, address, createdAt: now };
    this.byAddress.set(address, account);
    this.byId.push(account);
    return account;
  }

  find(address: string): Account | undefined {
    return this.byAddress.get(address);
  }

  byNumber(id: number): Account | undefined {
    return this.byId[id - 1];
  }

  count(): number {
    return this.byId.length;
  }

  /**
   * Forgets the accounts opened after the first `count` (those of a command that was rejected):
   * rejected commands are not journaled, so an account they opened would get a different id — or
   * none — on replay. Ids must depend only on accepted commands.
   */
  truncate(count: number): void {
    while (this.byId.length > count) this.byAddress.delete(this.byId.pop()!.address);
  }

  all(): readonly Account[] {
    return this.byId;
  }
}
