/**
 * Issue 30: /docs must talk to Tessera alone. Scalar's "Ask AI" called Scalar's servers and
 * "Generate MCP" posted the whole document to Scalar's proxy. In Chromium, every button of the
 * page is clicked while every request is recorded (and every Content-Security-Policy violation,
 * which is what a request the page's CSP blocked leaves behind): all must stay on the origin.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';
import { startServer, type TestServer } from '../helpers/harness.js';

const skip = chromiumSkip();
const ARTEFACTS = join(process.cwd(), 'test-artifacts', 'docs-page');

interface Recorded {
  requests: string[];
  violations: string[];
  /** The last button clicked, to name the one behind a violation. */
  lastAction?: string;
}

describe('/docs in headless Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  before(async () => {
    mkdirSync(ARTEFACTS, { recursive: true });
    server = await startServer('sqlite');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A page that records every request of its context and every CSP violation it reports. */
  const openRecorded = async (url: string): Promise<{ page: Page; seen: Recorded }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const seen: Recorded = { requests: [], violations: [] };
    context.on('request', (request) => seen.requests.push(request.url()));
    await context.exposeFunction('recordViolation', (text: string) =>
      seen.violations.push(`${text} (after ${seen.lastAction ?? 'loading'})`),
    );
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        const record = (globalThis as unknown as { recordViolation(text: string): void }).recordViolation;
        // Requests only: a blocked eval (Scalar probes for it at load; the page works without) is
        // not a request and says nothing about where the page talks to.
        if (/^(https?|wss?):/.test(event.blockedURI))
          record(`${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    const page = await context.newPage();
    page.on('popup', (popup) => void popup.close());
    await page.goto(url);
    await page.locator('.scalar-app').first().waitFor({ timeout: 30_000 });
    await page.getByText('Tessera', { exact: false }).first().waitFor({ timeout: 30_000 });
    return { page, seen };
  };

  const offOrigin = (seen: Recorded) =>
    seen.requests.filter(
      (url) => !url.startsWith(`${server.url}/`) && !url.startsWith('data:') && !url.startsWith('blob:'),
    );

  test('the page answers with a CSP whose connect-src is self', async () => {
    const response = await fetch(`${server.url}/docs/`);
    const csp = response.headers.get('content-security-policy') ?? '';
    assert.match(csp, /(^|;\s*)connect-src 'self'(;|$)/, csp);
    assert.match(csp, /(^|;\s*)default-src 'none'/, csp);
  });

  test('clicking every button sends no request anywhere but the origin', async (t) => {
    const { page, seen } = await openRecorded(`${server.url}/docs/`);
    const labels = new Set<string>();
    let clicked = 0;
    for (let round = 0; round < 2; round++) {
      const buttons = page.locator('button:visible, [role="button"]:visible');
      const count = await buttons.count();
      for (let i = 0; i < count; i++) {
        const button = buttons.nth(i);
        const label = (
          (await button.getAttribute('aria-label').catch(() => null)) ??
          (await button.textContent({ timeout: 1000 }).catch(() => '')) ??
          ''
        )
          .trim()
          .replace(/\s+/g, ' ')
          .slice(0, 60);
        if (labels.has(label)) continue;
        labels.add(label);
        seen.lastAction = label;
        await button.click({ timeout: 2000 }).catch(() => undefined);
        clicked++;
        await page.waitForTimeout(150);
        if (!page.url().startsWith(`${server.url}/docs`)) await page.goto(`${server.url}/docs/`);
        await page.keyboard.press('Escape').catch(() => undefined);
      }
    }
    await page.waitForTimeout(1000);
    await page.screenshot({ path: join(ARTEFACTS, 'docs.png'), fullPage: false });
    t.diagnostic(
      `${clicked} distinct buttons clicked, ${seen.requests.length} requests: ${[...labels].slice(0, 40).join(' | ')}`,
    );
    assert.ok(clicked >= 10, `only ${clicked} buttons found`);
    assert.deepEqual(offOrigin(seen), [], 'requests that left the origin');
    assert.deepEqual(seen.violations, [], 'requests the CSP had to block');
  });

  test('no "Ask AI" or "Generate MCP" control is offered', async () => {
    const { page } = await openRecorded(`${server.url}/docs/`);
    for (const name of [/ask ai/i, /mcp/i, /open api client/i])
      assert.equal(await page.getByRole('button', { name }).count(), 0, String(name));
  });
});
