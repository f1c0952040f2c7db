/**
 * The perp trading screen in a real browser, as a trader uses it: the BTC-PERP book fills from the
 * market maker (a click on a level puts its price in the ticket); signed in with a local key and
 * funded (a deposit through the admin endpoint, then a transfer to the perps bucket made from Node
 * with the page's own key: the wallet screen's test covers that transfer through the UI), the
 * trader places a resting limit order with the keyboard after the API's preview, amends it (the
 * same order id, POST /perps/orders/{id}/modify; a refused amend is reported and changes nothing) and
 * cancels it, opens an isolated 5x position (the ticket's leverage select) with a market order whose
 * preview estimated the liquidation price GET /perps/positions then gives, sees its entry, mark,
 * unrealised PnL and that price, then closes it. Before any trade the candle chart draws the mark
 * price with a note (its container says which series and how many bars it drew) and its price
 * source switches by keyboard; after the first trade it draws the trades.
 * The index is pushed (FEED=push) and held, so the mark and the maker's quotes stand still between
 * the preview and the fill. Screenshots: test-artifacts/web/trade.png (1280x800, a position and an
 * open order), trade-chart-mark.png (the chart before any trade), trade-leverage.png (the isolated
 * ticket at 5x) and trade-narrow.png (420 px wide).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import type { Hex } from 'viem';
import { ExchangeClient } from '../../sdk/src/index.ts';
import { num } from '../../web/src/lib/format.ts';
import { chromiumMissing, collectPageErrors, newPage, screenshot } from '../support/browser.ts';
import { admin, call, waitFor } from '../support/harness.ts';
import { deposit, signInLocal, startTerminal, type Terminal } from './terminal.ts';

const MARKET = 'BTC-PERP';

describe('web terminal: perp trading', { skip: chromiumMissing() }, () => {
  let terminal: Terminal;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let trader: ExchangeClient;
  /** A buy price well under the book and inside the price band, and a sell price well over it. */
  let farBid: string;
  let farAsk: string;

  before(async () => {
    terminal = await startTerminal({ FEED: 'push', INDEX_MAX_AGE_MS: '3600000' });
    const index = await call(terminal.url, '/admin/index', { body: { underlying: 'BTC', price: '100000' }, headers: admin });
    assert.equal(index.status, 200, JSON.stringify(index.body));
    ({ context, page } = await newPage(terminal.browser));
    errors = collectPageErrors(page);
  });
  after(async () => {
    await context?.close();
    await terminal?.close();
  });

  const ticket = () => page.getByTestId('ticket');
  const orderRows = () => page.getByTestId('order-row');

  /**
   * Fills the ticket and sends it with Enter (the ticket is a form), once the preview approves it;
   * returns the liquidation price the preview estimated, as the ticket shows it.
   */
  async function placeOrder(side: 'Buy / Long' | 'Sell / Short', type: 'Limit' | 'Market', quantity: string, price?: string, margin = 'cross', leverage?: string): Promise<string> {
    await ticket().getByRole('button', { name: side, exact: true }).click();
    await ticket().getByRole('button', { name: type, exact: true }).click();
    await ticket().getByLabel('Margin').selectOption(margin);
    if (margin === 'isolated') await ticket().getByLabel('Leverage').selectOption(leverage ?? '');
    if (price !== undefined) await ticket().getByLabel(/^Price/).fill(price);
    const size = ticket().getByLabel(/^Size/);
    await size.fill(quantity);
    await page.getByTestId('preview-verdict').filter({ hasText: 'would accept' }).waitFor({ timeout: 10_000 });
    assert.match(await page.getByTestId('preview-margin').innerText(), /\d/, 'the preview shows the margin');
    assert.match(await page.getByTestId('preview-fee').innerText(), /\d USDC/, 'the preview shows the fee');
    const liquidation = await page.getByTestId('preview-liq').innerText();
    await size.press('Enter');
    return liquidation;
  }

  test('signed out: the BTC-PERP book fills from the maker, private panels ask to sign in', async () => {
    await page.goto(`${terminal.url}/#/trade/${MARKET}`);
    // The maker may be replacing its ladder at that moment: wait for two levels on each side.
    const levels = (side: string) => page.getByTestId(`book-${side}`).locator('.ob-level').count();
    await waitFor(async () => (await levels('bids')) >= 2 && (await levels('asks')) >= 2, 15_000, 50).catch(() => undefined);
    assert.ok((await levels('bids')) >= 2, 'bids have levels');
    assert.ok((await levels('asks')) >= 2, 'asks have levels');
    assert.match(await page.getByTestId('book-spread').innerText(), /Spread\s+[\d,.]+/);
    assert.match(await page.getByTestId('mark').innerText(), /\d{2},\d{3}/);
    assert.equal(await page.getByTestId('sign-in-note').count(), 2, 'positions and open orders say to sign in');

    const best = page.getByTestId('book-bids').locator('.ob-price').first();
    const label = (await best.getAttribute('aria-label')) ?? '';
    await best.click();
    const price = ticket().getByLabel(/^Price/);
    await waitFor(async () => (await price.inputValue()) === label.replace(/^bid /, ''), 5_000, 50);
  });

  test('the chart before any trade draws the mark and says so; Mark, Index and Trades by keyboard', async () => {
    const chart = page.locator('.candle-chart');
    const sources = page.getByRole('group', { name: 'Price source' });
    /** Waits until the chart draws `series` with at least one bar; returns the bar count. */
    const drawn = async (series: string): Promise<number> => {
      let seen = '';
      let bars = 0;
      await waitFor(async () => {
        // One reading of each attribute, and the count returned is the one checked (the chart may redraw in between).
        const drawing = await chart.getAttribute('data-series');
        bars = Number(await chart.getAttribute('data-bars'));
        seen = `${drawing} x ${bars}`;
        return drawing === series && bars > 0;
      }, 10_000, 100).catch(() => assert.fail(`the chart never drew ${series} bars: ${seen}`));
      return bars;
    };
    assert.equal(await sources.getByRole('button', { name: 'Trades' }).getAttribute('aria-pressed'), 'true', 'it opens on Trades');
    assert.ok(await drawn('mark') >= 1);
    assert.equal(await page.getByTestId('chart-note').innerText(), 'no trades yet: mark price');

    const index = sources.getByRole('button', { name: 'Index' });
    await index.focus();
    await page.keyboard.press('Enter');
    assert.equal(await index.getAttribute('aria-pressed'), 'true');
    assert.ok(await drawn('index') >= 1);
    assert.equal(await page.getByTestId('chart-note').count(), 0, 'no note when the chart draws what was asked');
    await page.keyboard.press('Shift+Tab'); // Mark
    await page.keyboard.press('Enter');
    assert.equal(await sources.getByRole('button', { name: 'Mark' }).getAttribute('aria-pressed'), 'true');
    assert.ok(await drawn('mark') >= 1);
    await sources.getByRole('button', { name: 'Trades' }).click();
    assert.ok(await drawn('mark') >= 1);
    await page.getByTestId('chart-note').filter({ hasText: 'no trades yet' }).waitFor();
    await dismissNotices(page);
    await screenshot(page, 'trade-chart-mark');
  });

  test('signed in and funded, the perps bucket shows', async () => {
    const address = await signInLocal(page);
    const key = (await page.evaluate("localStorage.getItem('exchange.localKey')")) as Hex;
    trader = new ExchangeClient({ baseUrl: terminal.url, signer: key });
    await deposit(terminal, address, '20000');
    await waitFor(async () => Number((await trader.balance()).walletBalance) >= 20_000, 10_000, 100);
    await trader.transfer({ from: 'wallet', to: 'perps', amount: '20000' });
    await page.getByTestId('perps-balance').filter({ hasText: '20,000' }).waitFor({ timeout: 10_000 });
    const m = (await trader.markets()).find((x) => x.id === MARKET)!;
    const band = Number(m.priceBandPct) / 100;
    farBid = String(Math.floor(Number(m.markPrice) * (1 - band / 2)));
    farAsk = String(Math.ceil(Number(m.markPrice) * (1 + band / 2)));
  });

  test('a resting limit order shows in open orders, is amended, then cancelled', async () => {
    await placeOrder('Buy / Long', 'Limit', '0.01', farBid);
    const row = orderRows().filter({ hasText: num(farBid) });
    await row.waitFor({ timeout: 10_000 });
    assert.match(await row.innerText(), /buy\s+limit/);

    const [placed] = await trader.get('/perps/orders/open');
    const amended = String(Number(farBid) - 100);
    await row.getByRole('button', { name: /^Amend/ }).click();
    const form = page.getByTestId('amend-form');
    await form.getByLabel('New price').fill(amended);
    await form.getByLabel('New total size').fill('0.02');
    await form.getByLabel('New total size').press('Enter');
    const moved = orderRows().filter({ hasText: num(amended) });
    await moved.waitFor({ timeout: 10_000 });
    assert.equal(await moved.getByTestId('order-size').innerText(), '0.02');
    assert.equal(await moved.getAttribute('data-order'), placed?.id, 'the row is the same order');
    await orderRows().filter({ hasText: num(farBid) }).waitFor({ state: 'detached' });
    const open = await trader.get('/perps/orders/open');
    assert.deepEqual(open.map((o) => [o.id, o.price, o.quantity]), [[placed?.id, amended, '0.02']], 'the venue amended the order in place: same id');

    // A refused amend (far beyond the margin) is reported and leaves the order as it was.
    await moved.getByRole('button', { name: /^Amend/ }).click();
    await form.getByLabel('New total size').fill('50');
    await form.getByLabel('New total size').press('Enter');
    await page.getByText(/INSUFFICIENT_MARGIN|margin/).first().waitFor({ timeout: 10_000 });
    await form.getByRole('button', { name: 'Keep as is' }).click();
    // Chromium logs the refused request itself as a console error: that one was expected.
    const logged = errors.findIndex((e) => e.includes('status of 422'));
    assert.ok(logged >= 0, 'the refused amend reached the venue');
    errors.splice(logged, 1);
    assert.deepEqual((await trader.get('/perps/orders/open')).map((o) => [o.id, o.price, o.quantity]), [[placed?.id, amended, '0.02']]);

    await moved.getByRole('button', { name: /^Cancel/ }).click();
    await page.getByText('No open order.').waitFor({ timeout: 10_000 });
    assert.deepEqual(await trader.get('/perps/orders/open'), []);
  });

  test('an isolated market order at 5x: the preview\'s liquidation price is the one its position then shows', async () => {
    const estimated = await placeOrder('Buy / Long', 'Market', '0.05', undefined, 'isolated', '5');
    assert.match(estimated, /^\d{2},\d{3}(\.\d)?$/, 'the preview estimates a liquidation price');
    const position = page.getByTestId('position-row').filter({ hasText: MARKET });
    await position.waitFor({ timeout: 10_000 });
    const [opened] = await trader.get('/perps/positions', { query: { marketId: MARKET } });
    assert.equal(num(opened?.liquidationPrice), estimated, 'GET /perps/positions gives the estimated liquidation price');
    // 5x: the isolated margin is the fill's notional / 5 (the maker's ask is within a few ticks of the mark).
    assert.ok(Math.abs(Number(opened?.leverage) - 5) < 0.1, `leverage ${opened?.leverage}`);
    assert.ok(Number(opened?.liquidationPrice) > Number(opened?.entryPrice) * 0.8, 'a 5x long is liquidated within 20 % of its entry');
    for (const id of ['position-entry', 'position-mark', 'position-upnl', 'position-liq']) {
      assert.match(await position.getByTestId(id).innerText(), /\d/, `${id} is shown`);
    }
    await waitForEqual(position.getByTestId('position-liq'), async () => {
      const [p] = await trader.get('/perps/positions', { query: { marketId: MARKET } });
      return num(p?.liquidationPrice);
    });
    await page.getByTestId('trades-tape').locator('tbody tr').first().waitFor({ timeout: 10_000 });
    assert.equal(await ticket().getByLabel('Leverage').inputValue(), '5', 'the ticket keeps the chosen leverage');
    await dismissNotices(page);
    await screenshot(page, 'trade-leverage');

    await placeOrder('Sell / Short', 'Limit', '0.01', farAsk);
    await orderRows().filter({ hasText: num(farAsk) }).waitFor({ timeout: 10_000 });
    await dismissNotices(page);
    await screenshot(page, 'trade');
  });

  test('once the market has traded, the chart draws the trades', async () => {
    const chart = page.locator('.candle-chart');
    await waitFor(async () => (await chart.getAttribute('data-series')) === 'trade', 10_000, 100)
      .catch(async () => assert.fail(`the chart draws ${await chart.getAttribute('data-series')} after a trade`));
    assert.ok(Number(await chart.getAttribute('data-bars')) >= 1);
    assert.equal(await page.getByTestId('chart-note').count(), 0);
  });

  test('a narrow window stacks the screen without horizontal overflow', async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    await page.getByTestId('book-bids').locator('.ob-level').first().waitFor();
    // The chart follows its box through a ResizeObserver: give it a moment to shrink.
    await waitFor(async () => (await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')) === true, 3_000, 100).catch(() => undefined);
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
    const wide = await page.evaluate(WIDE_ELEMENTS);
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window: ${JSON.stringify(wide)}`);
    await dismissNotices(page);
    await screenshot(page, 'trade-narrow');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test('the position closes from its row; the last order is cancelled', async () => {
    const position = page.getByTestId('position-row').filter({ hasText: MARKET });
    await position.getByRole('button', { name: /^Close/ }).click();
    await page.getByText('No open position.').waitFor({ timeout: 10_000 });
    assert.deepEqual(await trader.get('/perps/positions'), []);
    await orderRows().first().getByRole('button', { name: /^Cancel/ }).click();
    await page.getByText('No open order.').waitFor({ timeout: 10_000 });
  });

  test('no uncaught error or console error on the way', () => {
    assert.deepEqual(errors, []);
  });
});

/** Clears the confirmations (they sit over the ticket) before a screenshot. */
async function dismissNotices(page: Page): Promise<void> {
  const buttons = page.getByRole('button', { name: 'Dismiss' });
  while ((await buttons.count()) > 0) await buttons.first().click();
  await page.mouse.move(0, 0);
}

/** For the failure message: the elements (outside a scroll box) that end past the window's right edge. */
const WIDE_ELEMENTS = `[...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && e.closest('.table-scroll') === null)
  .slice(0, 8).map((e) => e.tagName + '.' + e.className + ' ends at ' + Math.round(e.getBoundingClientRect().right))`;

/** Waits until the page's text equals what `read` returns at about the same moment (both may move). */
async function waitForEqual(shown: Locator, read: () => Promise<string>): Promise<void> {
  let last = '';
  try {
    await waitFor(async () => {
      const [onPage, fromApi] = [await shown.innerText(), await read()];
      last = `page ${onPage}, API ${fromApi}`;
      return onPage === fromApi;
    }, 10_000, 250);
  } catch {
    assert.fail(`the page never showed the API's value: ${last}`);
  }
}
