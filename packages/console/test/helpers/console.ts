import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  addVirtualAuthenticator,
  axeSource,
  launchChromium,
  runAxe,
} from '../../../server/test/helpers/chromium.js';
import {
  freePort,
  RELAXED_LIMITS,
  type StartOptions,
  startServer,
  type TestServer,
} from '../../../server/test/helpers/harness.js';

const ROOT = new URL('../../../../', import.meta.url).pathname;
/** Screenshots of every page, at 1280 and 360 px. */
export const ARTEFACTS = join(ROOT, 'test-artifacts', 'console');

/** Bundles the console from the workspace sources into the server's dist/console (npm run build does it too). */
export function bundleConsole(): void {
  const bundled = spawnSync(
    process.execPath,
    [join(ROOT, 'packages/console/scripts/bundle.mjs'), '--source'],
    {
      stdio: 'inherit',
    },
  );
  assert.equal(bundled.status, 0, 'packages/console/scripts/bundle.mjs failed');
}

export interface ConsoleHarness {
  server: TestServer;
  /** The console's origin: localhost (passkeys need a domain), the server's own port. */
  origin: string;
  browser: Browser;
  /**
   * A fresh browser context (own storage) with a virtual authenticator, at `path` of the console;
   * `locale` is the browser's language (`de-DE`: navigator.languages and Accept-Language), default en-US.
   */
  open(path?: string, options?: { width?: number; locale?: string }): Promise<ConsolePage>;
  close(): Promise<void>;
}

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  /** The CDP virtual authenticator (WebAuthn), with user verification. */
  authenticator: { id: string; credentials(): Promise<unknown[]> };
  /** CSP violations and page errors seen so far. */
  problems: string[];
}

/**
 * Starts Tessera with the console on (SQLite, development outbox) on localhost, and Chromium. The
 * server makes the console project at start-up.
 */
export async function startConsole(options: StartOptions = {}): Promise<ConsoleHarness> {
  mkdirSync(ARTEFACTS, { recursive: true });
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const server = await startServer('sqlite', {
    ...options,
    port,
    env: { ...RELAXED_LIMITS, TESSERA_ISSUER: origin, TESSERA_CONSOLE: 'true', ...options.env },
  });
  const browser = await launchChromium();
  return {
    server,
    origin,
    browser,
    async open(path = '/console/', { width = 1280, locale = 'en-US' } = {}) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, locale });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text()))
          problems.push(`CSP: ${message.text()}`);
      });
      const cdp = await context.newCDPSession(page);
      const authenticatorId = await addVirtualAuthenticator(cdp);
      await page.goto(`${origin}${path}`);
      return {
        context,
        page,
        problems,
        authenticator: {
          id: authenticatorId,
          credentials: async () =>
            (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials as unknown[],
        },
      };
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * axe-core over the page, shadow roots included: the violations, described. Injected through the
 * debugging protocol, so the page's CSP stays as served (a violation would show in `problems`).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource());
  return runAxe(page);
}

/**
 * A page checked at 1280 and 360 px: no axe-core violation, no sideways scroll; screenshots
 * `<name>-1280.png` and `<name>-360.png`. Problems are collected, not thrown, so one run lists all.
 */
export async function checkPage(page: Page, name: string, problems: string[]): Promise<void> {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(50);
    for (const v of await axeViolations(page)) problems.push(`${name} ${width}px: ${v}`);
    const { scroll, inner } = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      inner: window.innerWidth,
    }));
    if (scroll > inner) problems.push(`${name} ${width}px: ${scroll} px wide, wider than the window`);
    await page.screenshot({ path: join(ARTEFACTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The newest sign-in code sent to `to` (development outbox). */
export const codeFor = (server: TestServer, to: string): string => server.lastCode(to);
