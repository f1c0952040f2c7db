/**
 * The terminal's first screen in a real browser: served at `/` with its cache rules and CSP, it
 * lists every market with live marks, signs in with a local key (labelled as such, kept across a
 * reload), says when its streams drop and reconnect, and fits a narrow window. Screenshots: test-artifacts/web/markets*.png.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { chromiumMissing, collectPageErrors, contrastFailures, newPage, screenshot } from '../support/browser.ts';
import { waitFor } from '../support/harness.ts';
import { startTerminal, signInLocal, type Terminal } from './terminal.ts';

describe('web terminal: markets and sign-in', { skip: chromiumMissing() }, () => {
  let terminal: Terminal;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  before(async () => {
    terminal = await startTerminal();
    ({ context, page } = await newPage(terminal.browser));
    errors = collectPageErrors(page);
  });
  after(async () => {
    await context?.close();
    await terminal?.close();
  });

  test('`/` serves the page uncached with its CSP; assets are immutable and precompressed', async () => {
    const index = await fetch(`${terminal.url}/`);
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.match(index.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    const html = await index.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, 'the page names its script');
    const asset = await fetch(`${terminal.url}${script}`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(asset.headers.get('content-encoding'), 'br');
    assert.equal((await fetch(`${terminal.url}/assets/nothing-here.js`)).status, 404);
    assert.equal((await fetch(`${terminal.url}/docs`, { redirect: 'manual' })).status < 400, true, '/docs stays');
  });

  test('lists every market with its mark and index, and the index moves live', async () => {
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${terminal.url}/`);
    const perp = page.locator('tr', { hasText: 'BTC-PERP' });
    await perp.waitFor();
    await page.getByText('BTC-29JAN27').waitFor();
    await page.getByText('ETH-USDC').waitFor();
    assert.match(await perp.locator('td').nth(1).innerText(), /\d{2},\d{3}/, 'BTC-PERP shows a mark');
    const index = await perp.locator('td').nth(2).innerText();
    await waitFor(async () => (await perp.locator('td').nth(2).innerText()) !== index, 15_000, 200);
    assert.ok(requests.every((u) => u.startsWith(terminal.url)), `everything loads from the service: ${requests.filter((u) => !u.startsWith(terminal.url)).join(', ')}`);
    await screenshot(page, 'markets');
  });

  test('signs in with a local key, kept across a reload, labelled as local', async () => {
    const address = await signInLocal(page);
    assert.match(address, /^0x[0-9a-fA-F]{40}$/);
    assert.equal(await page.locator('.badge.local').innerText(), 'local key');
    await page.reload();
    await page.getByTestId('account').waitFor();
    assert.equal(await page.getByTestId('account').locator('.mono').getAttribute('title'), address);
  });

  test('signs in with a browser wallet (an EIP-1193 provider the page finds as window.ethereum)', async () => {
    // The wallet: a key held by the test, reached by the page only through EIP-1193 requests.
    const wallet = privateKeyToAccount(generatePrivateKey());
    const asked: string[] = [];
    const { context: walletContext, page: walletPage } = await newPage(terminal.browser);
    await walletPage.exposeFunction('walletRequest', async (method: string, params: unknown[]) => {
      asked.push(method);
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [wallet.address];
      if (method === 'personal_sign') return wallet.signMessage({ message: { raw: params[0] as Hex } });
      throw new Error(`the test wallet does not answer ${method}`);
    });
    await walletPage.addInitScript('window.ethereum = { request: ({ method, params }) => window.walletRequest(method, params ?? []) };');
    await walletPage.goto(`${terminal.url}/`);
    await walletPage.getByRole('button', { name: 'Connect wallet' }).click();
    await walletPage.getByTestId('account').waitFor();
    assert.equal(await walletPage.locator('.badge.wallet').innerText(), 'wallet');
    assert.equal(await walletPage.getByTestId('account').locator('.mono').getAttribute('title'), wallet.address);
    assert.deepEqual(asked, ['eth_requestAccounts', 'personal_sign'], 'one account request, one signature');
    await walletPage.reload(); // the session is kept: no second signature
    await walletPage.getByTestId('account').waitFor();
    assert.equal(asked.filter((m) => m === 'personal_sign').length, 1);
    await screenshot(walletPage, 'sign-in-wallet');
    await walletContext.close();
  });

  test('a dropped stream reconnects and says so in the status bar', async () => {
    await page.goto(`${terminal.url}/#/trade/BTC-PERP`);
    const status = page.getByTestId('stream-status');
    await page.locator('[data-testid="order-book"] [data-side="bid"]').first().waitFor();
    await waitFor(async () => /^● [1-9]\d* live streams?$/.test((await status.innerText()).trim()), 10_000, 100);
    const live = (await status.innerText()).trim();
    await page.evaluate(`(() => {
      const bar = document.querySelector('.statusbar');
      window.statusSeen = [];
      new MutationObserver(() => window.statusSeen.push(bar.textContent)).observe(bar, { subtree: true, childList: true, characterData: true });
    })()`);
    const before = errors.length;
    terminal.ts.service.app.server.closeAllConnections(); // every socket of the service dropped at once
    await waitFor(async () => (await page.evaluate("window.statusSeen.some((t) => t.includes('reconnecting'))")) === true, 10_000, 50);
    await waitFor(async () => (await status.innerText()).trim() === live && (await page.locator('.statusbar .warn').count()) === 0, 15_000, 100);
    await page.locator('[data-testid="order-book"] [data-side="ask"]').first().waitFor();
    // Chromium logs each cut stream as a failed load: those, and only those, were expected here.
    const cut = errors.splice(before);
    assert.ok(cut.every((e) => e.includes('ERR_INCOMPLETE_CHUNKED_ENCODING')), cut.join('\n'));
  });

  test('text on every screen is readable: WCAG AA contrast (4.5:1; large text 3:1)', async () => {
    const screens: [string, string][] = [
      ['#/markets', 'tr.clickable'],
      ['#/trade/BTC-PERP', '[data-testid="order-book"] [data-side="bid"]'],
      ['#/options/BTC', 'table'],
      ['#/spot/BTC-USDC', '[data-testid="order-book"] [data-side="ask"]'],
      ['#/wallet', 'table'],
    ];
    const failures: string[] = [];
    for (const [route, ready] of screens) {
      await page.goto(`${terminal.url}/${route}`);
      await page.locator(ready).first().waitFor();
      failures.push(...(await contrastFailures(page)).map((f) => `${route} ${f}`));
    }
    assert.deepEqual(failures, []);
  });

  test('a narrow window still shows the markets and the navigation', async () => {
    const narrow = await newPage(terminal.browser, { width: 420, height: 800 });
    await narrow.page.goto(`${terminal.url}/#/markets`);
    await narrow.page.getByText('BTC-PERP').first().waitFor();
    const overflow = (await narrow.page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
    await screenshot(narrow.page, 'markets-narrow');
    await narrow.context.close();
  });

  test('no uncaught error or console error on the way', () => {
    assert.deepEqual(errors, []);
  });
});
