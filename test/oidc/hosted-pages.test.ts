// The hosted pages themselves (issue 31) in Chromium: axe-core finds no violation on any of them
// in light and dark at 1280 and 360 px, nothing is wider than a phone, the language follows
// ui_locales then Accept-Language, and a keyboard alone signs in (without JavaScript: the
// server-rendered forms) through the consent screen. Screenshots under test-artifacts/oidc/.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';
import { authorizeUrl, pkce, registerClient } from '../../packages/server/test/helpers/oidc.js';
import { ARTEFACTS, axeViolations, bundleHostedAssets, launchChromium, skipBrowser } from './browser.js';

describe('hosted pages: accessibility, small screens, languages, keyboard (issue 31)', {
  skip: skipBrowser,
}, () => {
  let server: TestServer;
  let browser: Browser;
  let client: { client_id: string };
  let rp: Server;
  /** The client's redirect URI: a loopback one (any port, RFC 8252), answered by `rp`. */
  let REDIRECT: string;

  before(async () => {
    bundleHostedAssets();
    server = await startServer('sqlite', { env: RELAXED_LIMITS });
    rp = createServer((_request, response) => response.end('<!doctype html><title>RP</title><p>back</p>'));
    await new Promise<void>((resolve) => rp.listen(0, '127.0.0.1', resolve));
    REDIRECT = `http://127.0.0.1:${(rp.address() as AddressInfo).port}/callback`;
    client = await registerClient(server, {
      client_name: 'Acme notes',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    rp?.close();
    await server?.close();
  });

  const start = (extra: Record<string, string> = {}) =>
    `${server.url}${authorizeUrl({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'openid email offline_access', state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256', ...extra })}`;

  /** A browser context; `forms`: the hosted pages' own forms instead of the element. */
  async function context(
    options: { forms?: boolean; locale?: string; bypassCSP?: boolean } = {},
  ): Promise<BrowserContext> {
    const ctx = await browser.newContext({
      bypassCSP: options.bypassCSP ?? true,

      locale: options.locale ?? 'en-US',
    });
    // The server-rendered forms, as without JavaScript: the element's bundle does not load (axe
    // still runs, which a context without JavaScript would not allow).
    if (options.forms) await ctx.route('**/oauth/assets/sign-in.js', (route) => route.abort());
    return ctx;
  }

  /** axe in light and dark at 1280 and 360 px, nothing wider than the window; a screenshot of each. */
  async function check(page: Page, name: string) {
    for (const colorScheme of ['light', 'dark'] as const)
      for (const width of [1280, 360]) {
        await page.emulateMedia({ colorScheme });
        await page.setViewportSize({ width, height: 800 });
        await page.waitForTimeout(100);
        const violations = await axeViolations(page);
        assert.deepEqual(violations, [], `${name} ${colorScheme} ${width}px`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
        assert.equal(wide, false, `${name} ${colorScheme} ${width}px scrolls sideways`);
        await page.screenshot({
          path: join(ARTEFACTS, `hosted-${name}-${colorScheme}-${width}.png`),
          fullPage: true,
        });
      }
  }

  test('every page passes axe-core and fits 360 px; keyboard alone signs in through consent (server-rendered forms)', {
    timeout: 180_000,
  }, async () => {
    const ctx = await context({ forms: true });
    const page = await ctx.newPage();
    await page.goto(start());
    const focused = () => page.evaluate(() => document.activeElement?.id);
    assert.equal(await focused(), 'identifier', 'the page opens with the focus in the identifier field');
    await check(page, 'identifier-nojs');
    await page.focus('#identifier');
    const email = 'keyboard@example.com';
    await page.keyboard.type(email);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/oauth\/sign-in\/start/);
    assert.equal(await focused(), 'code', 'the code step opens with the focus in the code field');
    await check(page, 'code-nojs');
    await page.focus('#code');
    await page.keyboard.type(server.lastCode(email));
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/oauth\/consent\?/);
    await check(page, 'consent');
    assert.match((await page.textContent('h1')) ?? '', /Acme notes wants to access your account/);
    assert.match((await page.textContent('main')) ?? '', /127\.0\.0\.1:\d+/);
    // Tab to "Allow" and press it.
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Allow') break;
    }
    await page.keyboard.press('Enter');
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    const answer = new URL(page.url()).searchParams;
    assert.ok(answer.get('code'));
    assert.equal(answer.get('iss'), server.url);
    await page.goto(`${server.url}/oauth/authorize?client_id=nobody`);
    await check(page, 'error');
    await ctx.close();
  });

  test('the element page passes axe-core (light, dark, 1280, 360 px)', { timeout: 120_000 }, async () => {
    const ctx = await context();
    const page = await ctx.newPage();
    await page.goto(start());
    await page.locator('tessera-sign-in').getByLabel('E-mail or phone number').waitFor();
    await check(page, 'identifier-element');
    await ctx.close();
  });

  test('the language follows ui_locales, then Accept-Language', { timeout: 60_000 }, async () => {
    for (const [options, extra, lang, heading] of [
      [{ locale: 'de-DE' }, { ui_locales: 'fr-CA en' }, 'fr', 'Se connecter à Acme notes'],
      [{ locale: 'de-DE' }, {}, 'de', 'Bei Acme notes anmelden'],
      [{ locale: 'es-ES' }, {}, 'en', 'Sign in to Acme notes'],
    ] as const) {
      const ctx = await context({ ...options, forms: true });
      const page = await ctx.newPage();
      await page.goto(start(extra));
      assert.equal(await page.getAttribute('html', 'lang'), lang);
      assert.equal(await page.textContent('h1'), heading);
      await page.screenshot({ path: join(ARTEFACTS, `hosted-identifier-${lang}.png`) });
      await ctx.close();
    }
  });
});
