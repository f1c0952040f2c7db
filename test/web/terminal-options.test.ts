/**
 * The options screen in a real browser against the real service with the market maker on: the BTC
 * chain shows calls and puts with the maker's bids and asks, the forward and the at-the-money
 * strike, the smile with its fitted curve and the marks; a click on an ask fills the ticket and the
 * API's preview (premium, fee, margin) appears; the buy fills and the position appears with its
 * mark; a two-leg call spread built from the chain gets its combined preview; Close on the position
 * fills the ticket with a reduce-only IOC sell that closes it; DVOL and its history
 * are shown; the ETH chain is one click away; at 420 px the page does not overflow. Setup as a trader would: sign in with the
 * page's local key, a deposit through the admin endpoint (standing for the chain), and a transfer
 * to the options bucket with the SDK from Node under the same key. Screenshots:
 * test-artifacts/web/options.png, options-strategy.png, options-narrow.png.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import type { Hex } from 'viem';
import { ExchangeClient } from '../../sdk/src/index.ts';
import { waitFor } from '../support/harness.ts';
import { chromiumMissing, collectPageErrors, newPage, screenshot } from '../support/browser.ts';
import { deposit, signInLocal, startTerminal, type Terminal } from './terminal.ts';

/** Polls an expression in the page (page.evaluate is not subject to the page's CSP; waitForFunction's polling is). */
async function until(page: Page, expression: string, timeoutMs: number): Promise<void> {
  await waitFor(async () => Boolean(await page.evaluate(expression)), timeoutMs, 100);
}

/** A field's value once it has settled on `expected` (the ticket fills in after the click's render), checked. */
async function settledValue(field: Locator, expected: string): Promise<void> {
  await waitFor(async () => (await field.inputValue()) === expected, 5_000, 20).catch(() => undefined);
  assert.equal(await field.inputValue(), expected);
}

describe('web terminal: options', { skip: chromiumMissing() }, () => {
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

  test('a signed-in trader funds the options bucket', async () => {
    await page.goto(`${terminal.url}/#/options/BTC`);
    const address = await signInLocal(page);
    await deposit(terminal, address, '50000');
    const key = (await page.evaluate("localStorage.getItem('exchange.localKey')")) as Hex;
    const client = new ExchangeClient({ baseUrl: terminal.url, signer: key });
    await waitFor(async () => Number((await client.balance()).walletBalance) >= 50000, 15_000, 100);
    await client.transfer({ from: 'wallet', to: 'options', amount: '40000' });
    await page.getByTestId('option-funds').getByText('40,000').first().waitFor();
  });

  test('the BTC chain shows the maker\'s bids and asks, the forward, the ATM strike and the smile', async () => {
    const chain = page.getByTestId('option-chain');
    await chain.locator('button.opt-quote.ask').first().waitFor({ timeout: 20_000 });
    await chain.locator('tr.opt-atm').waitFor();
    const rows = await chain.locator('tbody tr').count();
    assert.ok(rows >= 5, `${rows} strikes`);
    assert.ok(await chain.locator('button.opt-quote.bid').count() >= rows, 'bids on calls and puts');
    assert.match(await page.getByTestId('forward').innerText(), /^\d{1,3}(,\d{3})*(\.\d+)?$/);
    const atm = await chain.locator('tr.opt-atm').getAttribute('data-strike');
    const ids = await chain.locator('tr.opt-atm button.opt-quote.ask').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    assert.ok(ids.some((id) => id?.endsWith(`-${atm}-C`)) && ids.some((id) => id?.endsWith(`-${atm}-P`)), `call and put asks on the ATM strike: ${ids.join(', ')}`);
    await until(page, "Number(document.querySelector('[data-testid=smile]')?.dataset.curve) > 50 && Number(document.querySelector('[data-testid=smile]')?.dataset.marks) >= 5", 15_000);
    assert.equal(await page.locator('[data-testid=smile] canvas').count(), 1, 'the smile is drawn');
  });

  test('click an ask: the ticket fills, the preview shows premium, fee and margin; buying opens a position', async () => {
    const ask = page.getByTestId('option-chain').locator('tr.opt-atm button.opt-quote.ask').first();
    const marketId = ((await ask.getAttribute('data-testid')) ?? '').replace(/^ask-/, '');
    const askPrice = (await ask.innerText()).replace(/,/g, '');
    await ask.click();
    const ticket = page.getByTestId('option-ticket');
    assert.equal(await page.getByTestId('ticket-instrument').innerText(), marketId);
    await settledValue(ticket.getByLabel(/Limit price/), askPrice);
    assert.equal(await ticket.getByRole('button', { name: 'Buy', exact: true }).getAttribute('aria-pressed'), 'true');
    // A marketable limit a fifth above the ask fills even if the maker re-quotes meanwhile (fills happen at the maker's price).
    const limit = (Number(askPrice) * 1.2).toFixed(1);
    await ticket.getByLabel(/Limit price/).fill(limit);
    await ticket.getByLabel(/Quantity/).fill('0.1');
    await page.getByTestId('preview-verdict').waitFor({ timeout: 10_000 });
    for (const id of ['preview-premium', 'preview-fee', 'preview-margin']) {
      assert.match(await page.getByTestId(id).innerText(), /^[\d,]+(\.\d+)? USDC$/, id);
    }
    assert.equal(await page.getByTestId('preview-verdict').innerText(), 'The venue would accept this order.');
    await screenshot(page, 'options');
    await ticket.getByLabel(/Quantity/).press('Enter');
    const position = page.getByTestId('option-positions').locator(`tr[data-market="${marketId}"]`);
    await position.waitFor({ timeout: 10_000 });
    assert.equal(await position.locator('td').nth(1).innerText(), 'long');
    assert.equal(await position.locator('td').nth(2).innerText(), '0.1');
    assert.match(await position.locator('td').nth(4).innerText(), /\d/, 'valued at a mark');
    await page.getByTestId('option-chain').locator(`tr.opt-atm .opt-held`).first().waitFor();
  });

  test('a two-leg call spread from the chain gets its combined preview', async () => {
    await page.getByRole('button', { name: /^Strategy builder/ }).click();
    const chain = page.getByTestId('option-chain');
    const atm = Number(await chain.locator('tr.opt-atm').getAttribute('data-strike'));
    const strikes = (await chain.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-strike')))).map(Number);
    // One and two strikes above the money: books the ticket's buy did not touch.
    const [low, high] = strikes.filter((k) => k > atm);
    await chain.locator(`tr[data-strike="${low}"] button[data-testid$="-C"].ask`).click();
    await chain.locator(`tr[data-strike="${high}"] button[data-testid$="-C"].bid`).click();
    const legs = page.getByTestId('strategy-legs').locator('li');
    assert.equal(await legs.count(), 2);
    for (const i of [0, 1]) await legs.nth(i).getByLabel(/Quantity of leg/).fill('0.2');
    await page.getByTestId('strategy-verdict').waitFor({ timeout: 10_000 });
    const preview = page.getByTestId('strategy-preview');
    const lines = preview.locator('li');
    assert.equal(await lines.count(), 2, 'one preview line per leg');
    assert.match(await lines.first().innerText(), /buy 0\.2 \d{2}[A-Z]{3}\d{2}-\d+-C @ [\d,.]+\s+fillable now [\d.]+ · premium [\d,.]+ · fee [\d.]+/);
    assert.match(await lines.nth(1).innerText(), /sell 0\.2 \d{2}[A-Z]{3}\d{2}-\d+-C @ /);
    assert.match(await page.getByTestId('strategy-net').innerText(), /^[\d,]+(\.\d+)? USDC$/);
    assert.match(await page.getByTestId('strategy-fees').innerText(), /^[\d,]+(\.\d+)? USDC$/);
    assert.match(await page.getByTestId('strategy-verdict').innerText(), /^(Every leg would fill now|Would not execute: .+ \[[A-Z_]+\])/);
    await screenshot(page, 'options-strategy');
  });

  test('Close on a position fills the ticket (sell, IOC, reduce-only); sending it closes the position', async () => {
    const position = page.getByTestId('option-positions').locator('tbody tr').first();
    const marketId = (await position.getAttribute('data-market')) ?? '';
    await position.getByRole('button', { name: /^Close/ }).click();
    const ticket = page.getByTestId('option-ticket');
    assert.equal(await page.getByTestId('ticket-instrument').innerText(), marketId);
    assert.equal(await ticket.getByRole('button', { name: 'Sell', exact: true }).getAttribute('aria-pressed'), 'true');
    await settledValue(ticket.getByLabel(/Quantity/), '0.1');
    await settledValue(ticket.getByLabel('Time in force'), 'ioc');
    assert.equal(await ticket.getByLabel('Reduce-only').isChecked(), true);
    // Marketable: a fifth under the bid, so a re-quote meanwhile still fills (at the maker's price).
    const bid = Number(await ticket.getByLabel(/Limit price/).inputValue());
    await ticket.getByLabel(/Limit price/).fill((bid * 0.8).toFixed(1));
    await page.getByTestId('preview-verdict').getByText('The venue would accept this order.').waitFor({ timeout: 10_000 });
    await page.getByTestId('send-option-order').click();
    await page.getByText('No open option position.').waitFor({ timeout: 10_000 });
  });

  test('DVOL and its history', async () => {
    await page.getByTestId('dvol-value').getByText(/^\d+\.\d+$/).waitFor({ timeout: 10_000 });
    await until(page, "Number(document.querySelector('[data-testid=dvol-history]')?.dataset.bars) >= 1", 20_000);
    assert.equal(await page.locator('[data-testid=dvol-history] canvas').count(), 1);
  });

  test('the ETH chain is one click away', async () => {
    await page.getByRole('link', { name: 'ETH options' }).click();
    await page.getByTestId('option-chain').locator('button[data-testid^="ask-ETH-"]').first().waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate('location.hash'), '#/options/ETH');
  });

  test('a narrow window: one column, no horizontal page overflow', async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    await page.getByTestId('option-chain').waitFor();
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
    const wide = await page.evaluate("[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map((e) => e.tagName + '.' + e.className).join(' ')");
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window: ${String(wide)}`);
    await screenshot(page, 'options-narrow');
  });

  test('no uncaught error or console error on the way', () => {
    assert.deepEqual(errors, []);
  });
});
