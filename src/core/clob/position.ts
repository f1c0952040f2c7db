/**
 * An option position of one account in one instrument. Size is signed lots (long > 0). The cost
 * basis is the exact signed sum of premium paid (long) or received (short, negative) for the open
 * lots, so the average premium is cost / size; reducing releases the same fraction of the cost
 * (rounded toward zero, the remainder staying in the basis) and closing releases the rest, so the
 * PnL realised over a position's life is exact.
 *
 * Premiums move between accounts at each fill (option_premium ledger entries); realised PnL here
 * is a report of those flows against the cost basis, never posted a second time. At settlement the
 * payoff is realised against the remaining basis.
 */
import { divRound, SCALE, type Fixed } from '../money.ts';
import type { PositionSide, PositionStatus } from '../records.ts';
import type { ClobMarket } from './market.ts';

export class OptionPosition {
  /** Signed lots. */
  size = 0;
  /** The side of the open lots; a closed position keeps the side it had (its records show it). */
  side: PositionSide = 'long';
  /** Signed premium of the open lots (paid > 0, received < 0). */
  cost: Fixed = 0n;
  realizedPnl: Fixed = 0n;
  status: PositionStatus = 'open';
  updatedAt: number;

  constructor(
    readonly id: string,
    readonly accountId: number,
    readonly market: ClobMarket,
    readonly openedAt: number,
  ) {
    this.updatedAt = openedAt;
  }

  /** Applies a fill of `lots` (signed: + buy, - sell) at `priceTicks`; returns the realised PnL. */
  applyFill(lots: number, priceTicks: number, now: number): Fixed {
    const units = this.market.units;
    this.updatedAt = now;
    const size = this.size;
    if (size === 0 || Math.sign(size) === Math.sign(lots)) {
      if (size === 0) this.side = lots < 0 ? 'short' : 'long';
      this.size = size + lots;
      this.cost += signed(units.notional(priceTicks, Math.abs(lots)), lots);
      return 0n;
    }
    const closing = Math.min(Math.abs(lots), Math.abs(size));
    const whole = closing === Math.abs(size);
    const part = () => divRound(this.cost * BigInt(closing), BigInt(Math.abs(size)), 'trunc');
    const closedCost = whole ? this.cost : part();
    const exitValue = signed(units.notional(priceTicks, closing), size);
    this.cost -= closedCost;
    this.size = size + Math.sign(lots) * closing;
    const opening = Math.abs(lots) - closing;
    if (opening > 0) {
      this.side = lots < 0 ? 'short' : 'long';
      this.size = Math.sign(lots) * opening;
      this.cost = signed(units.notional(priceTicks, opening), lots);
    }
    return exitValue - closedCost;
  }

  /** Settles the whole position at `payoff` per contract: returns the PnL against the basis. */
  settle(payoff: Fixed, now: number): Fixed {
    const value = divRound(payoff * this.market.units.size(this.size), SCALE, 'trunc');
    const pnl = value - this.cost;
    this.size = 0;
    this.cost = 0n;
    this.updatedAt = now;
    return pnl;
  }

  averagePremium(): Fixed | null {
    if (this.size === 0) return null;
    return divRound(this.cost * SCALE, this.market.units.size(this.size), 'halfUp');
  }

  /** Unrealised PnL at `price` per contract: size x price - cost. */
  unrealized(price: Fixed): Fixed {
    if (this.size === 0) return 0n;
    return divRound(price * this.market.units.size(this.size), SCALE, 'floor') - this.cost;
  }
}

function signed(notional: Fixed, signOf: number): Fixed {
  return signOf < 0 ? -notional : notional;
}
