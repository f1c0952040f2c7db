/**
 * The wallet and spot screens in a real browser, as a trader. Signed out, the wallet asks to sign
 * in and spot shows its book with a ticket that asks to sign in. Signed in with a local key: a
 * deposit (the admin endpoint stands for the chain) arrives in the Wallet bucket; a transfer and a
 * withdrawal (confirmed by keyboard) made on the page move the buckets, and a refused transfer is
 * reported in the service's words; the ledger lists all of them; an API key created on the page
 * (scope, IP pin, expiry) shows its secret once, works from Node with x-api-key, and is refused
 * (401) once revoked on the page; on the spot screen the maker's book fills, an order previewed
 * and placed from the ticket rests in open orders, is cancelled, and shows in the order history.
 * Both screens fit 420 px. Screenshots: test-artifacts/web/{wallet,api-keys,wallet-narrow,spot,
 * spot-narrow}.png.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumMissing, collectPageErrors, newPage, screenshot } from '../support/browser.ts';
import { deposit, signInLocal, startTerminal, type Terminal } from './terminal.ts';

/** Waits until a bucket's total reads `expected` (digits grouped as the page shows them). */
async function bucketReads(page: Page, bucket: string, expected: string): Promise<void> {
  const digits = expected.replace(/[.,]/g, (c) => `\\${c}`);
  await page.locator(`[data-testid="bucket-${bucket}-total"]`, { hasText: new RegExp(`^${digits}\\s`) }).waitFor({ timeout: 10_000 });
}

/** Closes the notices so a screenshot shows the screen under them. */
async function dismissNotices(page: Page): Promise<void> {
  await page.evaluate(`document.querySelectorAll('.notice button[aria-label="Dismiss"]').forEach((b) => b.click())`);
  await page.locator('.notice').first().waitFor({ state: 'detached' });
}

describe('web terminal: wallet and spot', { skip: chromiumMissing() }, () => {
  let terminal: Terminal;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let address: string;

  before(async () => {
    terminal = await startTerminal();
    ({ context, page } = await newPage(terminal.browser));
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: terminal.url });
    errors = collectPageErrors(page);
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
  });
  after(async () => {
    await context?.close();
    await terminal?.close();
  });

  test('signed out, the wallet says to sign in; spot shows the book but no ticket', async () => {
    await page.goto(`${terminal.url}/#/wallet`);
    await page.getByTestId('sign-in-first').waitFor();
    assert.match(await page.getByTestId('sign-in-first').innerText(), /Sign in to see your wallet/);
    await page.goto(`${terminal.url}/#/spot/BTC-USDC`);
    await page.getByTestId('order-book').locator('.ob-level').first().waitFor({ timeout: 15_000 });
    assert.equal(await page.getByTestId('spot-place-order').innerText(), 'Sign in to trade');
    assert.equal(await page.getByTestId('spot-place-order').isDisabled(), true);
    await page.goto(`${terminal.url}/#/wallet`);
  });

  test('a deposit on chain arrives in the Wallet bucket; the address copies', async () => {
    address = await signInLocal(page);
    await page.getByTestId('bucket-wallet-total').waitFor();
    await bucketReads(page, 'wallet', '0');
    await deposit(terminal, address, '1000');
    await bucketReads(page, 'wallet', '1,000');
    await page.locator('[data-testid="deposits"] tr', { hasText: 'confirmed' }).waitFor();
    const shown = await page.getByTestId('deposit-address').innerText();
    assert.match(shown, /^0x[0-9a-f]{40}$/i);
    await page.getByRole('button', { name: 'Copy the deposit address' }).click();
    await page.getByRole('button', { name: 'Copy the deposit address' }).filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), shown);
  });

  test('a transfer made on the page moves both buckets', async () => {
    const form = page.getByRole('form', { name: 'Transfer between buckets' });
    await form.getByLabel('From', { exact: true }).selectOption('wallet');
    await form.getByLabel('To', { exact: true }).selectOption('spot');
    await form.getByLabel('Amount (USDC)').fill('250');
    await form.getByLabel('Amount (USDC)').press('Enter');
    await bucketReads(page, 'wallet', '750');
    await bucketReads(page, 'spot', '250');
  });

  test('a transfer the service refuses is shown in its words, and nothing moves', async () => {
    const before = errors.length;
    const form = page.getByRole('form', { name: 'Transfer between buckets' });
    await form.getByLabel('From', { exact: true }).selectOption('spot');
    await form.getByLabel('To', { exact: true }).selectOption('perps');
    await form.getByLabel('Amount (USDC)').fill('999');
    await form.getByRole('button', { name: 'Transfer' }).click();
    const notice = page.locator('.notice.error', { hasText: 'INSUFFICIENT_BALANCE' });
    await notice.waitFor();
    assert.match(await notice.innerText(), /^transferring: /);
    await bucketReads(page, 'spot', '250');
    // the refusal the page was told of, which the browser also logs as a failed resource: expected here
    for (let waited = 0; errors.length < before + 2 && waited < 3_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const fresh = errors.splice(before);
    assert.equal(fresh.length, 2, fresh.join('\n'));
    assert.ok(fresh.every((e) => /400/.test(e)), fresh.join('\n'));
    await form.getByLabel('From', { exact: true }).selectOption('wallet');
    await form.getByLabel('To', { exact: true }).selectOption('spot');
    await form.getByLabel('Amount (USDC)').fill('');
  });

  test('a withdrawal is confirmed first (by keyboard), then leaves the Wallet bucket', async () => {
    const form = page.getByRole('form', { name: 'Withdraw' });
    await form.getByLabel('Amount (USDC)').fill('5');
    await form.getByLabel('Amount (USDC)').press('Enter');
    await form.locator('button:focus', { hasText: 'Confirm withdrawal' }).waitFor(); // the confirmation takes the focus
    await page.keyboard.press('Enter');
    await bucketReads(page, 'wallet', '745');
  });

  test('the ledger lists the deposit, both legs of the transfer and the withdrawal', async () => {
    const ledger = page.getByTestId('ledger');
    await ledger.locator('tr[data-type="withdrawal"]').waitFor();
    assert.equal(await ledger.locator('tr[data-type="deposit"]').count(), 1);
    assert.equal(await ledger.locator('tr[data-type="transfer"]').count(), 2);
    assert.match(await ledger.locator('tr[data-type="transfer"]').first().innerText(), /Wallet → Spot/);
    assert.match(await ledger.locator('tr[data-type="withdrawal"]').innerText(), /-5/);
    await page.getByRole('button', { name: 'Deposits & withdrawals' }).click();
    await page.locator('[data-testid="settlements"] tr[data-kind="withdraw"]').waitFor();
    await page.getByRole('button', { name: 'Ledger' }).click();
    await ledger.locator('tr[data-type="deposit"]').waitFor();
    await dismissNotices(page);
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'wallet');
  });

  test('an API key is created with scope, IP pin and expiry, its secret shown once; it works until revoked', async () => {
    const form = page.getByRole('form', { name: 'Create an API key' });
    await form.getByLabel('Name').fill('test bot');
    await form.getByLabel('Scope').selectOption('read');
    await form.getByLabel(/Allowed IPs/).fill('127.0.0.1');
    await form.getByLabel(/Expires after/).fill('7');
    await form.getByRole('button', { name: 'Create key' }).click();
    const box = page.getByTestId('api-key-secret');
    await box.waitFor();
    const secret = await box.locator('code').innerText();
    assert.match(secret, /^exk_/);
    const row = page.getByTestId('api-key-list').locator('tr', { hasText: 'test bot' });
    await row.waitFor();
    assert.match(await row.innerText(), /read[\s\S]*127\.0\.0\.1[\s\S]*active/);
    await box.scrollIntoViewIfNeeded();
    await dismissNotices(page);
    await screenshot(page, 'api-keys');

    const withKey = () => fetch(`${terminal.url}/portfolio/balances`, { headers: { 'x-api-key': secret } });
    const ok = await withKey();
    assert.equal(ok.status, 200, await ok.clone().text());
    const balances = (await ok.json()) as { wallet: { total: string }; spot: { total: string } };
    assert.deepEqual([balances.wallet.total, balances.spot.total], ['745', '250']);

    await box.getByRole('button', { name: /hide the secret/ }).click();
    assert.equal(await page.getByTestId('api-key-secret').count(), 0);
    const stored = (await page.evaluate('JSON.stringify({ ...localStorage, ...sessionStorage })')) as string;
    assert.ok(!stored.includes(secret), 'the secret is kept nowhere in the browser');
    assert.ok(!(await page.content()).includes(secret), 'the secret is gone from the page');

    await row.getByRole('button', { name: 'Revoke test bot' }).click();
    await row.getByRole('button', { name: 'Revoke for good' }).click();
    await row.locator('.status', { hasText: 'revoked' }).waitFor();
    assert.equal((await withKey()).status, 401);
  });

  test('the wallet fits a narrow window', async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    await page.evaluate('window.scrollTo(0, 0)');
    await bucketReads(page, 'wallet', '745');
    await dismissNotices(page);
    await screenshot(page, 'wallet-narrow');
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
    const wide = await page.evaluate(`[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.parentElement.closest('.table-scroll')).slice(0, 8).map((e) => e.tagName + '.' + e.className + '<' + e.parentElement.className).join(' ')`);
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window: ${wide}`);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test('spot: the maker fills the book; an order previewed, placed, seen open and cancelled', async () => {
    await page.goto(`${terminal.url}/#/spot/BTC-USDC`);
    const book = page.getByTestId('order-book');
    await book.locator('[data-testid="book-bids"] .ob-level').first().waitFor({ timeout: 15_000 });
    await book.locator('[data-testid="book-asks"] .ob-level').first().waitFor();
    const bestBid = (await book.locator('[data-testid="book-bids"] .ob-price').first().getAttribute('aria-label'))!.replace('bid ', '');
    const price = (Math.floor(Number(bestBid) * 0.98 * 100) / 100).toFixed(2); // 2 % under the best bid: it rests
    const ticket = page.getByRole('form', { name: 'Spot order ticket' });
    await ticket.getByRole('button', { name: 'Buy BTC' }).first().click();
    await ticket.getByLabel(/Limit price/).fill(price);
    await ticket.getByLabel(/Quantity/).fill('0.001');
    await ticket.getByLabel(/Post-only/).check();
    await page.getByTestId('spot-preview-verdict').filter({ hasText: 'would accept' }).waitFor();
    assert.match(await page.getByTestId('spot-preview-lock').innerText(), /USDC/);
    assert.match(await page.getByTestId('spot-preview-fee').innerText(), /bps, maker/);
    await ticket.getByLabel(/Quantity/).press('Enter');
    const open = page.getByTestId('spot-open-orders').locator('tr', { hasText: price.replace(/\B(?=(\d{3})+(?!\d))/g, ',') });
    await open.waitFor();
    assert.match(await open.innerText(), /buy[\s\S]*post-only[\s\S]*0\.001/);
    const lockedUsdc = page.locator('[data-testid="spot-balances"] tr[data-asset="USDC"] td:nth-child(3)');
    await lockedUsdc.filter({ hasText: /^[1-9]/ }).waitFor();
    await dismissNotices(page);
    await screenshot(page, 'spot');
    await open.getByRole('button', { name: /Cancel order/ }).click();
    await page.getByTestId('no-open-orders').waitFor();
    await lockedUsdc.filter({ hasText: /^0$/ }).waitFor();
    await page.getByRole('button', { name: 'Order history' }).click();
    await page.getByTestId('spot-order-history').locator('tr', { hasText: 'cancelled' }).waitFor();
  });

  test('the spot screen fits a narrow window', async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    await page.getByTestId('spot-ticket').waitFor();
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
    await dismissNotices(page);
    await screenshot(page, 'spot-narrow');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test('no uncaught error or console error on the way', () => {
    assert.deepEqual(errors, []);
  });
});
