import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { freePort, startServer, type TestServer } from '../../../packages/server/test/helpers/harness.js';
import { createApi } from '../../express-api/src/api.js';

// End-to-end in a real browser: Debian's chromium driven by playwright-core (never a download).
const CHROMIUM = process.env.TESSERA_CHROMIUM ?? '/usr/bin/chromium';
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
const missing = !existsSync(CHROMIUM);
if (missing && !required)
  console.log(`# browser tests skipped: ${CHROMIUM} not found (apt-get install -y chromium)`);

const ARTEFACTS = join(process.cwd(), 'test-artifacts', 'e2e');
const TTL = 30;

describe('demo app in headless Chromium', {
  skip: missing && !required ? `${CHROMIUM} not found` : false,
}, () => {
  let server: TestServer;
  let api: Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  let step = 0;

  const shot = async (p: Page, name: string) => {
    await p.screenshot({
      path: join(ARTEFACTS, `${String(++step).padStart(2, '0')}-${name}.png`),
      fullPage: true,
    });
  };
  const method = (p: Page) => p.getByTestId('claim-method').textContent();
  const signedIn = (p: Page) => p.getByTestId('signed-in').waitFor({ state: 'visible', timeout: 15_000 });
  const signedOut = (p: Page) => p.getByTestId('signed-out').waitFor({ state: 'visible', timeout: 15_000 });
  const statusHas = (p: Page, text: string | RegExp) =>
    p.getByTestId('status').filter({ hasText: text }).waitFor({ timeout: 15_000 });

  before(async () => {
    mkdirSync(ARTEFACTS, { recursive: true });
    const apiPort = await freePort();
    server = await startServer('sqlite', {
      env: { TESSERA_ACCESS_TOKEN_TTL: String(TTL), TESSERA_DEMO_API_URL: `http://127.0.0.1:${apiPort}` },
    });
    // WebAuthn needs a domain, not an IP: the page is opened on localhost.
    origin = server.url.replace('127.0.0.1', 'localhost');
    await server.ctx.projects.create({ name: 'demo', origins: [origin], rpId: 'localhost' });
    const app = createApi({
      issuer: server.url,
      apiKeyId: (await server.ctx.projects.findByName('demo'))!.api_key_id,
      allowedOrigin: origin,
    });
    api = await new Promise<Server>((resolve) => {
      const s = app.listen(apiPort, '127.0.0.1', () => resolve(s));
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
      ],
    });
    context = await browser.newContext();
    page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
      },
    });
    await page.goto(`${origin}/demo/`);
  });

  after(async () => {
    await browser?.close();
    api?.close();
    await server?.close();
  });

  test('OTP sign-in with the code from the development outbox', async () => {
    await page.getByTestId('identifier').fill('Browser@Example.com');
    await page.getByTestId('send-code').click();
    await statusHas(page, 'Code sent');
    await page.getByTestId('code').fill(server.lastCode('browser@example.com'));
    await shot(page, 'otp-code');
    await page.getByTestId('sign-in-code').click();
    await signedIn(page);
    assert.equal(await method(page), 'OTP');
    assert.equal(await page.getByTestId('claim-identifier').textContent(), 'browser@example.com');
    await shot(page, 'signed-in-otp');
  });

  test('/verify and the sample backend accept the token', async () => {
    await page.getByTestId('verify').click();
    await statusHas(page, 'the access token is valid');
    await page.getByTestId('call-api').click();
    await statusHas(page, /Hello, browser@example.com/);
    await shot(page, 'verify-and-backend');
  });

  test('the stored bundle is encrypted: no token text in localStorage', async () => {
    const stored = await page.evaluate(() => Object.values(localStorage).join('\n'));
    assert.ok(stored.length > 0, 'something is stored');
    assert.doesNotMatch(stored, /eyJ|tsr_/);
  });

  test('trusted device and PIN, then sign-in with each', async () => {
    await page.getByTestId('register-device').click();
    await statusHas(page, 'trusted device');
    await page.getByTestId('pin-value').fill('4826');
    await page.getByTestId('set-pin').click();
    await statusHas(page, 'PIN set');
    await shot(page, 'device-and-pin-set');

    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await page.getByTestId('device-sign-in').click();
    await signedIn(page);
    assert.equal(await method(page), 'TRUSTED_DEVICE');
    await shot(page, 'signed-in-device');

    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await page.getByTestId('pin-sign-in-value').fill('4826');
    await page.getByTestId('pin-sign-in').click();
    await signedIn(page);
    assert.equal(await method(page), 'PIN');
    await shot(page, 'signed-in-pin');
  });

  test('passkey registration and sign-in with the virtual authenticator (user verification on)', async () => {
    await page.getByTestId('register-passkey').click();
    await statusHas(page, 'Passkey added');
    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await page.getByTestId('passkey-sign-in').click();
    await signedIn(page);
    assert.equal(await method(page), 'BIOMETRIC');
    await shot(page, 'signed-in-passkey');
  });

  test('two tabs renew at once without signing out (no reuse detection)', async () => {
    const second = await context.newPage();
    await second.goto(`${origin}/demo/`);
    await signedIn(second);
    // The access token lives 30 s and is renewed when less than half remains: both tabs poll
    // every 2 s, so both try to renew in the same moments. Wait (bounded) for two renewals.
    const renewed = async (p: Page) => Number(await p.getByTestId('renewals').textContent());
    for (let i = 0; i < 60 && (await renewed(page)) + (await renewed(second)) < 2; i++)
      await page.waitForTimeout(1000);
    assert.ok((await renewed(page)) + (await renewed(second)) >= 2, 'the tokens were renewed');
    await shot(page, 'renewed-tab-1');
    await shot(second, 'renewed-tab-2');
    const reuse = await server.storage.db.kysely
      .selectFrom('audit_events')
      .select('id')
      .where('type', '=', 'refresh.reuse_detected')
      .execute();
    assert.equal(reuse.length, 0, 'no refresh token was used twice');
    for (const p of [page, second]) {
      await p.getByTestId('verify').click();
      await statusHas(p, 'the access token is valid');
    }
    await second.close();
  });

  test('sign-out revokes the session and clears storage in every tab', async () => {
    const second = await context.newPage();
    await second.goto(`${origin}/demo/`);
    await signedIn(second);
    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await signedOut(second);
    const stored = await page.evaluate(() => Object.values(localStorage).join('\n'));
    assert.doesNotMatch(stored, /eyJ|tsr_/);
    const sessions = await server.storage.db.kysely
      .selectFrom('sessions')
      .select(['revoked_at'])
      .where('revoked_at', 'is', null)
      .execute();
    assert.equal(sessions.length, 0, 'every session of the demo user is revoked');
    await shot(page, 'signed-out');
    await second.close();
  });
});
