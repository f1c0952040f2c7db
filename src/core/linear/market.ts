/**
 * A perpetual or dated-future market inside the linear engine: its specification and tick/lot
 * units, margin schedule, order book, mark price state, last trade, open interest, and the
 * conditional orders waiting on its mark.
 *
 * Marks (research/mechanics.md 1.2 and 2): perps take the median of index + EMA(150 s) of the
 * book basis, the book's median(bid, ask, last) and an EMA(30 s) of that median, clamped to the
 * index ± 5 %; futures take index x (1 + EMA(10 min) of the basis rate), blended into the
 * settlement TWAP over the last 30 minutes. A mark exists only while the index is fresh.
 */
import { OrderBook } from '../book/order-book.ts';
import { BUY, SELL } from '../book/order-book.ts';
import type { LedgerAccount } from '../ledger/ledger.ts';
import { MarketUnits, type MarketSpec, type MarketStatus } from '../markets.ts';
import { div, SCALE, type Fixed } from '../money.ts';
import { MarginSchedule } from '../risk/margin-tiers.ts';
import { emaUpdate, emptyEma, type EmaState } from '../../pricing/ema.ts';
import { impactPrice, type BookLevel } from '../../pricing/impact-price.ts';
import { futureMark, localMedian, perpMark } from '../../pricing/mark-price.ts';
import type { LinearOrder } from './order.ts';
import type { Position } from './position.ts';

export const MARK_SETTINGS = {
  clampBps: 500,
  perpBasisTauMs: 150_000,
  perpLocalMedianTauMs: 30_000,
  // 30 s, as Deribit's futures mark (index + EMA30s of the basis): a dated future's book carries its
  // cost of carry, and the options of that expiry are priced off this mark, so it must reach the book
  // within a minute or two of a fresh start, not over half an hour (docs/architecture.md "Prices").
  futureBasisTauMs: 30_000,
  settlementWindowMs: 30 * 60_000,
} as const;

/**
 * A book-derived average is a mark input only while it has a sample younger than its time constant:
 * past it, the next sample would replace it whole anyway (ema.ts), and an old average of a book
 * that has since gone one-sided or empty must not pull the mark away from a fresh index (an input
 * too old is unavailable).
 */
/** Levels an impact price walks at most: 200 levels of the smallest order exceed any impact notional here. */
const IMPACT_DEPTH = 200;
const levelScratch: number[] = [];

function freshEma(ema: EmaState, now: number, tauMs: number): Fixed | null {
  return ema.value !== null && now - ema.ts < tauMs ? ema.value : null;
}

export class LinearMarket {
  readonly units: MarketUnits;
  readonly margin: MarginSchedule;
  readonly book = new OrderBook();
  status: MarketStatus = 'open';
  /** The market's clearing account in the ledger (realised PnL posts against it), once named. */
  clearingLedger: LedgerAccount | null = null;
  /** The last trade, kept in ticks (a fill writes two numbers; readers build the price). */
  private lastTradeTicks = -1;
  private lastTradeAt = 0;

  get lastTrade(): { price: Fixed; at: number } | null {
    return this.lastTradeTicks < 0 ? null : { price: this.units.price(this.lastTradeTicks), at: this.lastTradeAt };
  }

  tradedAt(priceTicks: number, at: number): void {
    this.lastTradeTicks = priceTicks;
    this.lastTradeAt = at;
  }
  /** Mark computed at the last price update; valid only while the index is fresh. */
  mark: Fixed | null = null;
  /** Last mark ever computed (risk valuation when the index goes stale; never displayed). */
  riskMark: Fixed | null = null;
  markAt = 0;
  /** Increments whenever the risk mark changes; margin caches compare against it. */
  markVersion = 0;
  /** Value of one lot at the risk mark (exact: the mark is on the tick). */
  riskLotValue: Fixed = 0n;
  /** The band edges (bandLimitTicks) at `bandMark`. */
  private bandMark: Fixed | null = null;
  private bandBuyTicks = 0;
  private bandSellTicks = 0;
  private readonly bandBps: bigint;
  private basisEma: EmaState = emptyEma();
  private localMedianEma: EmaState = emptyEma();
  /** Sum of long position lots (= short lots). */
  openInterestLots = 0;
  /** Counts every change of a position in this market (a payment held back compares it, funding). */
  positionMoves = 0;
  readonly untriggered = new Set<LinearOrder>();
  /** Every non-flat position in this market (funding, liquidation checks and expiry walk it). */
  readonly positions = new Set<Position>();
  /** Accounts with an order live in this market that is not waiting for a trigger (the sweep's; account.ts keeps it). */
  readonly accountsWithOrders = new Set<number>();
  /** Cumulative funding per unit of size (perps), in USDC per unit of base. */
  fundingIndex: Fixed = 0n;
  /** Dated futures: the settlement price once positions were settled at expiry. */
  settlementPrice: Fixed | null = null;
  settled = false;

  /** Keys of this market's (market, margin mode) pairs inside an account, built once. */
  readonly modeKeys: { readonly cross: string; readonly isolated: string };

  constructor(readonly spec: MarketSpec) {
    this.units = new MarketUnits(spec);
    this.margin = new MarginSchedule(spec.marginTiers);
    this.modeKeys = { cross: `${spec.id}|cross`, isolated: `${spec.id}|isolated` };
    this.bandBps = BigInt(spec.priceBandBps);
  }

  get isPerp(): boolean {
    return this.spec.type === 'perp';
  }

  bestBid(): Fixed | null {
    const t = this.book.bestBid();
    return Number.isNaN(t) ? null : this.units.price(t);
  }

  bestAsk(): Fixed | null {
    const t = this.book.bestAsk();
    return Number.isNaN(t) ? null : this.units.price(t);
  }

  /**
   * One sample of a dated future's basis rate: the mid of its impact prices (the average fill of
   * `impactNotional` into each side) against the index, as mechanics.md 2 has it. The top of book
   * would let one tiny order move the mark by the whole clamp: the impact mid costs a manipulator
   * the impact notional at risk on the book. No sample while a side cannot absorb it. A basis with no
   * fresh average (first sample, or after a gap of a time constant) starts from zero, so no single
   * sample sets the mark; the smoothing brings it to the book over `futureBasisTauMs`.
   */
  private sampleFutureBasis(index: Fixed, now: number): void {
    const impactBid = impactPrice(this.bookLevels(BUY), this.spec.impactNotional);
    const impactAsk = impactBid === null ? null : impactPrice(this.bookLevels(SELL), this.spec.impactNotional);
    if (impactBid === null || impactAsk === null) return;
    const tau = MARK_SETTINGS.futureBasisTauMs;
    if (freshEma(this.basisEma, now, tau) === null) this.basisEma = { value: 0n, ts: now };
    const rate = div((impactBid + impactAsk) / 2n - index, index, 'halfUp');
    this.basisEma = emaUpdate(this.basisEma, rate, now, tau);
  }

  /** The book's levels on one side, best first, as prices and sizes (at most `IMPACT_DEPTH` of them). */
  bookLevels(side: 0 | 1): BookLevel[] {
    const n = this.book.depth(side, IMPACT_DEPTH, levelScratch);
    const out: BookLevel[] = [];
    for (let i = 0; i < n; i++) out.push([this.units.price(levelScratch[2 * i]!), this.units.size(levelScratch[2 * i + 1]!)]);
    return out;
  }

  /**
   * Recomputes the mark from the index (null = stale) and the book at `now`. Book-derived EMAs
   * sample only when both sides of the book exist.
   */
  updateMark(index: Fixed | null, now: number, settlementTwap: Fixed | null): void {
    this.markAt = now;
    if (index === null) {
      this.mark = null;
      return;
    }
    const bid = this.bestBid();
    const ask = this.bestAsk();
    const options = { clampBps: MARK_SETTINGS.clampBps, tick: this.units.tick };
    if (this.spec.type === 'future' && this.spec.expiry !== null) {
      this.sampleFutureBasis(index, now);
      this.mark = futureMark(
        {
          index,
          basisRateEma: freshEma(this.basisEma, now, MARK_SETTINGS.futureBasisTauMs),
          nowMs: now,
          expiryMs: this.spec.expiry,
          settlementTwap,
          windowMs: MARK_SETTINGS.settlementWindowMs,
        },
        options,
      );
    } else {
      const last = this.lastTrade?.price ?? null;
      const local = localMedian(bid, ask, last);
      if (bid !== null && ask !== null) {
        this.basisEma = emaUpdate(this.basisEma, (bid + ask) / 2n - index, now, MARK_SETTINGS.perpBasisTauMs);
      }
      if (local !== null) this.localMedianEma = emaUpdate(this.localMedianEma, local, now, MARK_SETTINGS.perpLocalMedianTauMs);
      this.mark = perpMark(
        {
          index,
          basisEma: freshEma(this.basisEma, now, MARK_SETTINGS.perpBasisTauMs),
          bestBid: bid,
          bestAsk: ask,
          last,
          localMedianEma: freshEma(this.localMedianEma, now, MARK_SETTINGS.perpLocalMedianTauMs),
        },
        options,
      );
    }
    this.setRiskMark(this.mark);
  }

  private setRiskMark(mark: Fixed): void {
    if (mark === this.riskMark) return;
    this.riskMark = mark;
    this.riskLotValue = (this.units.step * mark) / SCALE;
    this.markVersion++;
  }

  /** Ticks of the price band edge for a taker of `side` around `mark`. */
  bandLimitTicks(side: 0 | 1, mark: Fixed): number {
    // Every order reads an edge; both are kept until the mark moves (bigint equality is by value).
    if (mark !== this.bandMark) {
      const band = (mark * this.bandBps) / 10_000n;
      const low = (mark - band + this.units.tick - 1n) / this.units.tick;
      this.bandBuyTicks = this.units.edgeTicks((mark + band) / this.units.tick);
      this.bandSellTicks = this.units.edgeTicks(low < 1n ? 1n : low);
      this.bandMark = mark;
    }
    return side === BUY ? this.bandBuyTicks : this.bandSellTicks;
  }

  /** Whether a limit price is inside the band around the mark (buy <= mark+band, sell >= mark-band). */
  priceInBand(side: 0 | 1, priceTicks: number, mark: Fixed): boolean {
    const edge = this.bandLimitTicks(side, mark);
    return side === SELL ? priceTicks >= edge : priceTicks <= edge;
  }
}
