/**
 * The signed-in account's options side, read every 2 s (the service has no private stream of
 * option positions or orders): GET /portfolio/me (the options bucket's balance, reserve, margin,
 * available funds, Greeks and positions valued at the mark) and GET /options/orders/open. `refresh`
 * reads both at once, after an order or a cancel.
 */
import type { ExchangeClient, ResponseOf } from '../../../../sdk/src/index.ts';
import { usePoll } from '../../lib/use-poll.ts';

export type Portfolio = ResponseOf<'/portfolio/me', 'get'>;
export type OptionFunds = Portfolio['options'];
export type OptionPosition = OptionFunds['positions'][number];
export type OpenOrder = ResponseOf<'/options/orders/open', 'get'>[number];

export interface OptionAccount {
  readonly funds: OptionFunds | null;
  readonly orders: readonly OpenOrder[] | null;
  refresh(): void;
}

export function useOptionAccount(client: ExchangeClient | null, address: string | null): OptionAccount {
  const key = address ?? '';
  const [portfolio, refreshPortfolio] = usePoll(client === null ? null : () => client.get('/portfolio/me'), 2_000, `portfolio ${key}`);
  const [orders, refreshOrders] = usePoll(client === null ? null : () => client.get('/options/orders/open'), 2_000, `orders ${key}`);
  return {
    funds: client === null ? null : portfolio?.options ?? null,
    orders: client === null ? null : orders,
    refresh() {
      refreshPortfolio();
      refreshOrders();
    },
  };
}
