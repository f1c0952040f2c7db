/**
 * Order entry under kill -9 (research/reliability.md 3 and 7.1), on the real service as a child
 * process: four signed-in traders place post-only perp orders (each with a unique clientOrderId),
 * cancel their acknowledged ones and read their open orders, from 12 concurrent workers, until the
 * process is SIGKILLed after a seeded random delay; it restarts on the same DATA_DIR, and the test
 * proves from the order reads:
 *   - every acknowledged order exists exactly once, under the id it was acknowledged with, and every
 *     refused one does not; one in flight at the kill exists at most once;
 *   - an acknowledged cancel holds (cancelled); an order nobody tried to cancel is still open;
 *   - every order a read showed open during the load exists after the restart (reads never show
 *     what a crash takes back) and, unless a cancel of it was in flight or acknowledged, is still open;
 *   - the open orders after the restart are exactly those.
 * The kill/restart cycle runs KILL_CYCLES times (default 4) with seeds derived from SEED (printed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '../../src/adapters/feed/price-model.ts';
import { admin, call, freePort, fund, signIn, type Trader } from '../support/harness.ts';
import { ServiceProcess } from '../support/service-process.ts';

const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : Date.now() % 2 ** 31;
const CYCLES = Number(process.env.KILL_CYCLES ?? 4);
const TRADERS = 4;
const WORKERS = 12;

type Outcome = 'inflight' | 'ok' | 'refused' | 'unknown';

interface TrackedOrder {
  readonly clientOrderId: string;
  readonly trader: number;
  place: Outcome;
  id: string | null;
  cancel: Outcome | null;
}

interface OrderView {
  id: string;
  clientOrderId: string | null;
  status: string;
}

/** A reply's outcome: 2xx acknowledged, 4xx refused, 5xx or no reply unknown. */
function outcomeOf(status: number | null): Outcome {
  if (status === null || status >= 500) return 'unknown';
  return status < 300 ? 'ok' : 'refused';
}

interface Reply {
  status: number | null;
  body: { error?: string; id?: string } & OrderView[];
}

async function reply(url: string, path: string, options: Parameters<typeof call>[2]): Promise<Reply> {
  try {
    const r = await call<Reply['body']>(url, path, options);
    return { status: r.status, body: r.body };
  } catch {
    return { status: null, body: Object.assign([], {}) };
  }
}

async function read<T>(url: string, path: string, token: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const r = await reply(url, path, { token });
    if (r.status === 200) return r.body as T;
    if (attempt >= 3) assert.fail(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

test(`kill -9 during order entry loses no acknowledged order or cancel, and no read is taken back (seed ${SEED})`, { timeout: 120_000 }, async () => {
  console.log(`kill9-orders: seed ${SEED}, ${CYCLES} cycles (replay with SEED=${SEED} KILL_CYCLES=${CYCLES})`);
  const dataDir = mkdtempSync(join(tmpdir(), 'exchange-kill9-orders-'));
  const svc = new ServiceProcess(dataDir, await freePort(), {
    FEED: 'push',
    INDEX_MAX_AGE_MS: String(24 * 3_600_000),
    RATE_LIMIT_ACCOUNT: '1000000000',
    RATE_LIMIT_ORDERS: '1000000000',
    JOURNAL_EARLY_FLUSH_AT: '2',
    JOURNAL_MAX_IN_FLIGHT: '8',
    // Snapshots all the time: kills land while one is written, and restarts start from one.
    SNAPSHOT_EVERY_COMMANDS: '300',
    SNAPSHOT_EVERY_MS: '1000',
  });
  const orders = new Map<string, TrackedOrder>();
  /** Order ids a read showed open, with the trader who read them. */
  const seenOpen = new Map<string, number>();
  let next = 1;
  try {
    await svc.start();
    const url = svc.url;
    const index = await call(url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
    assert.equal(index.status, 200, JSON.stringify(index.body));
    const traders: Trader[] = [];
    for (let i = 0; i < TRADERS; i++) traders.push(await signIn(url));
    await Promise.all(traders.map((t) => fund(url, t, '20000', 15_000)));
    for (const t of traders) {
      const r = await call(url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '10000' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }

    const seeds = mulberry32(SEED);
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const rand = mulberry32(Math.floor(seeds() * 2 ** 31));
      const killAfter = 300 + Math.floor(rand() * 1_200);
      let killed = false;
      const counts = { placed: 0, cancels: 0, reads: 0 };

      const place = async (trader: number) => {
        const buy = rand() < 0.5;
        const ticks = 1 + Math.floor(rand() * 40_000); // 0.1 to 4,000 away from the mark, inside the 5 % band
        const price = (100_000 + (buy ? -ticks : ticks) / 10).toFixed(1);
        const o: TrackedOrder = { clientOrderId: `k9-${next++}`, trader, place: 'inflight', id: null, cancel: null };
        orders.set(o.clientOrderId, o);
        counts.placed++;
        const body = {
          marketId: 'BTC-PERP', side: buy ? 'buy' : 'sell', type: 'limit', price, quantity: '0.001',
          postOnly: true, clientOrderId: o.clientOrderId,
        };
        const r = await reply(url, '/perps/orders', { token: traders[trader]!.token, body });
        o.place = outcomeOf(r.status);
        if (o.place === 'ok') o.id = r.body.id!;
        if (r.status !== null && r.status >= 400 && r.status < 500) assert.equal(r.body.error, 'TOO_MANY_OPEN_ORDERS', JSON.stringify(r.body));
      };
      const cancel = async (trader: number) => {
        const mine = [...orders.values()].filter((o) => o.trader === trader && o.place === 'ok' && o.cancel === null);
        if (mine.length === 0) return;
        const o = mine[Math.floor(rand() * mine.length)]!;
        o.cancel = 'inflight';
        counts.cancels++;
        const r = await reply(url, `/perps/orders/${o.id}/cancel`, { token: traders[trader]!.token, body: {} });
        o.cancel = outcomeOf(r.status);
        if (o.cancel === 'refused') assert.fail(`cancel of ${o.id}: ${r.status} ${JSON.stringify(r.body)}`);
      };
      const readOpen = async (trader: number) => {
        counts.reads++;
        const r = await reply(url, '/perps/orders/open', { token: traders[trader]!.token });
        if (r.status !== 200) return;
        for (const o of r.body) seenOpen.set(o.id, trader);
      };

      const worker = async () => {
        while (!killed) {
          const trader = Math.floor(rand() * TRADERS);
          const r = rand();
          if (r < 0.6) await place(trader);
          else if (r < 0.85) await cancel(trader);
          else await readOpen(trader);
        }
      };
      const workers = Array.from({ length: WORKERS }, () => worker());
      await new Promise((res) => setTimeout(res, killAfter));
      killed = true;
      await svc.kill();
      await Promise.all(workers);
      const restartMs = await svc.start();

      // Every tracked order, as the restarted service holds it.
      const byClientId = new Map<string, OrderView[]>();
      for (const o of orders.values()) {
        const found = await read<OrderView[]>(url, `/perps/orders?clientOrderId=${o.clientOrderId}`, traders[o.trader]!.token);
        byClientId.set(o.clientOrderId, found);
      }
      const expectedOpen = new Set<string>();
      for (const o of orders.values()) {
        const found = byClientId.get(o.clientOrderId)!;
        const where = `${o.clientOrderId} (place ${o.place}, cancel ${o.cancel ?? '-'})`;
        if (o.place === 'refused') assert.equal(found.length, 0, `${where}: a refused order exists`);
        if (o.place === 'ok') {
          assert.equal(found.length, 1, `${where}: an acknowledged order is missing`);
          assert.equal(found[0]!.id, o.id, `${where}: acknowledged as ${o.id}, found as ${found[0]!.id}`);
        }
        assert.ok(found.length <= 1, `${where}: placed twice`);
        const status = found[0]?.status;
        if (o.cancel === 'ok') assert.equal(status, 'cancelled', `${where}: an acknowledged cancel was lost`);
        if (found.length === 1 && o.cancel === null) assert.equal(status, 'open', `${where}: nobody cancelled it`);
        if (status === 'open') expectedOpen.add(found[0]!.id);
      }
      for (const [id, trader] of seenOpen) {
        const o = [...orders.values()].find((x) => x.trader === trader && byClientId.get(x.clientOrderId)?.[0]?.id === id);
        assert.ok(o !== undefined, `order ${id} was read open during the load and is gone after the restart`);
        if (o.cancel === null) assert.ok(expectedOpen.has(id), `order ${id} was read open and nobody cancelled it`);
      }
      const openNow = new Set<string>();
      for (const t of traders) for (const o of await read<OrderView[]>(url, '/perps/orders/open', t.token)) openNow.add(o.id);
      assert.deepEqual([...openNow].sort(), [...expectedOpen].sort(), 'the open orders after the restart');
      // Settle the in-flight outcomes into what the restart shows, for the next cycle's checks.
      for (const o of orders.values()) {
        const found = byClientId.get(o.clientOrderId)!;
        if (o.place !== 'ok') {
          o.place = found.length === 1 ? 'ok' : 'refused';
          o.id = found[0]?.id ?? null;
        }
        if (o.cancel === 'unknown' || o.cancel === 'inflight' || found[0]?.status === 'cancelled') o.cancel = found[0]?.status === 'cancelled' ? 'ok' : null;
      }
      seenOpen.clear();
      console.log(`kill9-orders cycle ${cycle}: killed after ${killAfter} ms, restart ${restartMs} ms; placed ${counts.placed}, cancels ${counts.cancels}, reads ${counts.reads}; open after restart ${openNow.size}`);
    }
  } finally {
    await svc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
