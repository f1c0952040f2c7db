/**
 * The option margin of each account, kept (docs/architecture.md "CLOB engine"): what an order
 * check needs costs what the order touches, not what the account holds. risk.ts `optionFunds`
 * revalues every instrument the account is short or sells; it stays as the oracle (tests, and the
 * engine's `fullRevaluation` mode) that these figures must equal exactly.
 *
 * Each instrument's margin is rounded on its own (margin.ts `forLots`), so an account's initial and
 * maintenance margin are sums of per-instrument terms and a check adds the difference of the terms
 * it touches. The account keeps the terms and their sums per underlying, with the pricing key they
 * were valued at: the engine's pricing epoch (it changes at every clock tick, when the option board
 * fits its marks again, and when the pricing source is replaced) and the risk spot's value. A
 * change of exposure (resting sells, a fill, a settlement) marks its instrument pending; the first
 * read after a key change revalues every term of that underlying, once.
 *
 * Why the key is exact: the margin per contract is a function of the risk spot (compared by value)
 * and the option's risk price: its mark, else max(intrinsic, held mark, or best bid when never
 * marked). Between two epochs a pricing source may let a mark lapse (the board's marks age out)
 * but never change one, and its held mark is the last mark it served, so a mark is either the held
 * mark or none. The price is then the held mark at any time whenever the held mark exists, the
 * mark (if any) equals it, and it is not below intrinsic: such a valuation is `stable` and kept for
 * the key. Any other (never marked, so the book's bid counts; a mark under intrinsic, which would
 * change when it lapses; a source whose mark is not its held mark) is volatile: recomputed at every
 * read, as risk.ts does. Plain data only (no closures): the core's state is serialised as it is.
 */
import { fail } from '../assert.ts';
import type { Fixed } from '../money.ts';
import type { ClobAccount } from './account.ts';
import { fallbackRiskPrice, forLots, initialPerContract, intrinsic, maintenancePerContract } from './margin.ts';
import type { ClobMarket } from './market.ts';
import { optionFunds, type OptionFunds, type RiskSource } from './risk.ts';

/** What the kept figures read from the engine beside the risk inputs. */
export interface MarginSource extends RiskSource {
  /** Changes whenever marks or held marks may have changed; negative while they are being refitted. */
  pricingEpoch(): number;
  /** Value every check by risk.ts `optionFunds` (the oracle of the tests) instead of the kept figures. */
  readonly fullRevaluation: boolean;
}

/**
 * Initial and maintenance margin of one short contract of an instrument at a pricing key, with the
 * inputs they were computed from (a volatile valuation whose inputs did not move is not redone).
 */
export class ContractMargin {
  epoch = -1;
  spot: Fixed | null = null;
  mark: Fixed | null = null;
  held: Fixed | null = null;
  /** The book's best bid when it counted (never marked), else null. */
  bid: Fixed | null = null;
  /** False without any spot: the instrument then adds no margin (risk.ts). */
  priced = false;
  /** True when the figures hold for the whole epoch at this spot (file comment). */
  stable = false;
  im: Fixed = 0n;
  mm: Fixed = 0n;
}

/** What one instrument adds to an account's margin, and the lots and figures it was computed from. */
export class InstrumentMargin {
  im: Fixed = 0n;
  mm: Fixed = 0n;
  lots = 0;
  shortLots = 0;
  priced = false;
  perIm: Fixed = 0n;
  perMm: Fixed = 0n;
}

/** An account's margin on the instruments of one underlying. */
export class UnderlyingMargin {
  epoch = -1;
  spot: Fixed | null = null;
  initialMargin: Fixed = 0n;
  maintenanceMargin: Fixed = 0n;
  readonly terms = new Map<ClobMarket, InstrumentMargin>();
  /** Instruments whose exposure changed since their term was computed. */
  readonly pending = new Set<ClobMarket>();
  /** Instruments whose last valuation was not stable: recomputed at every read. */
  readonly volatile = new Set<ClobMarket>();

  constructor(readonly underlying: string) {}
}

/** The kept option margin of one account (ClobAccount.margin). */
export class AccountMargin {
  readonly byUnderlying = new Map<string, UnderlyingMargin>();
  initialMargin: Fixed = 0n;
  maintenanceMargin: Fixed = 0n;

  /** The account's resting sells or position on `market` changed. */
  touch(market: ClobMarket): void {
    if (market.option === null) return;
    const u = market.underlying;
    let m = this.byUnderlying.get(u);
    if (m === undefined) this.byUnderlying.set(u, (m = new UnderlyingMargin(u)));
    m.pending.add(market);
  }
}

/** The margin per short contract of `market` at (epoch, spot), kept on the market while stable. */
export function contractMargin(
  src: RiskSource, market: ClobMarket, spot: Fixed | null, epoch: number, now: number,
): ContractMargin {
  const c = market.valuation;
  if (c.stable && epoch >= 0 && c.epoch === epoch && c.spot === spot) return c;
  c.epoch = epoch;
  if (spot === null) {
    c.priced = false;
    c.stable = true;
    return c;
  }
  const o = market.option!;
  const id = market.spec.id;
  const mark = src.optionMark(id, now);
  const held = src.heldMark(id);
  const bid = mark === null && held === null ? market.bestBid() : null;
  // The same inputs give the same figures (and the same stability).
  if (c.priced && c.spot === spot && c.mark === mark && c.held === held && c.bid === bid) return c;
  c.spot = spot;
  c.mark = mark;
  c.held = held;
  c.bid = bid;
  c.priced = true;
  const price = mark ?? fallbackRiskPrice(market, spot, held);
  c.im = initialPerContract(o, spot, price);
  c.mm = maintenancePerContract(o, spot, price);
  c.stable = held !== null && (mark === null || mark === held) && held >= intrinsic(o, spot);
  return c;
}

/** The account's option funds now: the kept figures, or the oracle's in `fullRevaluation` mode. */
export function accountFunds(src: MarginSource, account: ClobAccount, now: number): OptionFunds {
  if (src.fullRevaluation) return optionFunds(src, account, now);
  const balance = src.userBalance(account.id, 'options', src.settlementAsset);
  const reserved = account.held('options', src.settlementAsset);
  const m = keptMargin(src, account, now);
  const im = m.initialMargin;
  return { balance, reserved, initialMargin: im, maintenanceMargin: m.maintenanceMargin, available: balance - reserved - im };
}

/** What the account's free collateral is now (balance − reserved − initial margin). */
export function availableNow(src: MarginSource, account: ClobAccount, now: number): Fixed {
  if (src.fullRevaluation) return optionFunds(src, account, now).available;
  const balance = src.userBalance(account.id, 'options', src.settlementAsset);
  return balance - account.held('options', src.settlementAsset) - keptMargin(src, account, now).initialMargin;
}

/**
 * The initial margin the account's worst-case short on `market` gains when its position and
 * resting sells there move by the given lots (negative when it falls).
 */
export function marginAdded(
  src: MarginSource, account: ClobAccount, market: ClobMarket, now: number, position: number, sells: number,
): Fixed {
  if (src.fullRevaluation) {
    const before = optionFunds(src, account, now).initialMargin;
    return optionFunds(src, account, now, new Map([[market, { position, sells }]])).initialMargin - before;
  }
  const spot = src.riskSpot(market.underlying, now);
  const c = contractMargin(src, market, spot, src.pricingEpoch(), now);
  if (!c.priced) return 0n;
  const pos = account.position(market)?.size ?? 0;
  const resting = account.sellLots(market);
  const d = src.settlementDecimals;
  const before = forLots(market, c.im, Math.max(0, resting - pos), d);
  return forLots(market, c.im, Math.max(0, resting + sells - pos - position), d) - before;
}

/** `marginAdded` over several instruments at once (a strategy's legs). */
export function marginAddedBy(
  src: MarginSource, account: ClobAccount, now: number,
  deltas: ReadonlyMap<ClobMarket, { position: number; sells: number }>,
): Fixed {
  if (src.fullRevaluation) {
    return optionFunds(src, account, now, deltas).initialMargin - optionFunds(src, account, now).initialMargin;
  }
  let added = 0n;
  for (const [market, d] of deltas) added += marginAdded(src, account, market, now, d.position, d.sells);
  return added;
}

/** The account's margin now from its kept terms, revaluing what the key or its exposure changed. */
export function keptMargin(src: RiskSource & Pick<MarginSource, 'pricingEpoch'>, account: ClobAccount, now: number): AccountMargin {
  const kept = account.margin;
  const epoch = src.pricingEpoch();
  let im = 0n;
  let mm = 0n;
  for (const u of kept.byUnderlying.values()) {
    const spot = src.riskSpot(u.underlying, now);
    if (epoch < 0 || u.epoch !== epoch || u.spot !== spot) {
      u.epoch = epoch;
      u.spot = spot;
      for (const market of u.terms.keys()) u.pending.add(market);
    }
    if (u.volatile.size !== 0) for (const market of u.volatile) u.pending.add(market);
    if (u.pending.size !== 0) {
      for (const market of u.pending) refreshTerm(src, account, u, market, now);
      u.pending.clear();
    }
    if (u.terms.size === 0) {
      if (u.initialMargin !== 0n || u.maintenanceMargin !== 0n) fail(`account ${account.id} keeps margin without terms`);
      kept.byUnderlying.delete(u.underlying);
    }
    im += u.initialMargin;
    mm += u.maintenanceMargin;
  }
  kept.initialMargin = im;
  kept.maintenanceMargin = mm;
  return kept;
}

/** Recomputes what `market` adds to the account's margin at the underlying's key. */
function refreshTerm(src: RiskSource, account: ClobAccount, u: UnderlyingMargin, market: ClobMarket, now: number): void {
  const c = contractMargin(src, market, u.spot, u.epoch, now);
  const pos = account.position(market)?.size ?? 0;
  const lots = Math.max(0, account.sellLots(market) - pos);
  const shortLots = Math.max(0, -pos);
  let term = u.terms.get(market);
  if (term === undefined) u.terms.set(market, (term = new InstrumentMargin()));
  if (!sameInputs(term, c, lots, shortLots)) setTerm(u, term, market, c, lots, shortLots, src.settlementDecimals);
  if (u.initialMargin < 0n || u.maintenanceMargin < 0n) fail(`kept option margin of account ${account.id} went negative`);
  if (lots === 0 && shortLots === 0) u.terms.delete(market);
  if (c.stable || !u.terms.has(market)) u.volatile.delete(market);
  else u.volatile.add(market);
}

/** Whether the term was computed from these lots and per-contract figures (it is then unchanged). */
function sameInputs(term: InstrumentMargin, c: ContractMargin, lots: number, shortLots: number): boolean {
  if (term.lots !== lots || term.shortLots !== shortLots || term.priced !== c.priced) return false;
  return !c.priced || (term.perIm === c.im && term.perMm === c.mm);
}

/** Recomputes the term from these lots and figures and moves the underlying's sums by its change. */
function setTerm(
  u: UnderlyingMargin, term: InstrumentMargin, market: ClobMarket, c: ContractMargin, lots: number, shortLots: number, decimals: number,
): void {
  const im = c.priced ? forLots(market, c.im, lots, decimals) : 0n;
  const mm = c.priced ? forLots(market, c.mm, shortLots, decimals) : 0n;
  u.initialMargin += im - term.im;
  u.maintenanceMargin += mm - term.mm;
  term.im = im;
  term.mm = mm;
  term.lots = lots;
  term.shortLots = shortLots;
  term.priced = c.priced;
  term.perIm = c.im;
  term.perMm = c.mm;
}

/** The kept figures of every account against the oracle (risk.ts optionFunds); empty when equal. */
export function auditMargins(src: MarginSource, accounts: Iterable<ClobAccount>, now: number): string[] {
  const errors: string[] = [];
  for (const a of accounts) {
    const kept = keptMargin(src, a, now);
    const fresh = optionFunds(src, a, now);
    if (kept.initialMargin !== fresh.initialMargin || kept.maintenanceMargin !== fresh.maintenanceMargin) {
      errors.push(`account ${a.id}: kept margin IM ${kept.initialMargin} MM ${kept.maintenanceMargin}, `
        + `recomputed IM ${fresh.initialMargin} MM ${fresh.maintenanceMargin}`);
    }
    for (const u of a.margin.byUnderlying.values()) {
      for (const market of u.terms.keys()) {
        if (market.underlying !== u.underlying) errors.push(`account ${a.id}: ${market.spec.id} kept under ${u.underlying}`);
      }
    }
  }
  return errors;
}
