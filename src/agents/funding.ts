/**
 * The operator's side of funding the reference market maker. The maker is an ordinary client: it
 * cannot mint money. What it lacks (a first USDC deposit, spot inventory below its targets) it asks
 * of a `Funder`, and the operator acts, visibly:
 *
 * - with ADMIN_TOKEN set, through the admin surface over HTTP like any operator tool
 *   (POST /admin/chain/deposits, POST /admin/treasury/grant, with the token the service was given);
 * - without it (no /admin routes exist), by the service's own start-up operator step: the same two
 *   actions, a deposit on the simulated chain and a `treasury.grant` command, taken by the
 *   composition root (service.ts), which alone holds the chain and the sequencer.
 *
 * Either way each action is logged as an operator action naming the account, asset and amount, and
 * the grant is a journaled ledger movement from the treasury like any other.
 */
import { ExchangeClient } from '../../sdk/src/index.ts';

export interface Funder {
  /** How the operator acts (for the log): `admin-http` or `service`. */
  readonly via: 'admin-http' | 'service';
  /** Deposits `amount` USDC from `address` on the chain (credited after its confirmations). */
  deposit(address: string, amount: string): Promise<void>;
  /** Credits `amount` of spot `asset` to `address` from the treasury. */
  grant(address: string, asset: string, amount: string): Promise<void>;
}

export type OperatorLog = (message: string, detail: Record<string, unknown>) => void;

/** Funds through the admin HTTP routes of the service at `baseUrl`, with the operator's token. */
export function adminHttpFunder(baseUrl: string, adminToken: string, log: OperatorLog): Funder {
  const operator = new ExchangeClient({ baseUrl, retry: { maxAttempts: 3 } });
  const as = { anonymous: true, headers: { authorization: `Bearer ${adminToken}` } } as const;
  return {
    via: 'admin-http',
    async deposit(address, amount) {
      const r = await operator.post('/admin/chain/deposits', { body: { walletAddress: address, amount } }, as);
      log('operator action: market maker funded with a USDC deposit (POST /admin/chain/deposits)', { address, amount, txHash: r.txHash });
    },
    async grant(address, asset, amount) {
      await operator.post('/admin/treasury/grant', { body: { walletAddress: address, asset, amount } }, as);
      log('operator action: market maker granted spot inventory (POST /admin/treasury/grant)', { address, asset, amount });
    },
  };
}

/** The service's start-up operator step, for a service without the admin surface. */
export function serviceFunder(actions: {
  deposit(address: string, amount: string): string;
  grant(address: string, asset: string, amount: string): Promise<void>;
}, log: OperatorLog): Funder {
  return {
    via: 'service',
    async deposit(address, amount) {
      const txHash = actions.deposit(address, amount);
      log('operator action (service start-up): market maker funded with a USDC deposit', { address, amount, txHash });
    },
    async grant(address, asset, amount) {
      await actions.grant(address, asset, amount);
      log('operator action (service start-up): market maker granted spot inventory', { address, asset, amount });
    },
  };
}
