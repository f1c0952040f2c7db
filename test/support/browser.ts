/**
 * A real browser for the terminal's tests and benchmarks: Debian's Chromium (`apt-get install
 * chromium`; CHROMIUM_PATH overrides /usr/bin/chromium) driven headless by playwright-core, which
 * downloads no browser of its own. The flags keep Chromium off the network it would otherwise call
 * at start (this machine has none) and out of any profile but a fresh temporary one.
 * Screenshots go to test-artifacts/web/ (kept after the run, ignored by git).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'web');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumMissing(): string | false {
  return existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** A fresh context (its own storage: its own local key) at the terminal's working size. */
export async function newPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, colorScheme: 'dark' });
  const page = await context.newPage();
  return { context, page };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/** Fails the test with the page's own words: console errors and uncaught exceptions are collected. */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/**
 * Text on the page whose contrast with what is behind it is below WCAG's AA minimum (4.5:1, or 3:1
 * for large text): every visible element holding text of its own, against its backgrounds composed
 * from the ancestors up to the first opaque one (the page's own behind all). Disabled controls are
 * exempt, as in WCAG; text drawn on canvases (charts) is not seen. One line per failure.
 */
export async function contrastFailures(page: Page): Promise<string[]> {
  const script = `(() => {
    const parse = (c) => {
      const m = /rgba?\\(([^)]+)\\)/.exec(c);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
      return { r, g, b, a };
    };
    const over = (top, under) => ({ r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a), b: top.b * top.a + under.b * (1 - top.a), a: 1 });
    const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    const luminance = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
    const page = parse(getComputedStyle(document.documentElement).backgroundColor);
    const pageColour = page && page.a > 0 ? page : parse(getComputedStyle(document.body).backgroundColor) ?? { r: 255, g: 255, b: 255, a: 1 };
    const behind = (el) => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
      }
      return layers.reverse().reduce((under, top) => over(top, under), { ...pageColour, a: 1 });
    };
    const failures = [];
    for (const el of document.querySelectorAll('body *')) {
      if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '')) continue;
      if (el.closest('[disabled], [aria-disabled="true"]')) continue;
      const style = getComputedStyle(el);
      const bg = behind(el);
      const fgRaw = parse(style.color);
      if (!fgRaw) continue;
      const fg = fgRaw.a < 1 ? over(fgRaw, bg) : fgRaw;
      const [hi, lo] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
      const ratio = (hi + 0.05) / (lo + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) failures.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' "' + el.textContent.trim().slice(0, 30) + '" ' + ratio.toFixed(2) + ':1');
    }
    return failures;
  })()`;
  return (await page.evaluate(script)) as string[];
}
