/**
 * What one fill moves, for each product: the swap (spot: quote against base between the two spot
 * buckets; options: the premium between the options buckets), each side's fee at its own tier and
 * role, the 30-day volumes, and for options the two positions with their realised PnL. Called by
 * the engine's MatchSink for every fill, inside the command; the engine then releases the holds
 * and records the fill. Money moves only through money-moves.ts postings.
 *
 * A seller's fee never exceeds what the fill pays it (spot: proceeds; options: the premium, which
 * the 12.5 % cap already guarantees), so a fill can never leave a seller's bucket negative; the
 * buyer's cost is covered by its order's hold (risk.ts). Tested by spot.test.ts and options.test.ts.
 */
import { mul, type Fixed } from '../money.ts';
import type { FeeRole } from '../risk/fees.ts';
import type { ClobEngine } from './engine.ts';
import type { ClobMarket } from './market.ts';
import { postFillFees, postSwap } from './money-moves.ts';
import type { ClobOrder } from './order.ts';
import { reportPnl, type SideFigures } from './records.ts';

export type SideMoney = Omit<SideFigures, 'accountId' | 'orderId'>;

/** What one fill moved for each side. */
export interface FillMoney {
  readonly buyer: SideMoney;
  readonly seller: SideMoney;
  /** Everything the buyer paid (quote amount and fee). */
  readonly buyerPaid: Fixed;
}

export interface FillSides {
  readonly buyer: ClobOrder;
  readonly seller: ClobOrder;
  readonly maker: ClobOrder;
}

const role = (o: ClobOrder, s: FillSides): FeeRole => (o === s.maker ? 'maker' : 'taker');

export function settleSpotFill(
  e: ClobEngine, s: FillSides, lots: number, notional: Fixed, tradeId: number,
): FillMoney {
  const market = s.buyer.market;
  const now = e.deps.now();
  const ctx = e.postingContext();
  const ref = `${market.spec.id}:${tradeId}`;
  const [buyer, seller] = [s.buyer.owner, s.seller.owner];
  const bBps = e.spotFees.rateFor(e.spotVolume(buyer, now), role(s.buyer, s));
  const sBps = e.spotFees.rateFor(e.spotVolume(seller, now), role(s.seller, s));
  const base = { asset: market.baseAsset, quantity: market.units.size(lots) };
  const swap = postSwap(ctx, { bucket: 'spot', buyer, seller, amount: notional, base, ref });
  const bFee = e.spotFees.fee(notional, bBps);
  const sFeeRaw = e.spotFees.fee(notional, sBps);
  const sFee = sFeeRaw > swap.received ? swap.received : sFeeRaw;
  postFillFees(ctx, 'spot', [{ accountId: buyer, fee: bFee }, { accountId: seller, fee: sFee }], ref);
  e.spotVolumes.record(s.buyer.owner, notional, now);
  e.spotVolumes.record(s.seller.owner, notional, now);
  return {
    buyer: { fee: bFee, feeBps: bBps, realizedPnl: 0n },
    seller: { fee: sFee, feeBps: sBps, realizedPnl: 0n },
    buyerPaid: swap.paid + bFee,
  };
}

export function settleOptionFill(
  e: ClobEngine, s: FillSides, lots: number, priceTicks: number, premium: Fixed, tradeId: number,
): FillMoney {
  const market = s.buyer.market;
  const now = e.deps.now();
  const ctx = e.postingContext();
  const ref = `${market.spec.id}:${tradeId}`;
  const [buyer, seller] = [s.buyer.owner, s.seller.owner];
  const spot = e.riskSpot(market.underlying, now) ?? 0n;
  const contracts = market.units.size(lots);
  const price = market.units.price(priceTicks);
  const fee = (o: ClobOrder) => {
    return e.optionFees.feeFor(e.optionVolume(o.owner, now), role(o, s), contracts, price, spot);
  };
  const b = fee(s.buyer);
  const sf = fee(s.seller);
  const swap = postSwap(ctx, { bucket: 'options', buyer, seller, amount: premium, base: null, ref });
  const sFee = sf.fee > swap.received ? swap.received : sf.fee;
  postFillFees(ctx, 'options', [{ accountId: buyer, fee: b.fee }, { accountId: seller, fee: sFee }], ref);
  const volume = mul(contracts, spot);
  e.optionVolumes.record(buyer, volume, now);
  e.optionVolumes.record(seller, volume, now);
  return {
    buyer: { fee: b.fee, feeBps: b.bps, realizedPnl: applyPosition(e, buyer, market, lots, priceTicks) },
    seller: { fee: sFee, feeBps: sf.bps, realizedPnl: applyPosition(e, seller, market, -lots, priceTicks) },
    buyerPaid: swap.paid + b.fee,
  };
}

/** Applies a fill to an option position; returns its realised PnL (rounded for reporting). */
function applyPosition(
  e: ClobEngine, accountId: number, market: ClobMarket, lots: number, priceTicks: number,
): Fixed {
  const now = e.deps.now();
  const account = e.account(accountId);
  const p = account.openPosition(market, now);
  if (p.size === 0) p.status = 'open';
  const realized = reportPnl(p.applyFill(lots, priceTicks, now), e.settlementDecimals);
  account.positionChanged(market);
  p.realizedPnl += realized;
  if (p.size === 0) p.status = 'closed';
  e.touchPosition(p);
  return realized;
}
