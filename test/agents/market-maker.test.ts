/**
 * The reference market maker end to end: the REAL service in-process (test/support/harness.ts)
 * with MARKET_MAKER=on, observed only from outside over HTTP (plus the account count, to show that
 * every resting order belongs to the maker's one ordinary account).
 *
 * 1. Simulated feed (the default start, with fast chain blocks): within 30 s every market of
 *    /perps/markets (perps, dated futures, spot) has a two-sided book, every option expiry of BTC
 *    and ETH has marks on all its rows and its forward from its dated future, and DVOL has a value
 *    with computedAt and sourceTimestamp. The books carry exactly the configured ladders (levels and
 *    sizes of config/market-maker.ts) and the option marks sit inside the maker's quotes.
 *    Exception, by the board's rule (an expiry needs 5 usable quotes, no invented mark): in the last
 *    hours before an 08:00 UTC expiry the nearest daily's wings are worth less than a few ticks, so
 *    an expiry under 4 h away may have no mark on any row — but never marks on some rows only.
 * 2. Stale inputs (push feed, INDEX_MAX_AGE_MS 1500): while the test publishes the index the maker
 *    quotes everything; once the index goes stale it pulls every quote — every book is empty except
 *    for one resting bid of another account, which shows the books were emptied by the maker and
 *    not by the venue — the board's rows have no mark and DVOL none; publishing again brings the
 *    quotes back.
 * 3. Re-quotes (push feed, a second maker with a 5 s refresh and `moveBps` 0 started by the test
 *    against the service's address and funded through the admin routes, its orders read with its
 *    own key): with the index unchanged, its spot ladder is not re-sent before the refresh interval
 *    and is re-sent (the same prices) as a heartbeat at it; an index moved by 0.02 USD, one tick of
 *    the best bid, is re-sent at once.
 * 4. MARKET_MAKER=off: the books stay empty and no account exists.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generatePrivateKey } from 'viem/accounts';
import { adminHttpFunder } from '../../src/agents/funding.ts';
import { MarketMaker } from '../../src/agents/market-maker.ts';
import { ladder, priceString } from '../../src/agents/quoting.ts';
import { MARKET_MAKER_CONFIG } from '../../src/config/market-maker.ts';
import { fx } from '../../src/core/money.ts';
import { ADMIN_TOKEN, admin, call, fund, signIn, startService, type TestService } from '../support/harness.ts';

const LIMITS = { RATE_LIMIT_ANONYMOUS: '1000000' };
const HOUR = 3_600_000;

interface Market {
  id: string;
  marketType: 'perp' | 'future' | 'spot';
  underlying: string;
  markPrice: string | null;
  sizeDecimals: number;
}
type Level = [string, string];
interface Book {
  bids: Level[];
  asks: Level[];
}
interface Row {
  id: string;
  type: 'call' | 'put';
  strike: string;
  expiry: string;
  bid: string | null;
  ask: string | null;
  mark: string | null;
}

/** Polls `probe` until it returns true, failing with its last explanation after `ms`. */
async function until(ms: number, probe: () => Promise<true | string>): Promise<number> {
  const start = Date.now();
  let last = '';
  while (Date.now() - start < ms) {
    const r = await probe();
    if (r === true) return Date.now() - start;
    last = r;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`not within ${ms} ms: ${last}`);
}

const get = async <T>(base: string, path: string): Promise<T> => {
  const r = await call(base, path);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body as T;
};

async function books(base: string): Promise<{ market: Market; book: Book; clob: Book | null }[]> {
  const markets = await get<Market[]>(base, '/perps/markets');
  return Promise.all(markets.map(async (market) => ({
    market,
    book: await get<Book>(base, `/perps/orderbook/${market.id}`),
    clob: market.marketType === 'spot' ? await get<Book>(base, `/orderbook/${market.id}`) : null,
  })));
}

const twoSided = (b: Book) => b.bids.length > 0 && b.asks.length > 0;
const empty = (b: Book) => b.bids.length === 0 && b.asks.length === 0;

/** The wire size of a configured ladder level at the market's step. */
function configuredSize(size: number, decimals: number): string {
  return String(Math.floor(size * 10 ** decimals + 1e-9) / 10 ** decimals);
}

describe('market maker on the default start (simulated feed)', () => {
  let ts: TestService;
  let base: string;
  const env = {
    FEED: 'simulated', MARKET_MAKER: 'on', TICK_MS: '250', CHAIN_BLOCK_MS: '40', DEPOSIT_CONFIRMATIONS: '2',
    ...LIMITS,
  };

  before(async () => {
    ts = await startService(env);
    base = ts.url;
  });
  after(async () => {
    await ts.close();
  });

  test('every market of /perps/markets gets a two-sided book', async (t) => {
    const ms = await until(30_000, async () => {
      const all = await books(base);
      const missing = all.filter((x) => !twoSided(x.book) || (x.clob !== null && !twoSided(x.clob)));
      if (all.length < 6) return `only ${all.length} markets listed`;
      return missing.length === 0 ? true : `not two-sided: ${missing.map((x) => x.market.id).join(', ')}`;
    });
    const kinds = new Set((await books(base)).map((x) => x.market.marketType));
    assert.deepEqual([...kinds].sort(), ['future', 'perp', 'spot']);
    t.diagnostic(`all linear and spot books two-sided ${ms} ms after the service started listening`);
  });

  test('every BTC and ETH option expiry has marks and a forward from its future; DVOL a value', async (t) => {
    type Forwards = Record<string, { forwardSource: string }>;
    type Board = { expiries: string[]; expiryForwards: Forwards; options: Row[] };
    const ms = await until(30_000, async () => {
      for (const u of ['BTC', 'ETH']) {
        const board = await get<Board>(base, `/markets/board?underlying=${u}`);
        if (board.expiries.length < 4) return `${u}: ${board.expiries.length} expiries`;
        for (const e of board.expiries) {
          const rows = board.options.filter((r) => r.expiry === e);
          const marked = rows.filter((r) => r.mark !== null).length;
          const near = Date.parse(e) - Date.now() < 4 * HOUR;
          if (marked !== rows.length && !(near && marked === 0)) return `${u} ${e}: ${marked} marks`;
          if (board.expiryForwards[e]!.forwardSource !== 'future') return `${u} ${e}: forward not a future`;
        }
        const d = await get<{ dvol: string | null }>(base, `/markets/dvol?underlying=${u}`);
        if (d.dvol === null) return `${u}: no DVOL yet`;
      }
      return true;
    });
    t.diagnostic(`every option expiry marked and DVOL live ${ms} ms after the service started listening`);
    for (const u of ['BTC', 'ETH']) {
      const d = await get<{ dvol: string; tenorDays: number; computedAt: string; sourceTimestamp: string }>(
        base, `/markets/dvol?underlying=${u}`,
      );
      const dvol = Number(d.dvol);
      assert.ok(dvol > 20 && dvol < 150, `${u} DVOL ${d.dvol}`);
      assert.equal(d.tenorDays, 30);
      const computed = Date.parse(d.computedAt);
      const source = Date.parse(d.sourceTimestamp);
      const fresh = Date.now() - computed < 5_000 && source <= computed && computed - source < 10_000;
      assert.ok(fresh, JSON.stringify(d));
      t.diagnostic(`${u} DVOL ${d.dvol}`);
    }
  });

  test('the books carry the configured ladders as ordinary orders of one account', async () => {
    const cfg = MARKET_MAKER_CONFIG;
    for (const { market, book } of await books(base)) {
      const params = (market.marketType === 'spot' ? cfg.spot : cfg.perp)[market.underlying]!;
      const size = configuredSize(params.size, market.sizeDecimals);
      assert.equal(book.bids.length, params.levels, `${market.id} bid levels`);
      assert.equal(book.asks.length, params.levels, `${market.id} ask levels`);
      for (const [, s] of [...book.bids, ...book.asks]) assert.equal(s, size, `${market.id} level size`);
      assert.ok(Number(book.bids[0]![0]) < Number(book.asks[0]![0]), `${market.id} not crossed`);
    }
    for (const u of ['BTC', 'ETH']) {
      type Board = { expiryForwards: Record<string, { forwardPrice: string }>; options: Row[] };
      const board = await get<Board>(base, `/markets/board?underlying=${u}`);
      const quoted = board.options.filter((r) => r.bid !== null && r.ask !== null);
      const all = board.options.length;
      assert.ok(quoted.length >= all * 0.9, `${u}: ${quoted.length}/${all} quoted`);
      for (const r of quoted.filter((_, k) => k % 7 === 0)) {
        const book = await get<Book>(base, `/orderbook/${r.id}`);
        assert.deepEqual(book.bids.map(([, s]) => s), [String(cfg.option.size)], r.id);
        assert.deepEqual(book.asks.map(([, s]) => s), [String(cfg.option.size)], r.id);
      }
      // The surface is fitted to the out-of-the-money quotes: the reference marks sit inside them
      // (expiries over a day away; a quote refreshed while the forward moves may lag for a moment).
      const otm = quoted.filter((r) => {
        const F = Number(board.expiryForwards[r.expiry]!.forwardPrice);
        const later = Date.parse(r.expiry) - Date.now() > 24 * HOUR;
        return r.mark !== null && later && (r.type === 'call') === Number(r.strike) >= F;
      });
      const inside = otm.filter((r) => Number(r.bid) <= Number(r.mark) && Number(r.mark) <= Number(r.ask));
      const share = `${u}: ${inside.length}/${otm.length} inside`;
      assert.ok(otm.length >= 50 && inside.length >= otm.length * 0.8, share);
    }
    assert.equal(ts.service.exchange.accounts.count(), 1, 'the maker is the only account');
  });
});

describe('market maker with stale inputs (push feed)', () => {
  let ts: TestService;
  let base: string;
  let publisher: NodeJS.Timeout | null = null;
  let publishing: Promise<void> = Promise.resolve();
  let btcIndex = '100000';
  const publish = async () => {
    for (const [underlying, price] of [['BTC', btcIndex], ['ETH', '3000']]) {
      await call(base, '/admin/index', { body: { underlying, price }, headers: admin });
    }
  };
  const startPublishing = () => {
    publisher = setInterval(() => {
      publishing = publishing.then(publish);
    }, 300);
  };
  /** Stops publishing once the request in flight is answered (a closing server waits for it). */
  const stopPublishing = async () => {
    if (publisher !== null) clearInterval(publisher);
    publisher = null;
    await publishing;
  };

  before(async () => {
    const env = { FEED: 'push', MARKET_MAKER: 'on', INDEX_MAX_AGE_MS: '1500', TICK_MS: '250', ...LIMITS };
    ts = await startService(env);
    base = ts.url;
  });
  after(async () => {
    await stopPublishing();
    await ts.close();
  });

  const allQuoted = async (): Promise<true | string> => {
    const notTwoSided = (await books(base)).filter((x) => !twoSided(x.book)).map((x) => x.market.id);
    if (notTwoSided.length > 0) return `not two-sided: ${notTwoSided.join(', ')}`;
    for (const u of ['BTC', 'ETH']) {
      const rows = (await get<{ options: Row[] }>(base, `/markets/board?underlying=${u}`)).options;
      if (rows.length === 0 || !rows.some((r) => r.mark !== null)) return `${u}: no option marks yet`;
    }
    return true;
  };

  test('quotes while the index is fresh, pulls everything once it is stale, quotes again', async (t) => {
    await publish();
    startPublishing();
    await until(30_000, allQuoted);
    const bystander = await signIn(base);
    await fund(base, bystander, '100000', 15_000);
    const transfer = { from: 'wallet', to: 'perps', amount: '100000' };
    const moved = await call(base, '/wallet/transfer', { token: bystander.token, body: transfer });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    const bid = { marketId: 'BTC-PERP', side: 'buy', type: 'limit', quantity: '0.01', price: '97000' };
    const placed = await call(base, '/perps/orders', { token: bystander.token, body: bid });
    assert.ok(placed.status === 200 || placed.status === 201, JSON.stringify(placed.body));

    await stopPublishing();
    const pulledAfter = await until(15_000, async () => {
      const all = await books(base);
      const live = all.filter((x) => x.market.id !== 'BTC-PERP' && !empty(x.book)).map((x) => x.market.id);
      if (live.length > 0) return `still quoted: ${live.join(', ')}`;
      const perp = all.find((x) => x.market.id === 'BTC-PERP')!.book;
      if (perp.asks.length > 0 || perp.bids.length !== 1) return `BTC-PERP: ${JSON.stringify(perp)}`;
      for (const u of ['BTC', 'ETH']) {
        const quoted = (await get<{ options: Row[] }>(base, `/markets/board?underlying=${u}`)).options
          .filter((r) => r.bid !== null || r.ask !== null);
        if (quoted.length > 0) return `${u}: ${quoted.length} option books still quoted`;
      }
      return true;
    });
    t.diagnostic(`every quote pulled ${pulledAfter} ms after the last index publication (max age 1500 ms)`);
    for (const u of ['BTC', 'ETH']) {
      type Board = { underlyingPrice: string | null; options: Row[] };
      const board = await get<Board>(base, `/markets/board?underlying=${u}`);
      assert.equal(board.underlyingPrice, null);
      assert.ok(board.options.length > 0 && board.options.every((r) => r.mark === null), `${u}: no mark`);
      assert.equal((await get<{ dvol: string | null }>(base, `/markets/dvol?underlying=${u}`)).dvol, null);
    }
    for (const m of await get<Market[]>(base, '/perps/markets')) assert.equal(m.markPrice, null, m.id);
    const perp = await get<Book>(base, '/perps/orderbook/BTC-PERP');
    assert.deepEqual(perp, { bids: [['97000', '0.01']], asks: [] }, 'the other account\'s bid is untouched');

    await publish();
    startPublishing();
    await until(30_000, allQuoted);
  });

  test('a perp is quoted around its index: a 1 % index move re-centres its book and mark', async (t) => {
    btcIndex = '101000';
    const followed = await until(10_000, async () => {
      const book = await get<Book>(base, '/perps/orderbook/BTC-PERP?depth=1');
      const mark = (await get<Market[]>(base, '/perps/markets')).find((m) => m.id === 'BTC-PERP')!.markPrice;
      if (book.bids.length === 0 || book.asks.length === 0 || mark === null) return 'BTC-PERP not quoted';
      const mid = (Number(book.bids[0]![0]) + Number(book.asks[0]![0])) / 2;
      const off = (x: number) => Math.abs(x / 101_000 - 1) * 10_000;
      return off(mid) <= 15 && off(Number(mark)) <= 15 ? true : `mid ${mid}, mark ${mark} against the index 101000`;
    });
    t.diagnostic(`BTC-PERP book and mark within 15 bp of the moved index after ${followed} ms`);
  });
});

describe('market maker re-quotes only a changed ladder, or at its heartbeat (push feed)', () => {
  const REFRESH = 5_000;
  const cfg = { ...MARKET_MAKER_CONFIG, moveBps: 0, linearRefreshMs: REFRESH, optionRefreshMs: REFRESH };
  const key = generatePrivateKey();
  let ts: TestService;
  let base: string;
  let maker: MarketMaker;
  let btc = '100000';
  let publisher: NodeJS.Timeout | null = null;
  let publishing: Promise<unknown> = Promise.resolve();
  const publish = () => Promise.all([['BTC', btc], ['ETH', '3000']].map(([underlying, price]) =>
    call(base, '/admin/index', { body: { underlying, price }, headers: admin })));

  before(async () => {
    ts = await startService({ FEED: 'push', MARKET_MAKER: 'off', INDEX_MAX_AGE_MS: '5000', TICK_MS: '250', ...LIMITS });
    base = ts.url;
    await publish();
    publisher = setInterval(() => {
      publishing = publishing.then(publish);
    }, 300);
    maker = new MarketMaker(cfg, { privateKey: key, now: () => ts.service.ctx.now(), log: () => {} });
    await maker.start({ baseUrl: base, funder: adminHttpFunder(base, ADMIN_TOKEN, () => {}) });
  });
  after(async () => {
    if (publisher !== null) clearInterval(publisher);
    await publishing;
    await maker.stop();
    await ts.close();
  });

  test('an unchanged ladder waits for the refresh interval; a one-tick change is sent at once', async (t) => {
    type Order = { price: string; createdAt: string };
    const { token } = await signIn(base, key);
    const spot = async () => {
      const orders = (await call<Order[]>(base, '/orders/open?marketId=BTC-USDC', { token })).body;
      return { at: Math.max(0, ...orders.map((o) => Date.parse(o.createdAt))), prices: orders.map((o) => o.price).sort() };
    };
    const wire = (index: number) => ladder(index, 0, cfg.spot.BTC!, 0.01).map((l) => priceString(l.price, 2)).sort();
    await until(30_000, async () => ((await spot()).prices.length === 6 ? true : 'BTC-USDC not quoted yet'));
    const first = await spot();
    assert.deepEqual(first.prices, wire(100_000));
    let heartbeat = first;
    await until(REFRESH + 5_000, async () => {
      heartbeat = await spot();
      return heartbeat.at !== first.at ? true : 'not re-sent yet';
    });
    const gap = heartbeat.at - first.at;
    t.diagnostic(`unchanged ladder re-sent ${gap} ms after the last (refresh ${REFRESH} ms)`);
    // createdAt is stamped when the quote is sequenced, a few ms after the maker decided to send it.
    assert.ok(gap >= REFRESH - 100 && gap < REFRESH + 3_000, `heartbeat after ${gap} ms`);
    assert.deepEqual(heartbeat.prices, first.prices, 'the same ladder');

    btc = '100000.02';
    const [before, after] = [wire(100_000), wire(100_000.02)];
    const bestBid = (prices: string[]) => prices.filter((p) => Number(p) < 100_000).sort((a, b) => Number(b) - Number(a))[0];
    assert.equal(fx(bestBid(after)!) - fx(bestBid(before)!), fx('0.01'), 'the best bid moves one tick');
    let moved = heartbeat;
    await until(REFRESH, async () => {
      moved = await spot();
      return moved.prices.join() === after.join() ? true : `still ${moved.prices.join()}`;
    });
    t.diagnostic(`one-tick change sent ${moved.at - heartbeat.at} ms after the heartbeat`);
    assert.ok(moved.at - heartbeat.at < REFRESH, 'before the refresh interval');
  });
});

describe('MARKET_MAKER=off', () => {
  test('the books stay empty', async () => {
    const ts = await startService({ FEED: 'simulated', MARKET_MAKER: 'off', TICK_MS: '250', ...LIMITS });
    try {
      await until(10_000, async () => {
        const n = (await get<unknown[]>(ts.url, '/options/instruments')).length;
        return n > 0 ? true : 'options not listed yet';
      });
      await new Promise((res) => setTimeout(res, 2_500));
      for (const { market, book } of await books(ts.url)) assert.ok(empty(book), market.id);
      for (const u of ['BTC', 'ETH']) {
        const board = await get<{ options: Row[] }>(ts.url, `/markets/board?underlying=${u}`);
        assert.ok(board.options.length > 0);
        assert.ok(board.options.every((r) => r.bid === null && r.ask === null && r.mark === null), u);
      }
      assert.equal((await get<{ dvol: string | null }>(ts.url, '/markets/dvol')).dvol, null);
      assert.equal(ts.service.exchange.accounts.count(), 0, 'no account was opened');
    } finally {
      await ts.close();
    }
  });
});
