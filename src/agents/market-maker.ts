/**
 * The reference market maker: makes the embedded default a live market. It is an ordinary client
 * of the gateway's own surface — it signs in with SIWE, reads markets, the option board and its
 * positions over the API, and quotes every listed market through the same bulk-quote endpoints any
 * client uses (`app.inject`: the full route, validation, auth and rate-limit path, without a
 * socket), each refresh replacing its previous ladder atomically (`cancelAll`).
 *
 * Funding is an operator action done once: USDC deposited through the simulated chain and spread
 * over its buckets, spot inventory granted from the treasury (a ledger movement, `treasury.grant`).
 *
 * Risk: ladders are skewed against inventory and a side is dropped at the inventory limit; a
 * market whose mark (or, for options, forward) is unavailable gets its quotes pulled and is not
 * quoted until its inputs are fresh again. Parameters: config/market-maker.ts.
 */
import { privateKeyToAccount } from 'viem/accounts';
import type { Hex } from 'viem';
import { createSiweMessage } from 'viem/siwe';
import { formatDecimal, fx, roundTo } from '../core/money.ts';
import type { MarketMakerConfig } from '../config/market-maker.ts';
import type { TypedApp } from '../gateway/app.ts';
import type { GatewayContext } from '../gateway/context.ts';
import { ladder, optionQuote, priceString, type Level } from './quoting.ts';

interface Reply {
  readonly status: number;
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

interface MarketRow {
  id: string;
  marketType: 'perp' | 'future' | 'spot';
  underlying: string;
  markPrice: string | null;
  indexPrice: string | null;
  priceDecimals: number;
  sizeDecimals: number;
  tickSize: string;
  expiry?: string;
}

const YEAR = 365 * 86_400_000;

export class MarketMaker {
  private token = '';
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private readonly quotedAt = new Map<string, { price: number; at: number }>();
  private readonly pulled = new Set<string>();
  private optionCursor = 0;

  constructor(
    private readonly app: TypedApp,
    private readonly ctx: GatewayContext,
    private readonly cfg: MarketMakerConfig,
    private readonly privateKey: Hex,
    private readonly log: (message: string, detail?: unknown) => void,
  ) {}

  get address(): string {
    return privateKeyToAccount(this.privateKey).address;
  }

  async start(): Promise<void> {
    await this.signIn();
    await this.ensureFunding();
    this.timer = setInterval(() => void this.cycle(), this.cfg.cycleMs);
    this.timer.unref();
    void this.cycle();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private async api(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Reply> {
    const r = await this.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.statusCode, body: r.body.length > 0 ? JSON.parse(r.body) : null };
  }

  private async signIn(): Promise<void> {
    const account = privateKeyToAccount(this.privateKey);
    const nonce = await this.api('POST', '/auth/nonce', { walletAddress: account.address });
    const { domain, uri, chainId } = nonce.body;
    const message = createSiweMessage({
      domain, uri, chainId, nonce: nonce.body.nonce, address: account.address, version: '1', issuedAt: new Date(),
      statement: 'Reference market maker',
    });
    const signed = await this.api('POST', '/auth/siwe', { message, signature: await account.signMessage({ message }) });
    if (signed.status !== 200) throw new Error(`market maker sign-in failed: ${JSON.stringify(signed.body)}`);
    this.token = signed.body.token;
  }

  /** Deposits and spreads USDC once, and tops up spot inventory, so quotes are always funded. */
  private async ensureFunding(): Promise<void> {
    const owner = this.address.toLowerCase();
    const balance = (await this.api('GET', '/wallet/balance')).body;
    if (fx(balance.onchainDepositTotal) === 0n && fx(balance.pendingDepositTotal) === 0n) {
      if (this.ctx.simulatedChain === null) throw new Error('the market maker funds itself on the simulated chain');
      this.ctx.simulatedChain.deposit(owner, fx(this.cfg.usdcDeposit));
    }
    const deadline = Date.now() + 60_000;
    while (fx((await this.api('GET', '/wallet/balance')).body.onchainDepositTotal) === 0n) {
      if (Date.now() > deadline) throw new Error('market maker deposit was not credited within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const now = (await this.api('GET', '/wallet/balance')).body;
    for (const [bucket, key] of [['perps', 'perpsBalance'], ['options', 'optionsBalance'], ['spot', 'spotBalance']] as const) {
      const want = fx(this.cfg.buckets[bucket]);
      const have = fx(now[key]);
      if (have < want) await this.api('POST', '/wallet/transfer', { from: 'wallet', to: bucket, amount: formatAmount(want - have) });
    }
    const assets = (await this.api('GET', '/wallet/assets')).body as { asset: string; bucket: string; total: string }[];
    for (const [asset, target] of Object.entries(this.cfg.spotInventory)) {
      const have = fx(assets.find((a) => a.asset === asset && a.bucket === 'spot')?.total ?? '0');
      const want = fx(target);
      if (have < want) await this.ctx.sequencer.submit({ type: 'treasury.grant', account: owner, asset, amount: want - have });
    }
  }

  private async cycle(): Promise<void> {
    if (this.busy || !this.ctx.sequencer.isHealthy()) return;
    this.busy = true;
    try {
      const markets = (await this.api('GET', '/perps/markets')).body as MarketRow[];
      const positions = (await this.api('GET', '/perps/positions')).body as { marketId: string; side: string; size: string; marginMode: string }[];
      for (const m of markets) await this.quoteLinear(m, positions);
      await this.quoteOptions(markets);
    } catch (error) {
      this.log('market maker cycle failed', error);
    } finally {
      this.busy = false;
    }
  }

  private async quoteLinear(m: MarketRow, positions: { marketId: string; side: string; size: string; marginMode: string }[]): Promise<void> {
    const ref = m.marketType === 'spot' ? m.indexPrice : m.markPrice;
    if (ref === null) return this.pull(m.id, m.marketType === 'spot' ? '/quotes/bulk' : '/perps/quotes/bulk');
    const price = Number(ref);
    const last = this.quotedAt.get(m.id);
    const now = this.ctx.now();
    const moved = last === undefined || Math.abs(price / last.price - 1) * 10_000 >= this.cfg.moveBps;
    if (!moved && now - last.at < this.cfg.linearRefreshMs) return;
    const params = m.marketType === 'spot' ? this.cfg.spot[m.underlying] : this.cfg.perp[m.underlying];
    if (params === undefined) return;
    const p = positions.find((x) => x.marketId === m.id && x.marginMode === 'cross');
    const position = p === undefined ? 0 : Number(p.size) * (p.side === 'long' ? 1 : -1);
    const levels = ladder(price, position, params, Number(m.tickSize));
    const path = m.marketType === 'spot' ? '/quotes/bulk' : '/perps/quotes/bulk';
    const r = await this.api('POST', path, { marketId: m.id, quoteId: 'mm', cancelAll: true, quotes: this.wire(levels, m.priceDecimals, m.sizeDecimals) });
    if (r.status === 200) {
      this.quotedAt.set(m.id, { price, at: now });
      this.pulled.delete(m.id);
    }
  }

  /** Quotes a slice of the option instruments each cycle, so each is refreshed every optionRefreshMs. */
  private async quoteOptions(markets: MarketRow[]): Promise<void> {
    const instruments: { id: string; underlying: string; expiry: string; strike: string; type: 'call' | 'put'; priceDecimals: number; sizeDecimals: number; tickSize: string }[] =
      (await this.api('GET', '/options/instruments')).body ?? [];
    if (instruments.length === 0) return;
    const positions = new Map<string, number>();
    for (const p of (await this.api('GET', '/positions/me')).body as { marketId: string; side: string; size: string }[]) {
      positions.set(p.marketId, Number(p.size) * (p.side === 'long' ? 1 : -1));
    }
    const forwardOf = this.forwards(markets);
    const per = Math.max(1, Math.ceil((instruments.length * this.cfg.cycleMs) / this.cfg.optionRefreshMs));
    const now = this.ctx.now();
    for (let n = 0; n < per; n++) {
      const i = instruments[this.optionCursor++ % instruments.length]!;
      const expiry = Date.parse(i.expiry);
      const forward = forwardOf(i.underlying, expiry);
      const view = this.cfg.vol[i.underlying];
      if (forward === null || view === undefined || expiry <= now) {
        await this.pull(i.id, '/quotes/bulk');
        continue;
      }
      const levels = optionQuote(
        { forward, strike: Number(i.strike), T: (expiry - now) / YEAR, type: i.type, view, position: positions.get(i.id) ?? 0, tick: Number(i.tickSize) },
        this.cfg.option,
      );
      const r = await this.api('POST', '/quotes/bulk', { marketId: i.id, quoteId: 'mm', cancelAll: true, quotes: this.wire(levels, i.priceDecimals, i.sizeDecimals) });
      if (r.status === 200) this.pulled.delete(i.id);
    }
  }

  /** Forward per (underlying, expiry): the dated future's mark when quoted, else the index. */
  private forwards(markets: MarketRow[]): (underlying: string, expiry: number) => number | null {
    const futures = new Map<string, number>();
    const index = new Map<string, number>();
    for (const m of markets) {
      if (m.indexPrice !== null) index.set(m.underlying, Number(m.indexPrice));
      if (m.marketType === 'future' && m.markPrice !== null && m.expiry !== undefined) {
        futures.set(`${m.underlying}:${Date.parse(m.expiry)}`, Number(m.markPrice));
      }
    }
    return (underlying, expiry) => futures.get(`${underlying}:${expiry}`) ?? index.get(underlying) ?? null;
  }

  /** Cancels the maker's quotes on a market whose inputs are unavailable (once). */
  private async pull(marketId: string, path: string): Promise<void> {
    if (this.pulled.has(marketId)) return;
    const r = await this.api('POST', path, { marketId, quoteId: 'mm', cancelAll: true, quotes: [] });
    if (r.status === 200) {
      this.pulled.add(marketId);
      this.quotedAt.delete(marketId);
    }
  }

  private wire(levels: Level[], priceDecimals: number, sizeDecimals: number) {
    return levels
      .map((l) => ({ side: l.side, price: priceString(l.price, priceDecimals), quantity: priceString(floorTo(l.quantity, sizeDecimals), sizeDecimals), postOnly: true }))
      .filter((l) => fx(l.quantity) > 0n && fx(l.price) > 0n);
  }
}

function floorTo(x: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.floor(x * f + 1e-9) / f;
}

/** A USDC amount as a wire decimal at the asset's 6 decimals (rounded down). */
function formatAmount(amount: bigint): string {
  return formatDecimal(roundTo(amount, 6, 'floor'));
}
