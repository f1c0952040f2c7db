/**
 * The web terminal under test: the real service in-process (simulated feed, the reference market
 * maker on, so books fill as they do for a user), on a free port whose address is its
 * PUBLIC_ORIGIN, serving the current build of web/ (built first if stale), and a headless Chromium
 * (test/support/browser.ts). Helpers act as a trader would: through the page, with the admin
 * endpoint only where an operator or the chain would act (a deposit).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { admin, call, freePort, startService, type TestService } from '../support/harness.ts';
import { launchBrowser } from '../support/browser.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Terminal {
  readonly url: string;
  readonly ts: TestService;
  readonly browser: Browser;
  close(): Promise<void>;
}

/** Builds web/dist when it is older than web/ (the same check `npm start` makes). */
function ensureWebBuild(): void {
  execFileSync(process.execPath, ['--input-type=module', '-e', "import { webStaleReason, buildWeb } from './scripts/build-web.mjs'; if (webStaleReason() !== null) await buildWeb();"], { cwd: ROOT, stdio: 'inherit' });
}

export async function startTerminal(env: Record<string, string> = {}): Promise<Terminal> {
  ensureWebBuild();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const ts = await startService({ PORT: String(port), PUBLIC_ORIGIN: url, FEED: 'simulated', MARKET_MAKER: 'on', RATE_LIMIT_ANONYMOUS: '1000000', ...env });
  const browser = await launchBrowser();
  return {
    url,
    ts,
    browser,
    async close() {
      await browser.close();
      await ts.close();
    },
  };
}

/** Signs in with the page's local key; returns the address the page shows. */
export async function signInLocal(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Sign in with a local key' }).click();
  const account = page.getByTestId('account');
  await account.waitFor();
  const address = await account.locator('.mono').getAttribute('title');
  if (address === null) throw new Error('the page shows no address after signing in');
  return address;
}

/** A deposit on the simulated chain to `address` (the operator's admin endpoint stands for the chain). */
export async function deposit(terminal: Terminal, address: string, amount: string): Promise<void> {
  const reply = await call(terminal.url, '/admin/chain/deposits', { body: { walletAddress: address, amount }, headers: admin });
  if (reply.status !== 200) throw new Error(`deposit failed: ${JSON.stringify(reply.body)}`);
}
