/**
 * The web terminal as a trader's browser meets it (issue 30): the default service, built as
 * `npm start` runs it (scripts/start.mjs: dist/ and web/dist, simulated feed, market maker on), and
 * Debian's Chromium headless through playwright-core.
 *
 * 1. First load, cold cache (a fresh browser context per run) of `/#/trade/BTC-PERP`: bytes
 *    transferred (encoded, as on the wire: every response but the streams, counted by the DevTools
 *    protocol's loadingFinished), the number of requests, first contentful paint, and the time from
 *    navigation to a live book (both sides shown and at least one stream update applied after the
 *    snapshot). Then the same with a warm cache (a reload in the same context).
 * 2. Frame rate with the book stream at its fastest interval (the book panel's default, 50 ms)
 *    and a book that changes faster than that: a second trader (signed in from this process)
 *    moves a one-lot bid inside the spread every ~15 ms, so every 50 ms frame carries a change. Reported: requestAnimationFrame callbacks per second over a window, long
 *    tasks (> 50 ms) in it, and how many book updates the page applied in it.
 *
 * Run: node --import tsx bench/web/terminal-load.ts [--runs 5 --fps-seconds 10]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BrowserContext, Page } from 'playwright-core';
import { ADMIN_TOKEN, PUBLIC_ORIGIN, call, freePort, fund, signIn, waitFor, type Trader } from '../../test/support/harness.ts';
import { launchBrowser } from '../../test/support/browser.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'fps-seconds': { type: 'string', default: '10' },
  },
});
const BOOK = '[data-testid="order-book"]';

async function startDefaultService(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'terminal-load-'));
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, PUBLIC_ORIGIN, LOG_LEVEL: 'warn', ADMIN_TOKEN, RATE_LIMIT_ORDERS: '1000000', RATE_LIMIT_ACCOUNT: '1000000', RATE_LIMIT_IP: '1000000' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return {
    url,
    stop() {
      child.kill('SIGTERM');
      setTimeout(() => rmSync(dataDir, { recursive: true, force: true }), 2_000).unref();
    },
  };
}

/** Both sides of BTC-PERP quoted by the maker, as the API reads them. */
async function bookReady(url: string): Promise<void> {
  await waitFor(async () => {
    try {
      const r = await fetch(`${url}/perps/orderbook/BTC-PERP?depth=1`);
      if (r.status !== 200) return false;
      const b = (await r.json()) as { bids: unknown[]; asks: unknown[] };
      return b.bids.length > 0 && b.asks.length > 0;
    } catch {
      return false;
    }
  }, 120_000, 250);
}

interface Load {
  bytes: number;
  requests: number;
  fcpMs: number;
  liveBookMs: number;
}

/** Loads the trade screen and reports what crossed the wire until the book was live. */
async function load(context: BrowserContext, page: Page, url: string, reload: boolean): Promise<Load> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  let requests = 0;
  cdp.on('Network.loadingFinished', (e: { encodedDataLength: number }) => {
    bytes += e.encodedDataLength;
    requests += 1;
  });
  if (reload) await page.reload();
  else await page.goto(`${url}/#/trade/BTC-PERP`);
  await page.locator(`${BOOK}[data-updates]:not([data-updates="0"])`).waitFor({ timeout: 30_000 });
  await page.locator(`${BOOK} [data-side="bid"]`).first().waitFor();
  await page.locator(`${BOOK} [data-side="ask"]`).first().waitFor();
  const liveBookMs = (await page.evaluate('performance.now()')) as number;
  const fcpMs = (await page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1")) as number;
  await cdp.detach();
  return { bytes, requests, fcpMs, liveBookMs };
}

/** rAF callbacks per second, long tasks and book updates applied, over `seconds`. */
async function frameRate(page: Page, seconds: number): Promise<{ fps: number; longTasks: number; longestMs: number; bookUpdatesPerS: number }> {
  const script = `new Promise((resolve) => {
    const book = document.querySelector('${BOOK}');
    const updates0 = Number(book.getAttribute('data-updates'));
    const longs = [];
    const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) longs.push(e.duration); });
    observer.observe({ type: 'longtask' });
    let frames = 0;
    const t0 = performance.now();
    const tick = () => {
      frames++;
      const t = performance.now() - t0;
      if (t < ${seconds * 1000}) requestAnimationFrame(tick);
      else {
        observer.disconnect();
        const updates = Number(book.getAttribute('data-updates')) - updates0;
        resolve({ fps: frames / (t / 1000), longTasks: longs.length, longestMs: Math.max(0, ...longs), bookUpdatesPerS: updates / (t / 1000) });
      }
    };
    requestAnimationFrame(tick);
  })`;
  return (await page.evaluate(script)) as { fps: number; longTasks: number; longestMs: number; bookUpdatesPerS: number };
}

/**
 * Rests a one-lot BTC-PERP bid inside the spread and moves it between five prices (an atomic amend,
 * POST /perps/orders/{id}/modify) every ~15 ms, until stopped: the book's top changes several times
 * in each 50 ms stream frame.
 */
function churnBook(url: string, trader: Trader): { stop(): Promise<number> } {
  let running = true;
  let actions = 0;
  const loop: Promise<void> = (async () => {
    // Read with the trader's session: its budget is raised, the anonymous one (20 a second) is not.
    const top = await call<{ bids?: [string, string][]; asks?: [string, string][] }>(url, '/perps/orderbook/BTC-PERP?depth=1', { token: trader.token });
    const bid = top.body.bids?.[0]?.[0];
    const ask = top.body.asks?.[0]?.[0];
    if (bid === undefined || ask === undefined) throw new Error(`book read: ${top.status} ${JSON.stringify(top.body)}`);
    const step = (Number(ask) - Number(bid)) / 7;
    const price = (k: number) => (Number(bid) + step * (1 + (k % 5))).toFixed(1);
    const placed = await call(url, '/perps/orders', { token: trader.token, body: { marketId: 'BTC-PERP', side: 'buy', type: 'limit', quantity: '0.001', price: price(0), postOnly: true } });
    if (placed.status !== 201 && placed.status !== 200) throw new Error(`place: ${placed.status} ${JSON.stringify(placed.body)}`);
    while (running) {
      const moved = await call(url, `/perps/orders/${placed.body.id}/modify`, { token: trader.token, body: { price: price(++actions) } });
      if (moved.status !== 200) throw new Error(`amend: ${moved.status} ${JSON.stringify(moved.body)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await call(url, `/perps/orders/${placed.body.id}/cancel`, { token: trader.token, method: 'POST', body: {} });
  })();
  loop.catch(() => (running = false)); // reported by stop()
  return {
    async stop() {
      running = false;
      await loop;
      return actions;
    },
  };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const service = await startDefaultService();
const url = service.url;
try {
  await bookReady(url);
  const trader = await signIn(url);
  await fund(url, trader, '100000', 30_000);
  const moved = await call(url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '100000' } });
  if (moved.status !== 200) throw new Error(`transfer: ${JSON.stringify(moved.body)}`);
  const browser = await launchBrowser();
  const cold: Load[] = [];
  const warm: Load[] = [];
  let fps: Awaited<ReturnType<typeof frameRate>> | null = null;
  for (let i = 0; i < Number(args.runs); i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    cold.push(await load(context, page, url, false));
    warm.push(await load(context, page, url, true));
    if (i === 0) {
      const churn = churnBook(url, trader);
      await page.waitForTimeout(1_000);
      fps = await frameRate(page, Number(args['fps-seconds']));
      const actions = await churn.stop();
      console.log(`(the second trader sent ${actions} order actions meanwhile)`);
    }
    await context.close();
  }
  await browser.close();
  const kb = (b: number) => (b / 1024).toFixed(1);
  const row = (name: string, runs: Load[]) =>
    `${name}: ${kb(median(runs.map((r) => r.bytes)))} KiB in ${median(runs.map((r) => r.requests))} requests, first contentful paint ${median(runs.map((r) => r.fcpMs)).toFixed(0)} ms, live book ${median(runs.map((r) => r.liveBookMs)).toFixed(0)} ms (median of ${runs.length}; live book min ${Math.min(...runs.map((r) => r.liveBookMs)).toFixed(0)}, max ${Math.max(...runs.map((r) => r.liveBookMs)).toFixed(0)})`;
  console.log(row('cold cache', cold));
  console.log(row('warm cache', warm));
  if (fps !== null) {
    console.log(`book stream at 50 ms for ${args['fps-seconds']} s: ${fps.fps.toFixed(1)} frames/s, ${fps.bookUpdatesPerS.toFixed(1)} book updates/s applied, ${fps.longTasks} long tasks (longest ${fps.longestMs.toFixed(0)} ms)`);
  }
} finally {
  service.stop();
}
