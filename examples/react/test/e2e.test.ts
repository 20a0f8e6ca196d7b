import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../../packages/server/test/helpers/chromium.js';
import {
  freePort,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../../packages/server/test/helpers/harness.js';
import { createExampleServer } from '../src/server.js';

const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
const missing = !existsSync(CHROMIUM);

describe('React example (server-rendered, hydrated) in headless Chromium', {
  skip: missing && !required ? `${CHROMIUM} not found` : false,
}, () => {
  let tessera: TestServer;
  let app: Server;
  let browser: Browser;
  let page: Page;
  let origin: string;
  let project: Awaited<ReturnType<TestServer['ctx']['projects']['create']>>;
  const problems: string[] = [];

  before(async () => {
    tessera = await startServer('sqlite', { env: RELAXED_LIMITS });
    const port = await freePort();
    origin = `http://localhost:${port}`;
    project = await tessera.ctx.projects.create({ name: 'react', origins: [origin] });
    const apiKeyId = project.api_key_id;
    app = await createExampleServer({ issuer: tessera.url, apiKeyId });
    await new Promise<void>((resolve) => app.listen(port, '127.0.0.1', resolve));
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    // Records the passkey autofill the form starts (no authenticator here: it waits until aborted).
    // A string, not a function: tsx's helpers (__name) do not exist in the page.
    await page.addInitScript(`
      window.autofillSignals = [];
      Object.defineProperty(PublicKeyCredential, 'isConditionalMediationAvailable', { value: async () => true });
      navigator.credentials.get = (options) => new Promise((_resolve, reject) => {
        if (options?.mediation !== 'conditional' || !options.signal) return reject(new Error('unexpected'));
        window.autofillSignals.push(options.signal);
        options.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      });
    `);
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
  });
  after(async () => {
    await browser?.close();
    app?.close();
    await tessera?.close();
  });

  test('the server renders "loading", hydration matches, then the client shows the sign-in form', async () => {
    const response = await page.goto(origin);
    assert.match(await response!.text(), /data-testid="loading"/);
    await page.getByTestId('signed-out').waitFor();
    assert.deepEqual(
      problems.filter((p) => /hydrat|did not match|mismatch/i.test(p)),
      [],
    );
  });

  test('useSignIn signs in by OTP; useSession shows the user; a reload keeps the session', async () => {
    await page.getByLabel('E-mail').fill('react@example.com');
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.getByLabel('Code').waitFor(); // the code is sent once the form turned to step 2
    await page.getByLabel('Code').fill(tessera.lastCode('react@example.com'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('signed-in').waitFor();
    const autofills = await page.evaluate(() =>
      (window as unknown as { autofillSignals: AbortSignal[] }).autofillSignals.map((s) => s.aborted),
    );
    assert.ok(
      autofills.length > 0,
      `the sign-in form offered passkeys in the autofill: ${problems.join('; ')}`,
    );
    assert.ok(autofills.every(Boolean), 'the autofill ended when the form unmounted');
    assert.equal(await page.getByTestId('identifier').textContent(), 'react@example.com');
    assert.equal(await page.getByTestId('method').textContent(), 'OTP');
    await page.reload();
    await page.getByTestId('signed-in').waitFor();
    assert.deepEqual(
      problems.filter((p) => /hydrat|did not match|mismatch/i.test(p)),
      [],
    );
  });

  test("signOut('global') ends the user's sessions on other devices too", async () => {
    const elsewhere = await tessera.signIn('react@example.com', project);
    await page.getByRole('button', { name: 'Sign out on every device' }).click();
    await page.getByTestId('signed-out').waitFor();
    const verified = await tessera.request('POST', '/verify', {
      body: { oauth_token: { access_token: elsewhere.access_token } },
      headers: { api_key_id: project.api_key_id },
    });
    assert.equal(verified.body.success, false);
  });

  test('a wrong code shows the error code from useSignIn', async () => {
    await page.getByTestId('signed-out').waitFor();
    await page.getByLabel('E-mail').fill('wrong-code@example.com');
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.getByLabel('Code').waitFor();
    const code = tessera.lastCode('wrong-code@example.com');
    await page.getByLabel('Code').fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = await page.getByRole('alert').textContent();
    assert.match(alert ?? '', /^[a-z_]+$/);
    assert.notEqual(alert, 'error');
  });
});
