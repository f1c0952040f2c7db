/**
 * A seeded, in-process venue that drives one `Exchange` through every kind of state it can hold, for
 * the snapshot tests and the state layout manifest (scripts/state-layout.ts): deposits, transfers
 * and withdrawals; perps and dated futures (cross and isolated, some isolated at 5x, resting, IOC
 * and market orders, take-profit/stop-loss, stops, reduce-only closes, amends, quote ladders, a
 * liquidation after an index jump); spot orders; option quote ladders from a maker with market-maker protection, user option
 * trades, resting option sells, amends and two-leg strategies; dead-man switches armed, disarmed
 * and fired, and cancels of everything; and time passing through funding
 * times and expiries. Time advances a few seconds per action with the index fed from three sources
 * and the clock ticking, and now and then jumps by up to an hour.
 *
 * Every accepted command is kept with its time (`journal`), so a test can replay it into a fresh
 * core. Rejections are expected (random orders) and ignored.
 */
import { coreConfig } from '../../src/config/core.ts';
import { mulberry32 } from '../../src/adapters/feed/price-model.ts';
import { optionInstruments } from '../../src/core/clob/views.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type CoreConfig } from '../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { formatDecimal, fromFloat, fx, type Fixed } from '../../src/core/money.ts';
import { black76 } from '../../src/pricing/black76.ts';

export interface TimedCommand {
  readonly command: Command;
  readonly ts: number;
}

export const RICH_T0 = Date.UTC(2026, 10, 20, 6, 0, 0);
const YEAR = 365 * 86_400_000;
const addr = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;
const MAKER = addr(0x900);
const OPTION_MAKER = addr(0x901);
const USERS = Array.from({ length: 8 }, (_, i) => addr(0x100 + i));

export function richConfig(): CoreConfig {
  return coreConfig({ depositConfirmations: 1 });
}

export class RichVenue {
  readonly ex: Exchange;
  readonly journal: TimedCommand[] = [];
  now = RICH_T0;
  private readonly rand: () => number;
  private readonly spot = { BTC: 97_000, ETH: 3_500 };
  private deposits = 0;

  constructor(seed: number, config: CoreConfig = richConfig()) {
    this.ex = new Exchange(config);
    this.rand = mulberry32(seed);
  }

  /** Executes (and keeps, when accepted) one command at the venue's time. */
  apply(command: Command): boolean {
    const outcome = this.ex.execute(command, this.now);
    if (outcome.ok) this.journal.push({ command, ts: this.now });
    return outcome.ok;
  }

  /** Funds every account and starts the feed; then `steps` random actions. */
  run(steps: number): this {
    this.open();
    for (let i = 0; i < steps; i++) this.step();
    return this;
  }

  open(): void {
    this.feed();
    this.apply({ type: 'clock.tick' });
    for (const a of [MAKER, OPTION_MAKER, ...USERS]) {
      const big = a === MAKER || a === OPTION_MAKER;
      this.deposit(a, big ? '50000000' : '400000');
      for (const to of ['perps', 'options', 'spot'] as const) {
        const amount = fx(big ? '10000000' : '100000');
        this.apply({ type: 'wallet.transfer', account: a, from: 'wallet', to, amount, clientId: `open-${to}` });
      }
      this.apply({ type: 'treasury.grant', account: a, asset: 'BTC', amount: fx(big ? '100' : '2') });
    }
    this.apply({
      type: 'clob.mmp_set', account: OPTION_MAKER, underlying: 'BTC',
      config: { windowMs: 5_000, frozenMs: 2_000, quantityLimit: fx('3'), deltaLimit: null, vegaLimit: null },
    });
  }

  step(): void {
    const r = this.rand();
    this.now += r < 0.02 ? Math.floor(this.rand() * 3_600_000) : 500 + Math.floor(this.rand() * 4_000);
    this.feed();
    this.apply({ type: 'clock.tick' });
    const pick = this.rand();
    if (pick < 0.18) this.linearQuote();
    else if (pick < 0.36) this.optionQuote();
    else if (pick < 0.5) this.perpOrder();
    else if (pick < 0.62) this.optionOrder();
    else if (pick < 0.68) this.spotOrder();
    else if (pick < 0.72) this.strategy();
    else if (pick < 0.76) this.amend();
    else if (pick < 0.82) this.cancelSome();
    else if (pick < 0.86) this.closeSome();
    else if (pick < 0.9) this.wallet();
    else if (pick < 0.92) this.jump();
    else if (pick < 0.94) this.deadMan();
    // the rest: time passes
  }

  private feed(): void {
    for (const u of ['BTC', 'ETH'] as const) {
      this.spot[u] *= 1 + (this.rand() - 0.5) * 0.002;
      const observations = ['a', 'b', 'c'].map((source, i) => ({
        source, price: this.price(this.spot[u] * (1 + (i - 1) * 0.0002), 2), ts: this.now,
      }));
      this.apply({ type: 'prices.observe', underlying: u, observations });
    }
  }

  private price(x: number, decimals: number): Fixed {
    return fromFloat(x, decimals, 'halfUp')!;
  }

  private user(): string {
    return USERS[Math.floor(this.rand() * USERS.length)]!;
  }

  private choose<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.rand() * xs.length)];
  }

  private request(marketId: string, side: 0 | 1, quantity: Fixed, price: Fixed | null, extra: Partial<OrderRequest> = {}): OrderRequest {
    return {
      marketId, side, type: price === null ? 'market' : 'limit', quantity, price,
      timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross',
      ...PLAIN_ORDER, ...extra,
    };
  }

  private linearMarkets(): string[] {
    return [...this.ex.linear.markets.values()].filter((m) => m.status === 'open').map((m) => m.spec.id);
  }

  private mark(marketId: string): number {
    const m = this.ex.linear.markets.get(marketId)!;
    const mark = this.ex.linear.markAt(m, this.now);
    return mark === null ? this.spot[m.spec.underlying as 'BTC' | 'ETH'] : Number(formatDecimal(mark));
  }

  private linearQuote(): void {
    const id = this.choose(this.linearMarkets());
    if (id === undefined) return;
    const mid = this.mark(id);
    const tick = id.startsWith('BTC') ? 0.1 : 0.01;
    const size = id.startsWith('BTC') ? '0.5' : '5';
    const levels: OrderRequest[] = [];
    for (let k = 1; k <= 3; k++) {
      for (const side of [0, 1] as const) {
        const px = Math.round((mid * (1 + (side === 0 ? -1 : 1) * k * 0.0004)) / tick) * tick;
        levels.push(this.request(id, side, fx(size), this.price(px, 2), { postOnly: true, quoteId: 'q' }));
      }
    }
    this.apply({ type: 'perp.quote', account: MAKER, quote: { marketId: id, quoteId: 'q', cancelAll: true, replaceQuoteId: null, levels } });
  }

  private perpOrder(): void {
    const id = this.choose(this.linearMarkets());
    if (id === undefined) return;
    const account = this.user();
    const side = this.rand() < 0.5 ? 0 : 1;
    const qty = fx(id.startsWith('BTC') ? '0.05' : '0.5');
    const mark = this.mark(id);
    const tick = id.startsWith('BTC') ? 0.1 : 0.01;
    const marginMode = this.rand() < 0.3 ? 'isolated' : 'cross';
    const kind = this.rand();
    let request: OrderRequest;
    if (kind < 0.35) request = this.request(id, side, qty, null, { marginMode });
    else if (kind < 0.6) {
      const px = Math.round((mark * (1 + (side === 0 ? -1 : 1) * 0.003)) / tick) * tick;
      request = this.request(id, side, qty, this.price(px, 2), { marginMode, clientOrderId: `c${this.journal.length}` });
    } else if (kind < 0.8) {
      const tp = Math.round((mark * (side === 0 ? 1.02 : 0.98)) / tick) * tick;
      const sl = Math.round((mark * (side === 0 ? 0.98 : 1.02)) / tick) * tick;
      request = this.request(id, side, qty, null, { marginMode, takeProfitPrice: this.price(tp, 2), stopLossPrice: this.price(sl, 2) });
    } else {
      const stop = Math.round((mark * (side === 0 ? 1.004 : 0.996)) / tick) * tick;
      request = this.request(id, side, qty, null, { marginMode, stopPrice: this.price(stop, 2) });
    }
    // Every third isolated order chooses 5x (no extra draw: the random stream stays as it was).
    if (marginMode === 'isolated' && this.journal.length % 3 === 0) request = { ...request, leverage: fx('5') };
    this.apply({ type: 'perp.place', account, request });
  }

  private openOptions(): ReturnType<typeof optionInstruments> {
    return optionInstruments(this.ex.clob).filter((i) => i.status === 'open' && i.expiry > this.now + 60_000);
  }

  private optionValue(i: ReturnType<typeof optionInstruments>[number]): number {
    const F = this.spot[i.underlying as 'BTC' | 'ETH'];
    const T = (i.expiry - this.now) / YEAR;
    return black76({ F, K: Number(formatDecimal(i.strike)), T, sigma: 0.6, type: i.type }).price;
  }

  private optionQuote(): void {
    const i = this.choose(this.openOptions());
    if (i === undefined) return;
    const tick = i.priceDecimals === 1 ? 0.1 : 0.01;
    const fair = Math.max(this.optionValue(i), 5 * tick);
    const levels: OrderRequest[] = [];
    for (const [side, k] of [[0, -1], [1, 1]] as const) {
      const px = Math.max(tick, Math.round((fair * (1 + k * 0.04)) / tick) * tick);
      levels.push(this.request(i.id, side, fx('1'), this.price(px, i.priceDecimals), { postOnly: true, quoteId: 'mm' }));
    }
    this.apply({ type: 'clob.quote', account: OPTION_MAKER, quote: { marketId: i.id, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels } });
  }

  private optionOrder(): void {
    const i = this.choose(this.openOptions());
    if (i === undefined) return;
    const side = this.rand() < 0.5 ? 0 : 1;
    const tick = i.priceDecimals === 1 ? 0.1 : 0.01;
    const fair = Math.max(this.optionValue(i), 5 * tick);
    const resting = this.rand() < 0.3;
    const px = Math.round((fair * (side === 0 ? (resting ? 0.9 : 1.1) : resting ? 1.1 : 0.9)) / tick) * tick;
    const request = this.request(i.id, side, fx('0.5'), this.price(Math.max(px, tick), i.priceDecimals), resting ? {} : { timeInForce: 'ioc' });
    this.apply({ type: 'clob.place', account: this.user(), request });
  }

  private spotOrder(): void {
    const side = this.rand() < 0.5 ? 0 : 1;
    const px = Math.round(this.spot.BTC * (1 + (side === 0 ? 1 : -1) * 0.001) * 10) / 10;
    const request = this.request('BTC-USDC', side, fx('0.01'), this.price(px, 1), this.rand() < 0.5 ? { timeInForce: 'ioc' } : {});
    this.apply({ type: 'clob.place', account: this.rand() < 0.3 ? MAKER : this.user(), request });
  }

  private strategy(): void {
    const options = this.openOptions();
    const a = this.choose(options);
    const b = this.choose(options.filter((o) => o.expiry === a?.expiry && o.type === a?.type && o.id !== a?.id));
    if (a === undefined || b === undefined) return;
    const tick = a.priceDecimals === 1 ? 0.1 : 0.01;
    const leg = (i: typeof a, side: 0 | 1) => ({
      marketId: i.id, side, quantity: fx('0.5'),
      price: this.price(Math.max(tick, Math.round((this.optionValue(i) * (side === 0 ? 1.1 : 0.9)) / tick) * tick), i.priceDecimals),
    });
    this.apply({
      type: 'clob.strategy', account: this.user(),
      strategy: { name: 'spread', allOrNone: this.rand() < 0.5, cancelOnFailure: true, legs: [leg(a, 0), leg(b, 1)] },
    });
  }

  private amend(): void {
    // Every other amend is of a perp order (no extra draw: the random stream stays as it was).
    if (this.journal.length % 2 === 0) return this.amendPerp();
    const account = this.ex.accounts.find(this.user());
    const order = account === undefined ? undefined : this.choose([...(this.ex.clob.findAccount(account.id)?.orders.values() ?? [])]);
    if (order === undefined || account === undefined) return;
    const price = order.request.price === null ? null : order.request.price + order.market.units.tick;
    this.apply({ type: 'clob.modify', account: account.address, orderId: order.id, price, quantity: null });
  }

  /** A resting perp order one tick further from the book, or half its size (time priority kept). */
  private amendPerp(): void {
    const account = this.ex.accounts.find(this.user());
    const live = account === undefined ? [] : [...(this.ex.linear.findAccount(account.id)?.orders.values() ?? [])];
    const order = this.choose(live.filter((o) => o.level !== null));
    if (order === undefined || account === undefined) return;
    const { units } = order.market;
    const away = order.side === 0 ? -units.tick : units.tick;
    const half = units.size(Math.max(order.filledLots + 1, Math.ceil(order.originalLots / 2)));
    const price = (this.journal.length / 2) % 2 === 0 ? order.request.price! + away : null;
    this.apply({ type: 'perp.modify', account: account.address, orderId: order.id, price, quantity: price === null ? half : null });
  }

  private cancelSome(): void {
    const address = this.user();
    const account = this.ex.accounts.find(address);
    if (account === undefined) return;
    if (this.rand() < 0.5) {
      const order = this.choose([...(this.ex.linear.findAccount(account.id)?.orders.values() ?? [])]);
      if (order !== undefined) this.apply({ type: 'perp.cancel', account: address, orderId: order.id });
    } else {
      const order = this.choose([...(this.ex.clob.findAccount(account.id)?.orders.values() ?? [])]);
      if (order !== undefined) this.apply({ type: 'clob.cancel', account: address, orderId: order.id });
    }
  }

  private closeSome(): void {
    const address = this.user();
    const account = this.ex.accounts.find(address);
    const p = account === undefined ? undefined : this.choose([...(this.ex.linear.findAccount(account.id)?.positions.values() ?? [])].filter((x) => x.size !== 0));
    if (p === undefined) return;
    this.apply({
      type: 'perp.close', account: address,
      close: { marketId: p.market.spec.id, marginMode: p.marginMode, quantity: null, type: 'market', price: null, timeInForce: 'ioc' },
    });
  }

  private wallet(): void {
    const a = this.user();
    const r = this.rand();
    if (r < 0.4) this.apply({ type: 'wallet.transfer', account: a, from: 'perps', to: 'wallet', amount: fx('10'), clientId: `t${this.journal.length}` });
    else if (r < 0.7) this.apply({ type: 'wallet.withdraw', account: a, amount: fx('5'), clientId: `w${this.journal.length}` });
    else this.deposit(a, '1000');
  }

  private deposit(account: string, amount: string): void {
    const txHash = `0x${(++this.deposits).toString(16).padStart(64, '0')}`;
    this.apply({ type: 'chain.deposit_observed', txHash, account, amount: fx(amount), confirmations: 1 });
  }

  /** Dead-man switches armed (fired by a later tick when not re-armed), disarmed, or a cancel of everything. */
  private deadMan(): void {
    const account = this.user();
    const r = this.rand();
    if (r < 0.6) this.apply({ type: 'orders.cancel_all_after', account, timeoutMs: 5_000 + Math.floor(this.rand() * 20_000) });
    else if (r < 0.8) this.apply({ type: 'orders.cancel_all_after', account, timeoutMs: 0 });
    else this.apply({ type: 'orders.cancel_all', account });
  }

  /** An index jump: liquidations, triggers and MMP trips follow. */
  private jump(): void {
    const u = this.rand() < 0.7 ? 'BTC' : 'ETH';
    this.spot[u] *= this.rand() < 0.5 ? 0.9 : 1.1;
  }
}
