import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../../packages/server/test/helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../../../packages/server/test/helpers/harness.js';
import { assertSessionCookies } from '../../../packages/ssr/test/browser-cookies.js';
import { createApp } from '../src/app.js';

// A real browser (Debian's chromium through playwright-core, never a download) against a real Tessera.
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
const missing = !existsSync(CHROMIUM);

describe('server-rendered app with @tessera/ssr in headless Chromium', {
  skip: missing && !required ? `${CHROMIUM} not found` : false,
}, () => {
  let tessera: TestServer;
  let app: Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  const IDENTIFIER = 'ssr-e2e@example.com';

  const cookie = async (name: string) => (await context.cookies(origin)).find((c) => c.name === name);

  before(async () => {
    tessera = await startServer('sqlite');
    const port = await freePort();
    // localhost, not 127.0.0.1: browsers treat http://localhost as a secure context, so the
    // Secure __Host- cookies are kept as in production.
    origin = `http://localhost:${port}`;
    const express = createApp({
      issuer: tessera.url,
      apiKeyId: tessera.project.api_key_id,
      appOrigin: origin,
    });
    app = await new Promise<Server>((resolve) => {
      const s = express.listen(port, '127.0.0.1', () => resolve(s));
    });
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    app?.close();
    await tessera?.close();
  });

  test('sign in with the HTML forms: the code page, then the protected account page', async () => {
    await page.goto(`${origin}/account`);
    assert.match(page.url(), /\/signin\?redirect_to=%2Faccount$/);
    await page.getByLabel('E-mail or phone').fill(IDENTIFIER);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.waitForURL(/\/signin\/code\?challenge_id=/);
    const code = tessera.lastCode(IDENTIFIER);
    // A typo keeps the user on the code step, with the same challenge and an error.
    await page.getByLabel('Code').fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/signin\/code\?challenge_id=.+&error=invalid_code$/);
    assert.equal(await page.getByTestId('error').textContent(), 'Error: invalid_code');
    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${origin}/account`);
    assert.equal(await page.getByTestId('identifier').textContent(), IDENTIFIER);
    assert.equal(await page.getByTestId('method').textContent(), 'OTP');
  });

  test('the session cookies are HttpOnly, Secure, SameSite=Lax and out of reach of scripts', async () => {
    await assertSessionCookies(context, origin);
    const visible = await page.evaluate(() => document.cookie);
    assert.doesNotMatch(visible, /tessera-refresh|tessera-access/);
    assert.match(visible, /__Host-tessera-csrf=/, 'the CSRF token is readable, by design');
    const html = await page.content();
    assert.doesNotMatch(html, new RegExp((await cookie('__Host-tessera-refresh'))!.value.slice(0, 20)));
  });

  test('a state-changing call without the CSRF token is refused, and the session survives', async () => {
    const status = await page.evaluate(async () => {
      const response = await fetch('/auth/logout', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return { status: response.status, body: await response.json() };
    });
    assert.deepEqual(status, {
      status: 403,
      body: { error: 'csrf_failed', message: 'Refused: the CSRF token is missing or does not match' },
    });
    await page.reload();
    assert.equal(await page.getByTestId('identifier').textContent(), IDENTIFIER);
  });

  test('once the access cookie is gone (expired), the next page renews the session on the server', async () => {
    const before = (await cookie('__Host-tessera-refresh'))!.value;
    const expiresBefore = await page.getByTestId('expires').textContent();
    await context.clearCookies({ name: '__Host-tessera-access' });
    await page.reload();
    assert.equal(await page.getByTestId('identifier').textContent(), IDENTIFIER);
    const after = (await cookie('__Host-tessera-refresh'))!.value;
    assert.notEqual(after, before, 'the refresh token was rotated');
    assert.ok(await cookie('__Host-tessera-access'));
    assert.ok((await page.getByTestId('expires').textContent())! >= expiresBefore!);
  });

  test('sign out revokes the session at Tessera and removes the cookies', async () => {
    const refresh = (await cookie('__Host-tessera-refresh'))!.value;
    const access = (await cookie('__Host-tessera-access'))!.value;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/`);
    await page.getByTestId('signed-out').waitFor();
    assert.equal(await cookie('__Host-tessera-refresh'), undefined);
    assert.equal(await cookie('__Host-tessera-access'), undefined);
    const grant = await tessera.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: refresh, client_id: tessera.project.api_key_id },
    });
    assert.equal(grant.status, 400);
    const verify = await tessera.request('POST', '/verify', {
      body: { oauth_token: { access_token: access } },
    });
    assert.equal(verify.body.success, false);
    await page.goto(`${origin}/account`);
    assert.match(page.url(), /\/signin\?redirect_to=/);
  });
});
