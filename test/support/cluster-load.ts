/**
 * Client load and its accounting for the distributed mode's kill tests (test/cluster/kill-*.test.ts).
 *
 * Signed-in, funded traders place post-only perp orders far from the mark (each under a unique
 * clientOrderId), cancel some of their acknowledged ones, and move USDC between their wallet and
 * perps buckets, each transfer of an amount no other transfer of that trader uses, so the command
 * log and the history name it. Every request goes to the next live gateway in turn and is
 * recorded with its outcome:
 *   acked        2xx: the command is durable and must survive every kill;
 *   refused      4xx: nothing was applied;
 *   unavailable  503 (its Retry-After is checked): it may or may not have been applied, which the
 *                checks decide by reading back, once;
 *   unreachable  the gateway's connection failed (it was killed): as unknown as a 503.
 * A request that gets no answer within HANG_MS is a hang, and anything else (401, 429, 500) is an
 * error: the tests assert there are none.
 *
 * The checks (verifyOrders, verifyTransfers, closingCheck) read back through every gateway, the
 * command log replayed from PostgreSQL (test/support/cluster.ts LogReplay) and the history.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { PgHistoryProjector, PgWalletHistory } from '../../src/adapters/postgres/history/index.ts';
import type { Command } from '../../src/core/commands.ts';
import { formatDecimal, fx } from '../../src/core/money.ts';
import { ExchangeQueries } from '../../src/core/queries.ts';
import { Cluster, exited, health, type ClusterShape } from './cluster.ts';
import { call, fund, signIn, waitFor, type Trader } from './harness.ts';

/** A request unanswered this long hangs (the bus deadline is ~6 s; a history wait ~5 s). */
export const HANG_MS = 20_000;
/** What each trader deposits, and moves to perps before the load. */
const DEPOSIT = '20000';
const INITIAL_PERPS = '10000';
const MARKET = 'BTC-PERP';
/** Acknowledged orders of each trader read back one by one (GET /perps/orders/:id) on each gateway. */
const BY_ID_SAMPLE = 10;

export type Outcome = 'acked' | 'refused' | 'unavailable' | 'unreachable';

export interface TrackedOrder {
  readonly trader: number;
  readonly clientOrderId: string;
  place: Outcome;
  id: string | null;
  cancel: Outcome | null;
}

export interface TrackedTransfer {
  readonly trader: number;
  readonly from: 'wallet' | 'perps';
  readonly to: 'wallet' | 'perps';
  readonly micros: bigint;
  outcome: Outcome;
}

interface Answer {
  readonly outcome: Outcome | 'error';
  readonly status: number | null;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- replies are read field by field
  readonly body: any;
}

/** Sign-in and funding of `count` traders (on the first gateway), each with perps collateral. */
export async function fundedTraders(gateway: string, count: number): Promise<Trader[]> {
  const traders = await Promise.all(Array.from({ length: count }, () => signIn(gateway)));
  await Promise.all(traders.map((t) => fund(gateway, t, DEPOSIT, 30_000)));
  for (const t of traders) {
    const moved = await call(gateway, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: INITIAL_PERPS } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
  }
  return traders;
}

/** The BTC-PERP mark as a gateway shows it, once the leader's feed has set one. */
export async function markPrice(gateway: string): Promise<number> {
  let mark = NaN;
  await waitFor(async () => {
    const stats = await call(gateway, `/perps/market-stats?marketId=${MARKET}`);
    mark = Number(stats.body?.markPrice);
    return Number.isFinite(mark) && mark > 0;
  }, 30_000, 100);
  return mark;
}

export class ExchangeLoad {
  readonly orders = new Map<string, TrackedOrder>();
  readonly transfers: TrackedTransfer[] = [];
  /** Every 503: where, and its Retry-After header. */
  readonly unavailable: { path: string; gateway: string; retryAfter: string | null; at: number }[] = [];
  readonly unreachable: { path: string; gateway: string; at: number }[] = [];
  readonly errors: string[] = [];
  readonly hangs: string[] = [];
  /** When each acknowledgement arrived, and from which gateway. */
  readonly acks: { at: number; gateway: string }[] = [];
  requests = 0;
  longestMs = 0;
  private running = false;
  private clients: Promise<void>[] = [];
  private turn = 0;
  private readonly counters: number[];

  constructor(
    /** The gateways up now: the test takes a killed one out and puts it back once restarted. */
    readonly gateways: string[],
    readonly traders: readonly Trader[],
    private readonly mark: number,
  ) {
    this.counters = traders.map(() => 0);
  }

  /**
   * `clients` concurrent clients, client i trading for trader i mod traders (one client per trader
   * keeps the accounting simple), each pausing `pauseMs` between requests (a light load).
   */
  start(clients = this.traders.length, pauseMs = 0): void {
    this.running = true;
    this.clients = Array.from({ length: clients }, (_, i) => this.client(i % this.traders.length, pauseMs));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.clients);
  }

  /** Acknowledgements since `since` (performance.now()), from `gateway` or from any. */
  ackedSince(since: number, gateway?: string): number {
    return this.acks.filter((a) => a.at >= since && (gateway === undefined || a.gateway === gateway)).length;
  }

  /** Requests still arriving acknowledged through every gateway up: `count` more on each. */
  async carriesOn(count: number, timeoutMs: number): Promise<void> {
    const since = performance.now();
    await waitFor(() => this.gateways.every((g) => this.ackedSince(since, g) >= count), timeoutMs, 20);
  }

  private async client(trader: number, pauseMs: number): Promise<void> {
    while (this.running) {
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      const gateway = this.gateways[this.turn++ % Math.max(1, this.gateways.length)];
      if (gateway === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const roll = Math.random();
      if (roll < 0.55) await this.place(gateway, trader);
      else if (roll < 0.8) await this.cancel(gateway, trader);
      else await this.transfer(gateway, trader);
    }
  }

  private async place(gateway: string, trader: number): Promise<void> {
    const n = ++this.counters[trader]!;
    const buy = n % 2 === 0;
    // Far from the mark (a post-only order that never trades), varied so the book has many levels.
    const price = buy ? Math.floor(this.mark * 0.8) - (n % 40) : Math.ceil(this.mark * 1.2) + (n % 40);
    const order: TrackedOrder = { trader, clientOrderId: `k${trader}-${n}`, place: 'unreachable', id: null, cancel: null };
    this.orders.set(order.clientOrderId, order);
    const body = { marketId: MARKET, side: buy ? 'buy' : 'sell', type: 'limit', postOnly: true, price: String(price), quantity: '0.01', clientOrderId: order.clientOrderId };
    const answer = await this.request(gateway, '/perps/orders', trader, body);
    if (answer.outcome === 'error') return;
    order.place = answer.outcome;
    if (answer.outcome === 'acked') order.id = String(answer.body.id);
  }

  private async cancel(gateway: string, trader: number): Promise<void> {
    const candidates = [...this.orders.values()].filter((o) => o.trader === trader && o.place === 'acked' && o.cancel === null);
    const order = candidates[Math.floor(Math.random() * candidates.length)];
    if (order === undefined) return this.place(gateway, trader);
    order.cancel = 'unreachable';
    const answer = await this.request(gateway, `/perps/orders/${order.id}/cancel`, trader, undefined, 'POST');
    if (answer.outcome !== 'error') order.cancel = answer.outcome;
  }

  private async transfer(gateway: string, trader: number): Promise<void> {
    const n = ++this.counters[trader]!;
    // 1.000001, 1.000002, ...: no two transfers of a trader move the same amount.
    const micros = 1_000_000n + BigInt(n);
    const [from, to] = n % 2 === 0 ? (['wallet', 'perps'] as const) : (['perps', 'wallet'] as const);
    const transfer: TrackedTransfer = { trader, from, to, micros, outcome: 'unreachable' };
    this.transfers.push(transfer);
    const answer = await this.request(gateway, '/wallet/transfer', trader, { from, to, amount: formatDecimal(micros * 10n ** 12n) });
    if (answer.outcome !== 'error') transfer.outcome = answer.outcome;
  }

  private async request(gateway: string, path: string, trader: number, body?: unknown, method = 'POST'): Promise<Answer> {
    this.requests++;
    const started = performance.now();
    const headers: Record<string, string> = { authorization: `Bearer ${this.traders[trader]!.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await fetch(gateway + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(HANG_MS) });
      const text = await res.text();
      const parsed: unknown = text.length > 0 ? JSON.parse(text) : undefined;
      return this.classify(gateway, path, res.status, res.headers.get('retry-after'), parsed);
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') {
        this.hangs.push(`${method} ${gateway}${path} gave no answer within ${HANG_MS} ms`);
        return { outcome: 'error', status: null, body: null };
      }
      this.unreachable.push({ path, gateway, at: performance.now() });
      return { outcome: 'unreachable', status: null, body: null };
    } finally {
      this.longestMs = Math.max(this.longestMs, performance.now() - started);
    }
  }

  private classify(gateway: string, path: string, status: number, retryAfter: string | null, body: unknown): Answer {
    if (status >= 200 && status < 300) {
      this.acks.push({ at: performance.now(), gateway });
      return { outcome: 'acked', status, body };
    }
    if (status === 503) {
      this.unavailable.push({ path, gateway, retryAfter, at: performance.now() });
      return { outcome: 'unavailable', status, body };
    }
    if (status === 400 || status === 404 || status === 409 || status === 422) return { outcome: 'refused', status, body };
    this.errors.push(`${gateway}${path}: ${status} ${JSON.stringify(body)}`);
    return { outcome: 'error', status, body };
  }

  /** Every request answered, every 503 with a Retry-After, nothing unexpected. */
  assertAnswered(): void {
    assert.deepEqual(this.hangs, [], 'no request hangs');
    assert.deepEqual(this.errors, [], 'no request failed otherwise than 503');
    const bare = this.unavailable.filter((u) => u.retryAfter === null || !(Number(u.retryAfter) > 0));
    assert.deepEqual(bare, [], 'every 503 carries a Retry-After');
  }

  summary(): string {
    const placed = [...this.orders.values()];
    const count = (o: Outcome) => placed.filter((p) => p.place === o).length;
    return `${this.requests} requests, longest ${Math.round(this.longestMs)} ms; orders acked ${count('acked')}, refused ${count('refused')}, `
      + `unknown ${count('unavailable') + count('unreachable')}; transfers ${this.transfers.length}; 503s ${this.unavailable.length}; unreachable ${this.unreachable.length}`;
  }

  /**
   * Reads every trader's orders back through every gateway (the history in PostgreSQL, paged, and
   * the replica's open orders): each acknowledged order is there under the id it was acknowledged
   * with, open or cancelled as its acknowledged cancel says; an order answered 503 or lost with
   * its gateway is there at most once; a refused one is not; no clientOrderId appears twice; and
   * every gateway shows the same, as many orders as the log (`commands`) holds placements of the
   * trader: nothing missing from the history, nothing twice. Returns how many unknown placements
   * had been applied.
   */
  async verifyOrders(commands: readonly Command[], gateways: readonly string[]): Promise<{ unknownApplied: number; unknownNot: number }> {
    const placements = new Map<string, number>();
    for (const c of commands) if (c.type === 'perp.place') placements.set(c.account.toLowerCase(), (placements.get(c.account.toLowerCase()) ?? 0) + 1);
    let unknownApplied = 0;
    let unknownNot = 0;
    for (const [t, trader] of this.traders.entries()) {
      const views: string[] = [];
      for (const [g, gateway] of gateways.entries()) {
        const history = await allOrders(gateway, trader);
        assert.equal(history.length, placements.get(trader.lower) ?? 0, `${gateway}: trader ${t}'s orders in the history, against the log's placements`);
        const open = await readOk(gateway, '/perps/orders/open', trader.token);
        const byClientId = new Map<string, { id: string; status: string }>();
        for (const o of history) {
          assert.ok(!byClientId.has(o.clientOrderId), `${gateway}: clientOrderId ${o.clientOrderId} appears twice`);
          byClientId.set(o.clientOrderId, o);
        }
        for (const order of this.orders.values()) {
          if (order.trader !== t) continue;
          const found = byClientId.get(order.clientOrderId);
          const where = `${gateway}: order ${order.clientOrderId} (placement ${order.place}, cancel ${order.cancel})`;
          if (order.place === 'refused') assert.equal(found, undefined, `${where} was refused yet exists`);
          else if (order.place === 'acked') {
            assert.ok(found !== undefined, `${where} was acknowledged and is lost`);
            assert.equal(found.id, order.id, `${where} changed id`);
            if (order.cancel === 'acked') assert.equal(found.status, 'cancelled', `${where}: the acknowledged cancel did not hold`);
            else if (order.cancel === null || order.cancel === 'refused') assert.equal(found.status, 'open', `${where} should rest`);
            else assert.ok(['open', 'cancelled'].includes(found.status), `${where} is ${found.status}`);
          } else if (found === undefined) {
            if (g === 0) unknownNot++;
          } else {
            if (g === 0) unknownApplied++;
            assert.ok(['open', 'cancelled'].includes(found.status), `${where} is ${found.status}`);
          }
        }
        // And by id, as a client reconciles: a sample of each trader's acknowledged orders.
        const acked = [...this.orders.values()].filter((o) => o.trader === t && o.place === 'acked');
        for (const order of acked.sort(() => Math.random() - 0.5).slice(0, BY_ID_SAMPLE)) {
          const one = await readOk(gateway, `/perps/orders/${order.id}`, trader.token);
          assert.equal(one.clientOrderId, order.clientOrderId, `${gateway}: order ${order.id} found by id`);
          assert.equal(one.status, byClientId.get(order.clientOrderId)!.status, `${gateway}: order ${order.id} read by id as listed`);
        }
        const openIds = (open as { id: string }[]).map((o) => o.id).sort();
        const openInHistory = history.filter((o) => o.status === 'open').map((o) => o.id).sort();
        assert.deepEqual(openIds, openInHistory, `${gateway}: the replica's open orders are the history's open ones`);
        views.push(JSON.stringify([...byClientId.entries()].sort()));
      }
      for (const view of views) assert.equal(view, views[0], `every gateway shows trader ${t}'s orders alike`);
    }
    return { unknownApplied, unknownNot };
  }

  /**
   * Each transfer against the command log replayed (`commands`): an acknowledged one is in the log
   * once, a refused one not at all, an unknown one (503, gateway lost) at most once: the log
   * decides it. Also read back from each gateway's ledger history, which must agree. Returns each
   * trader's perps balance as the transfers that applied leave it.
   */
  async verifyTransfers(commands: readonly Command[], gateways: readonly string[]): Promise<{ perps: bigint[]; unknownApplied: number; unknownNot: number }> {
    const logged = new Map<string, number>();
    for (const c of commands) {
      if (c.type !== 'wallet.transfer') continue;
      const key = `${c.account.toLowerCase()} ${c.from}->${c.to} ${c.amount}`;
      logged.set(key, (logged.get(key) ?? 0) + 1);
    }
    const perps = this.traders.map(() => fx(INITIAL_PERPS));
    let unknownApplied = 0;
    let unknownNot = 0;
    for (const transfer of this.transfers) {
      const trader = this.traders[transfer.trader]!;
      const amount = transfer.micros * 10n ** 12n;
      const times = logged.get(`${trader.lower} ${transfer.from}->${transfer.to} ${amount}`) ?? 0;
      const what = `transfer ${transfer.from}->${transfer.to} ${formatDecimal(amount)} of trader ${transfer.trader} (${transfer.outcome})`;
      assert.ok(times <= 1, `${what} applied ${times} times`);
      if (transfer.outcome === 'acked') assert.equal(times, 1, `${what} was acknowledged and is not in the log`);
      if (transfer.outcome === 'refused') assert.equal(times, 0, `${what} was refused and is in the log`);
      if (transfer.outcome === 'unavailable' || transfer.outcome === 'unreachable') {
        if (times === 1) unknownApplied++;
        else unknownNot++;
      }
      if (times === 1) perps[transfer.trader]! += transfer.to === 'perps' ? amount : -amount;
    }
    for (const gateway of gateways) {
      for (const [t, trader] of this.traders.entries()) {
        const lines = await allLedgerLines(gateway, trader);
        const seen = new Map<string, number>();
        for (const line of lines) {
          if (line.bucket !== 'perps' || (line.ref !== 'wallet->perps' && line.ref !== 'perps->wallet')) continue;
          const key = `${line.ref} ${fx(line.amount.replace('-', ''))}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
        for (const transfer of this.transfers.filter((x) => x.trader === t)) {
          const amount = transfer.micros * 10n ** 12n;
          const key = `${transfer.from}->${transfer.to} ${amount}`;
          const inLog = logged.get(`${trader.lower} ${key}`) ?? 0;
          assert.equal(seen.get(key) ?? 0, inLog, `${gateway}: the history shows transfer ${key} of trader ${t} as often as the log`);
        }
      }
    }
    return { perps, unknownApplied, unknownNot };
  }
}

interface OrderRow {
  id: string;
  clientOrderId: string;
  status: string;
}

/** A read that must answer 200 (after the kills, once the cluster is whole). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- replies are read field by field
async function readOk(gateway: string, path: string, token: string): Promise<any> {
  const reply = await call(gateway, path, { token });
  assert.equal(reply.status, 200, `${gateway}${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

async function allOrders(gateway: string, trader: Trader): Promise<OrderRow[]> {
  const rows: OrderRow[] = [];
  for (let before = ''; ;) {
    const page = (await readOk(gateway, `/perps/orders?limit=500${before}`, trader.token)) as OrderRow[];
    rows.push(...page);
    if (page.length < 500) return rows;
    before = `&before=${page[page.length - 1]!.id}`;
  }
}

async function allLedgerLines(gateway: string, trader: Trader): Promise<{ bucket: string; ref: string | null; amount: string }[]> {
  const rows: { id: string; bucket: string; ref: string | null; amount: string }[] = [];
  for (let before = ''; ;) {
    const page = (await readOk(gateway, `/wallet/history?limit=500${before}`, trader.token)) as typeof rows;
    rows.push(...page);
    if (page.length < 500) return rows;
    before = `&before=${page[page.length - 1]!.id}`;
  }
}

export interface ClosingFigures {
  readonly projectedSeq: number;
  readonly leaderSeq: number;
  readonly unknownTransfersApplied: number;
  readonly unknownTransfersNot: number;
  readonly unknownOrdersApplied: number;
  readonly unknownOrdersNot: number;
}

/**
 * The closing check after every kill of a file (issue 31): with the load stopped and the cluster
 * whole,
 *   - the history catches up with the leader; the log replayed from PostgreSQL into a fresh core
 *     up to the history's watermark gives a ledger that sums to zero in every asset and exactly the
 *     balances the history recorded (PgWalletHistory.replayDifferences is empty);
 *   - replayed on to the seq the leader's /health reports (and every standby reaches), the ledger
 *     still sums to zero, and every trader's wallet and perps balances there equal what every
 *     gateway's reads show and what the applied transfers add up to;
 *   - every acknowledged order and transfer is in (verifyOrders, verifyTransfers).
 */
export async function closingCheck(cluster: Cluster, load: ExchangeLoad): Promise<ClosingFigures> {
  const gateways = cluster.gateways.map((g) => g.url);
  const leader = await cluster.awaitLeader(30_000);
  const target = (await health(leader.core)).appliedSeq!;
  await waitFor(async () => ((await health(cluster.projector!).catch(() => null))?.projectedSeq ?? 0) >= target, 30_000, 50);
  const pool = new pg.Pool({ connectionString: cluster.postgres.url, max: 2 });
  const commands: Command[] = [];
  const replay = cluster.replay((command) => commands.push(command));
  try {
    const projectedSeq = await new PgHistoryProjector(pool).projectedSeq();
    await replay.to(projectedSeq);
    for (const [asset, total] of replay.exchange.ledger.totalsByAsset()) assert.equal(total, 0n, `the ledger sums to zero in ${asset} at seq ${projectedSeq}`);
    assert.deepEqual(await new PgWalletHistory(pool).replayDifferences(replay.exchange.ledger), [], 'the history records the balances the log replays to');

    const leaderSeq = (await health(leader.core)).appliedSeq!;
    await replay.to(leaderSeq);
    for (const [asset, total] of replay.exchange.ledger.totalsByAsset()) assert.equal(total, 0n, `the ledger sums to zero in ${asset} at seq ${leaderSeq}`);
    for (const core of cluster.cores) {
      if (core !== leader.core && core.child !== null && !exited(core)) await waitFor(async () => ((await health(core)).appliedSeq ?? 0) >= leaderSeq, 20_000, 50);
    }

    const transfers = await load.verifyTransfers(commands, gateways);
    const orders = await load.verifyOrders(commands, gateways);
    const queries = new ExchangeQueries(replay.exchange);
    for (const [t, trader] of load.traders.entries()) {
      const wallet = replay.exchange.walletBalances(trader.lower);
      const perps = queries.perpBalance(queries.accountId(trader.lower)!, replay.exchange.now());
      assert.equal(wallet.perpsBalance, transfers.perps[t], `trader ${t}'s perps balance is what the applied transfers leave`);
      for (const gateway of gateways) {
        const shown = await readOk(gateway, '/wallet/balance', trader.token);
        for (const field of ['onchainDepositTotal', 'walletBalance', 'perpsBalance', 'optionsBalance', 'spotBalance', 'pendingWithdrawalTotal'] as const) {
          assert.equal(shown[field], formatDecimal(wallet[field]), `${gateway}: trader ${t}'s ${field} as replayed`);
        }
        const shownPerps = await readOk(gateway, '/perps/balances', trader.token);
        assert.equal(shownPerps.balance, formatDecimal(perps.balance), `${gateway}: trader ${t}'s perps balance as replayed`);
        assert.equal(shownPerps.isolatedMargin, formatDecimal(perps.isolatedMargin), `${gateway}: trader ${t}'s isolated margin as replayed`);
      }
    }
    return {
      projectedSeq,
      leaderSeq,
      unknownTransfersApplied: transfers.unknownApplied,
      unknownTransfersNot: transfers.unknownNot,
      unknownOrdersApplied: orders.unknownApplied,
      unknownOrdersNot: orders.unknownNot,
    };
  } finally {
    await replay.close();
    await pool.end();
  }
}

/**
 * A cluster started with `shape` and a load of `count` funded traders over all its gateways (not
 * started yet); `label` names the test in its log lines. A cluster whose traders cannot be funded
 * is stopped again.
 */
export async function loadedCluster(label: string, shape: ClusterShape, count: number): Promise<{ cluster: Cluster; traders: Trader[]; load: ExchangeLoad }> {
  const started = performance.now();
  const cluster = await Cluster.start(shape);
  console.log(`${label}: cluster started in ${Math.round(performance.now() - started)} ms`);
  try {
    const gateways = cluster.gateways.map((g) => g.url);
    const traders = await fundedTraders(gateways[0]!, count);
    return { cluster, traders, load: new ExchangeLoad([...gateways], traders, await markPrice(gateways[0]!)) };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/**
 * The end of every kill test, with the load stopped: every request was answered, then the closing
 * check; both logged under `label`.
 */
export async function checkAfterKill(label: string, cluster: Cluster, load: ExchangeLoad): Promise<ClosingFigures> {
  console.log(`${label}: ${load.summary()}`);
  load.assertAnswered();
  const figures = await closingCheck(cluster, load);
  console.log(`${label}: closing check at history seq ${figures.projectedSeq}, leader seq ${figures.leaderSeq}; `
    + `unknown orders applied ${figures.unknownOrdersApplied} / not ${figures.unknownOrdersNot}, `
    + `unknown transfers applied ${figures.unknownTransfersApplied} / not ${figures.unknownTransfersNot}`);
  return figures;
}
