/**
 * The reference market maker's pricing decisions (quoting.ts), checked without the service:
 * ladders (levels on the tick on each side of the reference, shaded against inventory, one side
 * dropped at the inventory limit, the shade capped beyond it) and option quotes (half-spread
 * max(tick, hVol x vega + minimum) with vega from the maker's own vol view, theo inside the quote,
 * prices on the tick and at least one tick, inventory shading and limits), plus the wire format
 * of prices (exact decimals, never an exponent). Random cases use fast-check.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { black76 } from '../pricing/black76.ts';
import { MARKET_MAKER_CONFIG } from '../config/market-maker.ts';
import {
  ceilTo, floorTo, ladder, makerVol, optionQuote, optionTheo, priceString,
  type LadderParams, type Level, type OptionQuoteInput, type OptionQuoteParams, type VolView,
} from './quoting.ts';

const LADDER: LadderParams = { firstBps: 2, stepBps: 3, levels: 5, size: 0.25, maxPosition: 25 };
const VIEW: VolView = { atm: 0.55, skew: -0.18, smile: 0.6, term: 0.04 };
const OPTION: OptionQuoteParams = { hVolPts: 1, minHalfSpread: 0, forwardCoverBps: 20, minTicks: 2, size: 0.5, maxPosition: 20 };

/** x is a whole number of ticks (to float noise). */
function onTick(x: number, tick: number): boolean {
  const n = x / tick;
  return Math.abs(n - Math.round(n)) < 1e-6;
}

const side = (levels: Level[], s: 'buy' | 'sell') => levels.filter((l) => l.side === s).map((l) => l.price);

function option(over: Partial<OptionQuoteInput> = {}): OptionQuoteInput {
  const base = { forward: 97_000, strike: 97_000, T: 30 / 365, type: 'call' as const, view: VIEW };
  return { ...base, position: 0, tick: 0.1, ...over };
}

describe('ladder', () => {
  test('flat: levels on the tick, bids below and asks above the reference, at the configured size', () => {
    const ref = 97_012.34;
    const levels = ladder(ref, 0, LADDER, 0.1);
    const bids = side(levels, 'buy');
    const asks = side(levels, 'sell');
    assert.equal(bids.length, LADDER.levels);
    assert.equal(asks.length, LADDER.levels);
    for (const l of levels) {
      assert.ok(onTick(l.price, 0.1), `${l.price} on the tick`);
      assert.equal(l.quantity, LADDER.size);
    }
    for (let i = 0; i < LADDER.levels; i++) {
      const offset = (LADDER.firstBps + i * LADDER.stepBps) / 10_000;
      assert.ok(bids[i]! < ref && bids[i]! > ref * (1 - offset) - 0.1 - 1e-9, `bid ${i}`);
      assert.ok(asks[i]! > ref && asks[i]! < ref * (1 + offset) + 0.1 + 1e-9, `ask ${i}`);
      if (i > 0) assert.ok(bids[i]! < bids[i - 1]! && asks[i]! > asks[i - 1]!, 'levels move outward');
    }
  });

  test('skew: a long position shades both sides down, a short one up', () => {
    const ref = 3_400;
    const flat = ladder(ref, 0, LADDER, 0.01);
    const long = ladder(ref, LADDER.maxPosition / 2, LADDER, 0.01);
    const short = ladder(ref, -LADDER.maxPosition / 2, LADDER, 0.01);
    for (const s of ['buy', 'sell'] as const) {
      side(long, s).forEach((p, i) => assert.ok(p < side(flat, s)[i]!, `long ${s} ${i}`));
      side(short, s).forEach((p, i) => assert.ok(p > side(flat, s)[i]!, `short ${s} ${i}`));
    }
  });

  test('inventory limit: no more buying at +max, no more selling at -max; the shade is capped beyond', () => {
    const ref = 100_000;
    const atMax = ladder(ref, LADDER.maxPosition, LADDER, 0.1);
    assert.deepEqual(side(atMax, 'buy'), []);
    assert.equal(side(atMax, 'sell').length, LADDER.levels);
    const atMin = ladder(ref, -LADDER.maxPosition, LADDER, 0.1);
    assert.deepEqual(side(atMin, 'sell'), []);
    assert.equal(side(atMin, 'buy').length, LADDER.levels);
    // Far beyond the limit the bid that reduces a short never rises above the reference.
    const beyond = ladder(ref, -10 * LADDER.maxPosition, LADDER, 0.1);
    assert.ok(side(beyond, 'buy').every((p) => p <= ref));
    assert.deepEqual(side(beyond, 'buy'), side(atMin, 'buy'));
  });
});

describe('option quote', () => {
  test('half-spread = max(hVol x vega, |delta| x F x cover, minTicks x tick) from the maker\'s own vol', () => {
    const cases: Partial<OptionQuoteInput>[] = [
      { strike: 97_000, T: 30 / 365 }, // ATM: large vega
      { strike: 97_000, T: 120 / 365 }, // longer: larger vega
      { strike: 130_000, T: 2 / 365 }, // far wing, short-dated: vega below a tick
      { strike: 90_000, T: 7 / 365, type: 'put' },
    ];
    const halves: number[] = [];
    for (const c of cases) {
      const input = option(c);
      const sigma = makerVol(VIEW, input.forward, input.strike, input.T);
      const g = black76({ F: input.forward, K: input.strike, T: input.T, sigma, type: input.type });
      const { half } = optionTheo(input, OPTION);
      const byDelta = (Math.abs(g.delta) * input.forward * OPTION.forwardCoverBps) / 10_000;
      assert.equal(half, Math.max(OPTION.minTicks * input.tick, OPTION.hVolPts * g.vega, byDelta));
      halves.push(half);
    }
    assert.ok(halves[1]! > halves[0]! && halves[0]! > halves[3]!, `half-spreads ${halves}`);
    assert.equal(halves[2], 0.2, 'a wing with vega below a tick is quoted minTicks wide each side');
    // hVol in vol points scales the price half-spread linearly when vega dominates.
    const wide = optionTheo(option(), { ...OPTION, hVolPts: 2 }).half;
    assert.ok(Math.abs(wide - 2 * halves[0]!) < 1e-9);
  });

  test('a deep in-the-money option is wide enough to hold its mark through a re-anchoring move (10 bp)', () => {
    // A 2-day call 10 % in the money: delta ~1, vega tiny. Its value moves ~1:1 with the forward.
    const input = option({ strike: 87_000, T: 2 / 365 });
    const { theo, half, delta } = optionTheo(input, OPTION);
    assert.ok(delta > 0.99, `delta ${delta}`);
    const moved = optionTheo({ ...input, forward: input.forward * (1 + 10 / 10_000) }, OPTION).theo; // optionMoveBps
    assert.ok(moved - theo <= half + 1e-6, `value moved ${moved - theo}, half-spread ${half}`);
    assert.ok(half > 100 * input.tick, 'far wider than a few ticks');
  });

  test('flat inventory: bid = theo - half and ask = theo + half, rounded outward to the tick', () => {
    const input = option({ strike: 99_000 });
    const { theo, half } = optionTheo(input, OPTION);
    const levels = optionQuote(input, OPTION);
    const [bid] = side(levels, 'buy');
    const [ask] = side(levels, 'sell');
    assert.equal(bid, floorTo(theo - half, 0.1));
    assert.equal(ask, ceilTo(theo + half, 0.1));
    assert.ok(theo - bid! >= half - 1e-9 && theo - bid! < half + 0.1 + 1e-9);
    assert.ok(ask! - theo >= half - 1e-9 && ask! - theo < half + 0.1 + 1e-9);
    assert.ok(levels.every((l) => l.quantity === OPTION.size));
  });

  test('theo inside the quote, prices on the tick and >= a tick, for any strike, tenor, position', () => {
    fc.assert(fc.property(
      fc.record({
        forward: fc.double({ min: 500, max: 200_000, noNaN: true }),
        moneyness: fc.double({ min: 0.5, max: 1.6, noNaN: true }),
        days: fc.double({ min: 0.05, max: 200, noNaN: true }),
        type: fc.constantFrom('call' as const, 'put' as const),
        position: fc.double({ min: -40, max: 40, noNaN: true }),
        tick: fc.constantFrom(0.1, 0.01),
      }),
      ({ forward, moneyness, days, type, position, tick }) => {
        const input = option({ forward, strike: forward * moneyness, T: days / 365, type, position, tick });
        const { theo } = optionTheo(input, OPTION);
        const levels = optionQuote(input, OPTION);
        const [bid] = side(levels, 'buy');
        const [ask] = side(levels, 'sell');
        for (const l of levels) {
          assert.ok(onTick(l.price, tick) && l.price >= tick - 1e-12, `${l.price} on the tick`);
        }
        if (bid !== undefined) assert.ok(bid <= theo + 1e-9, `bid ${bid} <= theo ${theo}`);
        if (ask !== undefined) assert.ok(ask >= theo - 1e-9, `ask ${ask} >= theo ${theo}`);
        if (bid !== undefined && ask !== undefined) assert.ok(ask > bid);
        if (position <= -OPTION.maxPosition) assert.equal(ask, undefined, 'no selling at the short limit');
        if (position >= OPTION.maxPosition) assert.equal(bid, undefined, 'no buying at the long limit');
      },
    ), { numRuns: 500 });
  });

  test('inventory: long shades the quote down, short up; a bid below one tick is not sent', () => {
    const flat = optionQuote(option(), OPTION);
    const long = optionQuote(option({ position: 10 }), OPTION);
    const short = optionQuote(option({ position: -10 }), OPTION);
    for (const s of ['buy', 'sell'] as const) {
      assert.ok(side(long, s)[0]! < side(flat, s)[0]!, `long ${s}`);
      assert.ok(side(short, s)[0]! > side(flat, s)[0]!, `short ${s}`);
    }
    const worthless = optionQuote(option({ strike: 200_000, T: 1 / 365 }), OPTION);
    assert.deepEqual(worthless.map((l) => [l.side, l.price]), [['sell', OPTION.minTicks * 0.1]]);
  });
});

describe('wire prices', () => {
  test('exact decimals at the market precision, never an exponent', () => {
    assert.equal(priceString(0.1 + 0.2, 1), '0.3');
    assert.equal(priceString(1e-7, 8), '0.0000001');
    assert.equal(priceString(123_456_789.125, 2), '123456789.13');
    assert.equal(priceString(1e21 / 1e12, 1), '1000000000');
    assert.equal(priceString(3, 2), '3');
    assert.throws(() => priceString(Number.NaN, 2), RangeError);
    assert.throws(() => priceString(Infinity, 2), RangeError);
    // A price already on the tick is not pushed a tick away by float noise, either way.
    assert.equal(priceString(floorTo(0.3, 0.1), 1), '0.3');
    assert.equal(priceString(ceilTo(0.3, 0.1), 1), '0.3');
    assert.equal(priceString(floorTo(3400.07, 0.01), 2), '3400.07');
    assert.equal(priceString(ceilTo(3400.07, 0.01), 2), '3400.07');
  });

  test('every price the configured maker sends is a plain decimal string on the tick', () => {
    const strings: string[] = [];
    const markets = [['BTC', 97_000.05, 0.1, 1], ['ETH', 3_399.995, 0.01, 2]] as const;
    for (const [u, ref, tick, decimals] of markets) {
      const params = MARKET_MAKER_CONFIG.perp[u]!;
      for (const l of ladder(ref, 3, params, tick)) strings.push(priceString(l.price, decimals));
      for (const k of [0.6, 0.9, 1, 1.1, 1.5]) {
        for (const days of [0.2, 3, 30, 120]) {
          const view = MARKET_MAKER_CONFIG.vol[u]!;
          const input = option({ forward: ref, strike: ref * k, T: days / 365, tick, view });
          for (const l of optionQuote(input, MARKET_MAKER_CONFIG.option)) {
            strings.push(priceString(l.price, decimals));
          }
        }
      }
    }
    assert.ok(strings.length > 80, `${strings.length} prices`);
    for (const s of strings) assert.match(s, /^[0-9]+(\.[0-9]{1,2})?$/, s);
  });
});
