// Copied verbatim from /work/shared/bench/workload.mjs (the shared engine-independent benchmark workload);
// keep it identical to that file so results stay comparable with nob-driver.mjs runs.
// Seeded, engine-independent order-flow generator for single-symbol matching-engine benchmarks.
//
// generateWorkload(options) yields plain objects { type, side, price, size, id }:
//   type  'limit'  GTC limit order (matches, then the remainder rests)
//         'ioc'    immediate-or-cancel limit order (matches, the remainder is dropped)
//         'market' market order, price = 0 (matches, the remainder is dropped)
//         'cancel' cancel of a resting order: id = that order's id, side/price = its side/price,
//                  size = 0
//   side  'buy' | 'sell'
//   price integer ticks (>= 1); 0 for market
//   size  integer lots (>= 1); 0 for cancel
//   id    integer; new orders get 1, 2, 3, ... (market and ioc orders use ids too)
//
// The stream first holds `prefill` passive GTC limits (to start from a populated book), then `n`
// ops drawn with the configured mix (default 60% limit, 25% cancel, 10% market, 5% ioc).
//
// To choose cancel targets that really rest, and to keep the book near `targetResting` orders, the
// generator keeps a small shadow book with plain price-time priority (fills at the maker's price,
// no self-trade prevention). The stream depends only on the options and the seed, never on the
// engine under test, so every engine sees exactly the same ops. An engine with the same semantics
// hits every cancel and ends with the resting orders and volumes reported in `stats`.
//
//   import { generateWorkload, buildWorkload } from './workload.mjs';
//   for (const op of generateWorkload({ n: 1_000_000, seed: 42 })) { ... }
//   const { prefill, ops, stats } = buildWorkload({ n: 1_000_000, seed: 42 });

export const DEFAULTS = Object.freeze({
  n: 1_000_000,          // mixed ops after the prefill
  seed: 42,              // PRNG seed (uint32)
  startMid: 100_000,     // initial mid price, in ticks
  prefill: 5_000,        // passive GTC limits emitted before the mixed ops
  targetResting: 5_000,  // book size (orders) the flow is steered toward
  // op mix (must sum to 1)
  pLimit: 0.60,
  pCancel: 0.25,
  pMarket: 0.10,
  pIoc: 0.05,
  // mid-price random walk: per op, move one tick with probability walkStepProb; the chance of
  // stepping back toward startMid grows by walkRevert per tick of displacement
  walkStepProb: 0.05,
  walkRevert: 0.002,
  // passive GTC limits rest 1 + Exp(meanOffset) ticks behind the mid
  meanOffset: 8,
  // a GTC limit is marketable (priced 0-2 ticks through the opposite touch) with probability
  // crossProb + crossGain * max(0, resting / targetResting - 1), capped at 0.9
  crossProb: 0.05,
  crossGain: 0.5,
  // ioc limits are priced 0..iocMaxThrough ticks through the opposite touch
  iocMaxThrough: 4,
  // market and ioc sizes = maker size draw * takerMult (1 keeps the book near targetResting)
  takerMult: 1,
  // optional object that receives the shadow book's end state when the generator finishes
  stats: null,
});

// mulberry32: small, fast 32-bit PRNG; returns floats in [0, 1)
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BAND = 1 << 17; // price ladder width of the shadow book, centred on startMid

export function* generateWorkload(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const mixSum = o.pLimit + o.pCancel + o.pMarket + o.pIoc;
  if (Math.abs(mixSum - 1) > 1e-9) throw new Error(`op mix sums to ${mixSum}, expected 1`);
  const rnd = mulberry32(o.seed);
  const cLimit = o.pLimit;
  const cCancel = cLimit + o.pCancel;
  const cMarket = cCancel + o.pMarket;

  // maker size: 1 + a*b*c with a, b, c uniform in 0..5 -> 1..126 lots, mean ~16.6, heavy tail
  const makerSize = () =>
    1 + Math.floor(rnd() * 6) * Math.floor(rnd() * 6) * Math.floor(rnd() * 6);

  // ---- shadow book: dense ladder of FIFO levels, lazy deletion of cancelled entries ----
  const base = o.startMid - BAND / 2;
  const minPrice = Math.max(1, base + 1);
  const maxPrice = base + BAND - 2;
  const clamp = (p) => (p < minPrice ? minPrice : p > maxPrice ? maxPrice : p);
  const levels = new Array(BAND); // idx -> { q: order[], head, live }
  const resting = []; // live resting orders, for uniform cancel picks (swap-remove by o.pos)
  let bestBid = -1; // ladder index, -1 when no bids
  let bestAsk = BAND; // ladder index, BAND when no asks
  let nBid = 0;
  let nAsk = 0;
  const st = { trades: 0, tradedQty: 0, marketNoFill: 0, cancels: 0, maxResting: 0 };

  const removeResting = (ord) => {
    const last = resting.pop();
    if (last !== ord) {
      resting[ord.pos] = last;
      last.pos = ord.pos;
    }
  };
  const nextAskFrom = (i) => {
    if (nAsk === 0) return BAND;
    while (i < BAND && (levels[i] === undefined || levels[i].live === 0)) i++;
    return i;
  };
  const nextBidFrom = (i) => {
    if (nBid === 0) return -1;
    while (i >= 0 && (levels[i] === undefined || levels[i].live === 0)) i--;
    return i;
  };
  const emptyLevel = (lv) => {
    lv.q.length = 0;
    lv.head = 0;
  };

  // match an incoming order against the opposite side; limitIdx < 0 means market
  const match = (buy, limitIdx, qty) => {
    while (qty > 0) {
      const idx = buy ? bestAsk : bestBid;
      if (buy ? idx >= BAND : idx < 0) break;
      if (limitIdx >= 0 && (buy ? idx > limitIdx : idx < limitIdx)) break;
      const lv = levels[idx];
      while (qty > 0 && lv.live > 0) {
        const m = lv.q[lv.head];
        if (m.rem === 0) { lv.head++; continue; } // cancelled earlier
        const f = m.rem < qty ? m.rem : qty;
        m.rem -= f;
        qty -= f;
        st.trades++;
        st.tradedQty += f;
        if (m.rem === 0) {
          lv.head++;
          lv.live--;
          if (buy) nAsk--; else nBid--;
          removeResting(m);
        }
      }
      if (lv.live === 0) {
        emptyLevel(lv);
        if (buy) bestAsk = nextAskFrom(idx + 1); else bestBid = nextBidFrom(idx - 1);
      }
    }
    return qty;
  };

  const rest = (buy, price, qty, id) => {
    const idx = price - base;
    let lv = levels[idx];
    if (lv === undefined) lv = levels[idx] = { q: [], head: 0, live: 0 };
    const ord = { id, buy, price, rem: qty, pos: resting.length };
    lv.q.push(ord);
    lv.live++;
    resting.push(ord);
    if (buy) { nBid++; if (idx > bestBid) bestBid = idx; } else { nAsk++; if (idx < bestAsk) bestAsk = idx; }
    if (resting.length > st.maxResting) st.maxResting = resting.length;
  };

  const cancel = (ord) => {
    const idx = ord.price - base;
    const lv = levels[idx];
    ord.rem = 0;
    lv.live--;
    removeResting(ord);
    if (ord.buy) nBid--; else nAsk--;
    if (lv.live === 0) {
      emptyLevel(lv);
      if (ord.buy) { if (idx === bestBid) bestBid = nextBidFrom(idx - 1); } else if (idx === bestAsk) bestAsk = nextAskFrom(idx + 1);
    } else if (lv.q.length - lv.head > 2 * lv.live + 32) {
      // compact a level that has collected many cancelled entries
      lv.q = lv.q.slice(lv.head).filter((x) => x.rem > 0);
      lv.head = 0;
    }
  };

  let mid = o.startMid;
  let nextId = 1;

  const passivePrice = (buy) => {
    const off = Math.floor(-Math.log(1 - rnd()) * o.meanOffset);
    return clamp(buy ? mid - 1 - off : mid + 1 + off);
  };
  // price `through` ticks past the opposite touch (or the mid when that side is empty)
  const aggressivePrice = (buy, through) => {
    if (buy) return clamp((bestAsk < BAND ? bestAsk + base : mid + 1) + through);
    return clamp((bestBid >= 0 ? bestBid + base : mid - 1) - through);
  };

  for (let i = 0; i < o.prefill; i++) {
    const buy = rnd() < 0.5;
    const price = passivePrice(buy);
    const size = makerSize();
    const id = nextId++;
    const left = match(buy, price - base, size);
    if (left > 0) rest(buy, price, left, id);
    yield { type: 'limit', side: buy ? 'buy' : 'sell', price, size, id };
  }

  for (let i = 0; i < o.n; i++) {
    if (rnd() < o.walkStepProb) {
      const disp = mid - o.startMid;
      const pDown = Math.min(0.95, Math.max(0.05, 0.5 + o.walkRevert * disp));
      mid += rnd() < pDown ? -1 : 1;
    }

    const u = rnd();
    if (u >= cLimit && u < cCancel && resting.length > 0) {
      const ord = resting[Math.floor(rnd() * resting.length)];
      const price = ord.price;
      const side = ord.buy ? 'buy' : 'sell';
      cancel(ord);
      st.cancels++;
      yield { type: 'cancel', side, price, size: 0, id: ord.id };
      continue;
    }

    const buy = rnd() < 0.5;
    const side = buy ? 'buy' : 'sell';
    const id = nextId++;

    if (u < cCancel) {
      // GTC limit (also taken when a cancel is drawn while the book is empty)
      const r = resting.length / o.targetResting;
      let pCross = o.crossProb + (r > 1 ? o.crossGain * (r - 1) : 0);
      if (pCross > 0.9) pCross = 0.9;
      const price = rnd() < pCross ? aggressivePrice(buy, Math.floor(rnd() * 3)) : passivePrice(buy);
      const size = makerSize();
      const left = match(buy, price - base, size);
      if (left > 0) rest(buy, price, left, id);
      yield { type: 'limit', side, price, size, id };
    } else if (u < cMarket) {
      const size = Math.max(1, Math.round(makerSize() * o.takerMult));
      if (match(buy, -1, size) === size) st.marketNoFill++;
      yield { type: 'market', side, price: 0, size, id };
    } else {
      const price = aggressivePrice(buy, Math.floor(rnd() * (o.iocMaxThrough + 1)));
      const size = Math.max(1, Math.round(makerSize() * o.takerMult));
      match(buy, price - base, size);
      yield { type: 'ioc', side, price, size, id };
    }
  }

  if (o.stats) {
    let bidQty = 0;
    let askQty = 0;
    for (const r of resting) { if (r.buy) bidQty += r.rem; else askQty += r.rem; }
    Object.assign(o.stats, st, {
      restingOrders: resting.length,
      restingBids: nBid,
      restingAsks: nAsk,
      bidQty,
      askQty,
      bestBid: bestBid >= 0 ? bestBid + base : null,
      bestAsk: bestAsk < BAND ? bestAsk + base : null,
      finalMid: mid,
    });
  }
}

// Materialize the stream (keeps generation out of timed loops); splits prefill from mixed ops.
export function buildWorkload(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const stats = {};
  const all = [];
  for (const op of generateWorkload({ ...o, stats })) all.push(op);
  return { prefill: all.slice(0, o.prefill), ops: all.slice(o.prefill), stats, options: o };
}

// Counts per op type, to check a stream has the intended mix.
export function summarize(ops) {
  const c = { limit: 0, cancel: 0, market: 0, ioc: 0 };
  for (const op of ops) c[op.type]++;
  return c;
}
