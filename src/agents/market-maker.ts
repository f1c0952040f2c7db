/**
 * The reference market maker: makes the embedded default a live market. It is a client like any
 * other: it uses the SDK (sdk/src) over HTTP, to the service's own listening address, with its own
 * account — it signs in with SIWE, reads markets, the option board and its positions over the API,
 * and quotes every listed market through the same bulk-quote endpoints any client uses, each
 * refresh replacing its previous ladder atomically (`cancelAll`). It imports nothing of the gateway
 * or the core: what it knows of the service is what the API answers, plus the service clock.
 *
 * Funding is an operator action (agents/funding.ts): the maker asks its `Funder` for what it lacks
 * — a first USDC deposit, spot inventory below its targets — and the operator deposits and grants
 * through the admin surface (ADMIN_TOKEN set) or by the service's start-up step (no admin surface),
 * logged either way; the maker then spreads its USDC over its buckets with ordinary transfers.
 *
 * Risk: ladders are skewed against inventory and a side is dropped at the inventory limit (perps
 * and futures: the cross position; spot: the base inventory against its funded target; options:
 * the position per instrument); a market whose mark (or, for options, forward) is unavailable gets
 * its quotes pulled in the same cycle and is not quoted until its inputs are fresh again.
 *
 * Cadence (agents/requote.ts): a cycle every `cycleMs` prices each ladder from an anchor — a linear
 * market's mark (spot: index), an option expiry's forward and time — held until it moved `moveBps`
 * (`optionMoveBps`) or is `linearRefreshMs` (`optionRefreshMs`) old, and sends a ladder only when it
 * differs from the one last sent by a tick in some price or a lot in some size (a new anchor, a
 * changed inventory), when it is a first quote (or the first after a pull), or as a heartbeat once
 * the refresh interval has passed since it was last sent: every quote is a journaled command and
 * history rows, so unchanged ladders are not re-sent. Requests run `concurrency` at a time, so one
 * group commit covers many of them and a full option board is quoted within a second of the maker
 * being funded.
 * The maker paces itself on the order-action budget the venue reports (X-RateLimit-* headers):
 * optional option re-quotes (changed ladders first, then heartbeats) stop while less than
 * `orderBudgetReserve` of it is left, so pulls and first quotes are never refused for want of budget.
 * A rejected level (the reply lists it) is logged once per market until that market quotes cleanly.
 * Parameters: config/market-maker.ts.
 */
import { privateKeyToAccount } from 'viem/accounts';
import type { Hex } from 'viem';
import { ApiError, ExchangeClient, type ResponseInfo } from '../../sdk/src/index.ts';
import { formatDecimal, fx, roundTo } from '../core/money.ts';
import type { MarketMakerConfig } from '../config/market-maker.ts';
import { carryForward } from '../pricing/forward.ts';
import type { Funder } from './funding.ts';
import { ladder, optionQuote, priceString, type Level, type VolView } from './quoting.ts';
import { Anchors, SentQuotes, type Anchor, type WireLevel } from './requote.ts';

export interface MarketMakerOptions {
  readonly privateKey: Hex;
  /** The service clock: anchors and times to expiry are taken on it. */
  readonly now: () => number;
  readonly log: (message: string, detail?: unknown) => void;
}

/** Where the maker trades and who funds it, known once the service listens. */
export interface MakerVenue {
  /** The service's own listening address, e.g. http://127.0.0.1:8080. */
  readonly baseUrl: string;
  readonly funder: Funder;
}

interface PositionRow {
  marketId: string;
  side: string;
  size: string;
  marginMode: string;
}

interface AssetRow {
  asset: string;
  bucket: string;
  total: string;
}

interface InstrumentRow {
  id: string;
  underlying: string;
  expiry: string;
  strike: string;
  type: 'call' | 'put';
  priceDecimals: number;
  sizeDecimals: number;
  tickSize: string;
  stepSize: string;
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
  stepSize: string;
  expiry?: string;
}

const YEAR = 365 * 86_400_000;

/** What an operator sees of the maker (GET /metrics): read-only figures, nothing to act on it. */
export interface MarketMakerStatus {
  /** Signed in and funded: cycles run every `cycleMs`. */
  readonly running: boolean;
  /** Service time (ms) `start()` was called, or null before. */
  readonly startedAt: number | null;
  /** Service time (ms) the last cycle that ran to its end began, or null before the first. */
  readonly lastCycleAt: number | null;
  /** Cycles that ended in an error (each is logged). */
  readonly cycleFailures: number;
  /** Markets and option instruments whose ladder the maker last sent holds a level. */
  readonly marketsQuoted: number;
}

type QuotePath = '/perps/quotes/bulk' | '/quotes/bulk';

/** Thrown by a request attempted after `stop()`: the maker winds down without touching the venue. */
class Stopped extends Error {}

export class MarketMaker {
  private client: ExchangeClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private stopped = false;
  /** The start-up (sign-in and funding) and the cycle in progress, awaited by `stop()`. */
  private starting: Promise<void> = Promise.resolve();
  private running: Promise<void> = Promise.resolve();
  /** What each ladder is priced from: a linear market's reference, an option expiry's forward. */
  private readonly anchors = new Anchors();
  /** The ladder last sent to each market (none after a pull). */
  private readonly sent = new SentQuotes();
  private readonly pulled = new Set<string>();
  /** Markets whose last quote had a rejected level (logged once until a clean quote). */
  private readonly warned = new Set<string>();
  private orderBudget: { limit: number; remaining: number; resetAt: number } | null = null;
  private startedAt: number | null = null;
  private lastCycleAt: number | null = null;
  private cycleFailures = 0;

  private readonly now: () => number;
  private readonly log: (message: string, detail?: unknown) => void;

  constructor(
    private readonly cfg: MarketMakerConfig,
    private readonly options: MarketMakerOptions,
  ) {
    this.now = options.now;
    this.log = options.log;
  }

  get address(): string {
    return privateKeyToAccount(this.options.privateKey).address;
  }

  status(): MarketMakerStatus {
    return {
      running: this.timer !== null,
      startedAt: this.startedAt,
      lastCycleAt: this.lastCycleAt,
      cycleFailures: this.cycleFailures,
      marketsQuoted: this.sent.quoted(),
    };
  }

  /** Signs in over HTTP at `venue.baseUrl`, has itself funded once, then runs a cycle every `cycleMs`. */
  start(venue: MakerVenue): Promise<void> {
    this.startedAt = this.now();
    this.client = new ExchangeClient({
      baseUrl: venue.baseUrl,
      signer: this.options.privateKey,
      statement: 'Reference market maker',
      // A refused or failed request is not retried within a cycle: the next cycle decides afresh.
      retry: { maxAttempts: 1 },
      fetch: (input, init) => (this.stopped ? Promise.reject(new Stopped('the market maker is stopped')) : fetch(input, init)),
      onResponse: (r) => this.trackOrderBudget(r),
    });
    this.starting = (async () => {
      try {
        await this.venue().signIn();
        await this.ensureFunding(venue.funder);
      } catch (error) {
        if (this.stopped) return;
        throw error;
      }
      if (this.stopped) return;
      this.timer = setInterval(() => this.tick(), this.cfg.cycleMs);
      this.timer.unref();
      this.tick();
    })();
    return this.starting;
  }

  /**
   * Stops quoting: no request is sent after this call, and the promise resolves once the start-up
   * or cycle in progress has finished, so the service can close the gateway and the journal behind
   * it. Resting quotes stay in the book (they are durable state, like any client's orders).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([this.starting, this.running]);
  }

  private tick(): void {
    if (this.busy || this.stopped) return;
    this.running = this.cycle();
  }

  private venue(): ExchangeClient {
    if (this.client === null) throw new Error('the market maker is not started');
    return this.client;
  }

  /** The order-action budget as the venue reports it on every quote reply (X-RateLimit-*). */
  private trackOrderBudget(r: ResponseInfo): void {
    if (r.method !== 'POST' || !r.path.endsWith('/quotes/bulk')) return;
    const limit = Number(r.headers.get('x-ratelimit-limit'));
    const remaining = Number(r.headers.get('x-ratelimit-remaining'));
    const reset = Number(r.headers.get('x-ratelimit-reset'));
    if (Number.isFinite(limit) && Number.isFinite(remaining) && Number.isFinite(reset)) {
      this.orderBudget = { limit, remaining, resetAt: Date.now() + reset * 1000 };
    }
  }

  /** Order actions the maker may spend now on optional re-quotes, keeping a reserve for pulls. */
  private spareOrderActions(): number {
    const b = this.orderBudget;
    if (b === null) return Number.POSITIVE_INFINITY;
    const available = Date.now() >= b.resetAt ? b.limit : b.remaining;
    return Math.floor(available - this.cfg.orderBudgetReserve * b.limit);
  }

  /**
   * Has the operator deposit USDC once (and waits for it to be credited), spreads it over the
   * buckets, and has the operator top up spot inventory, so quotes are always funded.
   */
  private async ensureFunding(funder: Funder): Promise<void> {
    const client = this.venue();
    const owner = this.address.toLowerCase();
    const balance = await client.balance();
    if (fx(balance.onchainDepositTotal) === 0n && fx(balance.pendingDepositTotal) === 0n) {
      await funder.deposit(owner, this.cfg.usdcDeposit);
    }
    const deadline = Date.now() + 60_000;
    while (fx((await client.balance()).onchainDepositTotal) === 0n) {
      if (Date.now() > deadline) throw new Error('market maker deposit was not credited within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const now = await client.balance();
    const buckets = [
      ['perps', 'perpsBalance'], ['options', 'optionsBalance'], ['spot', 'spotBalance'],
    ] as const;
    for (const [bucket, key] of buckets) {
      const want = fx(this.cfg.buckets[bucket]);
      const have = fx(now[key]);
      if (have < want) {
        const amount = formatAmount(want - have);
        await client.transfer({ from: 'wallet', to: bucket, amount });
      }
    }
    const assets = (await client.assets()) as AssetRow[];
    for (const [asset, target] of Object.entries(this.cfg.spotInventory)) {
      const have = fx(assets.find((a) => a.asset === asset && a.bucket === 'spot')?.total ?? '0');
      const want = fx(target);
      if (have < want) await funder.grant(owner, asset, formatDecimal(want - have));
    }
  }

  private async cycle(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    const started = this.now();
    const client = this.venue();
    try {
      const [markets, positions, assets] = await Promise.all([
        client.markets() as Promise<MarketRow[]>,
        client.get('/perps/positions') as Promise<PositionRow[]>,
        client.assets() as Promise<AssetRow[]>,
      ]);
      await this.run(markets.map((m) => () => this.quoteLinear(m, this.inventory(m, positions, assets))));
      await this.quoteOptions(markets);
      this.lastCycleAt = started;
    } catch (error) {
      // Stopped, or the service unavailable (starting, or stopped by a fault): the next cycle tries again.
      if (this.stopped || (error instanceof ApiError && error.status === 503)) return;
      this.cycleFailures++;
      this.log('market maker cycle failed', error);
    } finally {
      this.busy = false;
    }
  }

  /**
   * The signed inventory the ladder is skewed against: the cross position of a perp or future, and
   * for a spot pair the base held in the spot bucket minus the funded target.
   */
  private inventory(m: MarketRow, positions: PositionRow[], assets: AssetRow[]): number {
    if (m.marketType === 'spot') {
      const held = assets.find((a) => a.asset === m.underlying && a.bucket === 'spot');
      const target = this.cfg.spotInventory[m.underlying];
      return held === undefined || target === undefined ? 0 : Number(held.total) - Number(target);
    }
    const p = positions.find((x) => x.marketId === m.id && x.marginMode === 'cross');
    return p === undefined ? 0 : Number(p.size) * (p.side === 'long' ? 1 : -1);
  }

  private async quoteLinear(m: MarketRow, position: number): Promise<void> {
    const path: QuotePath = m.marketType === 'spot' ? '/quotes/bulk' : '/perps/quotes/bulk';
    const now = this.now();
    const ref = this.reference(m, now);
    if (ref === null) return this.pull(m.id, path);
    const params = m.marketType === 'spot' ? this.cfg.spot[m.underlying] : this.cfg.perp[m.underlying];
    if (params === undefined) return;
    const anchor = this.anchors.hold(m.id, ref, now, this.cfg.moveBps, this.cfg.linearRefreshMs);
    const levels = ladder(anchor.price, position, params, Number(m.tickSize));
    const quotes = this.wire(levels, m.priceDecimals, m.sizeDecimals);
    const due = this.sent.due(m.id, quotes, now, this.cfg.linearRefreshMs, fx(m.tickSize), fx(m.stepSize));
    if (due !== null) await this.send(path, m.id, quotes, now);
  }

  /**
   * What a linear ladder is centred on: a perp's or spot pair's index, and for a dated future the
   * index carried to its expiry (`carry`), which its mark then follows; null while unavailable.
   * Not a perp's own mark: that mark follows the book, so a book centred on it held the perp
   * wherever it stood while the index moved away (docs/architecture.md, the reference maker).
   */
  private reference(m: MarketRow, now: number): number | null {
    if (m.indexPrice === null) return null;
    if (m.marketType !== 'future' || m.expiry === undefined) return Number(m.indexPrice);
    if (m.markPrice === null) return null;
    const T = Math.max(Date.parse(m.expiry) - now, 0) / YEAR;
    return carryForward(Number(m.indexPrice), T, this.cfg.carry[m.underlying] ?? 0);
  }

  /** Replaces the maker's ladder on a market (`cancelAll`) and remembers what the book now holds. */
  private async send(path: QuotePath, marketId: string, quotes: WireLevel[], now: number): Promise<void> {
    const r = await this.quote(path, marketId, quotes);
    if (r !== null) {
      this.sent.record(marketId, quotes, now);
      this.pulled.delete(marketId);
      this.noteRejections(marketId, r);
    }
  }

  /** Replaces the maker's ladder on a market (`cancelAll`): the reply, or null when it was refused. */
  private async quote(path: QuotePath, marketId: string, quotes: WireLevel[]): Promise<{ rejected: { error: string }[] } | null> {
    const body = { marketId, quoteId: 'mm', cancelAll: true, quotes };
    try {
      return path === '/quotes/bulk'
        ? await this.venue().post('/quotes/bulk', { body })
        : await this.venue().post('/perps/quotes/bulk', { body });
    } catch (error) {
      if (error instanceof ApiError) return null;
      throw error;
    }
  }

  /**
   * Pulls every option whose forward is unavailable and quotes those never quoted (or pulled);
   * then, within the spare order-action budget, re-sends the ladders that changed (a new anchor,
   * a changed position) and those due a heartbeat.
   */
  private async quoteOptions(markets: MarketRow[]): Promise<void> {
    const [instruments, positionRows] = await Promise.all([
      this.venue().instruments() as Promise<InstrumentRow[]>,
      this.venue().get('/positions/me') as Promise<PositionRow[]>,
    ]);
    const positions = new Map<string, number>();
    for (const p of positionRows) positions.set(p.marketId, Number(p.size) * (p.side === 'long' ? 1 : -1));
    const forwardOf = this.forwards(markets);
    const now = this.now();
    const required: (() => Promise<void>)[] = [];
    const changed: (() => Promise<void>)[] = [];
    const heartbeats: (() => Promise<void>)[] = [];
    const anchored = new Set(markets.map((m) => m.id));
    for (const i of instruments) {
      const expiry = Date.parse(i.expiry);
      const forward = forwardOf(i.underlying, expiry);
      const view = this.cfg.vol[i.underlying];
      if (forward === null || view === undefined || expiry <= now) {
        if (!this.pulled.has(i.id)) required.push(() => this.pull(i.id, '/quotes/bulk'));
        continue;
      }
      const key = `${i.underlying}:${expiry}`;
      anchored.add(key);
      const anchor = this.anchors.hold(key, forward, now, this.cfg.optionMoveBps, this.cfg.optionRefreshMs);
      const quotes = this.optionLadder(i, anchor, expiry, view, positions.get(i.id) ?? 0);
      const due = this.sent.due(i.id, quotes, now, this.cfg.optionRefreshMs, fx(i.tickSize), fx(i.stepSize));
      if (due === null) continue;
      const job = () => this.send('/quotes/bulk', i.id, quotes, now);
      (due === 'first' ? required : due === 'changed' ? changed : heartbeats).push(job);
    }
    const listed = new Set([...instruments.map((i) => i.id), ...markets.map((m) => m.id)]);
    this.sent.retain(listed);
    this.anchors.retain(anchored);
    for (const id of this.pulled) if (!listed.has(id)) this.pulled.delete(id);
    const spare = Math.max(0, this.spareOrderActions() - required.length);
    await this.run([...required, ...[...changed, ...heartbeats].slice(0, spare)]);
  }

  /** The option's wire ladder priced from its expiry's anchor (forward, and time to expiry then). */
  private optionLadder(i: InstrumentRow, anchor: Anchor, expiry: number, view: VolView, position: number): WireLevel[] {
    const T = (expiry - anchor.at) / YEAR;
    const tick = Number(i.tickSize);
    const input = { forward: anchor.price, strike: Number(i.strike), T, type: i.type, view, position, tick };
    return this.wire(optionQuote(input, this.cfg.option), i.priceDecimals, i.sizeDecimals);
  }

  /** Runs the jobs `concurrency` at a time. */
  private async run(jobs: (() => Promise<void>)[]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) await jobs[next++]!();
    };
    await Promise.all(Array.from({ length: Math.min(this.cfg.concurrency, jobs.length) }, worker));
  }

  private noteRejections(marketId: string, body: { rejected?: { error: string }[] } | null): void {
    const rejected = body?.rejected ?? [];
    if (rejected.length === 0) {
      this.warned.delete(marketId);
    } else if (!this.warned.has(marketId)) {
      this.warned.add(marketId);
      this.log(`market maker: ${rejected.length} quote level(s) rejected on ${marketId}`, rejected[0]);
    }
  }

  /**
   * Forward per (underlying, expiry): the dated future's mark when it has one — the forward the board
   * prices that expiry's marks on — else the index.
   */
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
  private async pull(marketId: string, path: QuotePath): Promise<void> {
    if (this.pulled.has(marketId)) return;
    const r = await this.quote(path, marketId, []);
    if (r !== null) {
      this.pulled.add(marketId);
      this.sent.forget(marketId);
    }
  }

  private wire(levels: Level[], priceDecimals: number, sizeDecimals: number): WireLevel[] {
    return levels
      .map((l) => ({
        side: l.side,
        price: priceString(l.price, priceDecimals),
        quantity: priceString(floorTo(l.quantity, sizeDecimals), sizeDecimals),
        postOnly: true,
      }))
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
