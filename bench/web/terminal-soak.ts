/**
 * The terminal left open on a running service, as a trader leaves it: the trade screen in headless
 * Chromium for `--minutes`, sampled every `--every` seconds for the page's JS heap, its DOM nodes
 * and event listeners (DevTools protocol Performance.getMetrics), the book frames it applied and
 * whether its streams are all live. A heap or node count that only grows is a leak.
 *
 * Run: node --import tsx bench/web/terminal-soak.ts --url http://127.0.0.1:8080 [--minutes 10 --every 60 --screen trade/BTC-PERP]
 */
import { parseArgs } from 'node:util';
import { launchBrowser, screenshot } from '../../test/support/browser.ts';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    minutes: { type: 'string', default: '10' },
    every: { type: 'string', default: '60' },
    screen: { type: 'string', default: 'trade/BTC-PERP' },
  },
});

const browser = await launchBrowser();
const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
const errors: string[] = [];
page.on('pageerror', (e) => errors.push(e.message));
const cdp = await page.context().newCDPSession(page);
await cdp.send('Performance.enable');
await page.goto(`${args.url}/#/${args.screen}`);
await page.locator('[data-testid="order-book"] [data-side="bid"]').first().waitFor({ timeout: 60_000 });

const started = Date.now();
const end = started + Number(args.minutes) * 60_000;
console.log('minute  heap MB  DOM nodes  listeners  book frames  streams');
for (;;) {
  await cdp.send('HeapProfiler.collectGarbage').catch(() => undefined);
  const { metrics } = (await cdp.send('Performance.getMetrics')) as { metrics: { name: string; value: number }[] };
  const metric = (name: string) => metrics.find((m) => m.name === name)?.value ?? NaN;
  const frames = await page.locator('[data-testid="order-book"]').getAttribute('data-updates');
  const streams = (await page.getByTestId('stream-status').innerText()).trim();
  const minute = ((Date.now() - started) / 60_000).toFixed(1);
  console.log(`${minute.padStart(6)}  ${(metric('JSHeapUsedSize') / 1048576).toFixed(1).padStart(7)}  ${String(metric('Nodes')).padStart(9)}  ${String(metric('JSEventListeners')).padStart(9)}  ${String(frames).padStart(11)}  ${streams}`);
  if (Date.now() >= end) break;
  await page.waitForTimeout(Math.min(Number(args.every) * 1000, end - Date.now()));
}
console.log(`page errors: ${errors.length === 0 ? 'none' : errors.join('; ')}; screenshot ${await screenshot(page, 'soak-end')}`);
await browser.close();
