import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import {
  addVirtualAuthenticator,
  CHROMIUM,
  launchChromium,
} from '../../../packages/server/test/helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../../../packages/server/test/helpers/harness.js';
import { createApi } from '../../express-api/src/api.js';

// End-to-end in a real browser: Debian's chromium driven by playwright-core (never a download).
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
const missing = !existsSync(CHROMIUM);
if (missing && !required)
  console.log(`# browser tests skipped: ${CHROMIUM} not found (apt-get install -y chromium)`);

const ARTEFACTS = join(process.cwd(), 'test-artifacts', 'e2e');
const TTL = 30;

/** What demo.js puts on `globalThis.tesseraDemo`: the page's client (a slice of `TesseraClient`). */
interface DemoWindow {
  tesseraDemo: {
    client: {
      getAccessToken(): Promise<string | null>;
      isSignedIn(): Promise<boolean>;
      onAuthStateChange(listener: (event: { type: string }) => void): () => void;
    };
  };
  /** Auth events seen since the test started listening. */
  e2eEvents?: string[];
  /** Exposed by the test: "this tab is about to ask for the token". */
  e2eStarted?: () => Promise<void>;
}

/** The slice of the page client's device methods the test calls. */
interface TrustedDevices {
  devices: {
    register(name?: string): Promise<{ deviceId: string }>;
    list(): Promise<Array<{ deviceId: string }>>;
  };
}

interface AccessClaims {
  sid: string;
  iat: number;
  exp: number;
}

/** The payload of a JWT, decoded (not verified: the server's tests verify). */
const claimsOf = (jwt: string): AccessClaims =>
  JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as AccessClaims;

describe('demo app in headless Chromium', {
  skip: missing && !required ? `${CHROMIUM} not found` : false,
}, () => {
  let server: TestServer;
  let api: Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  let apiKeyId: string;
  let step = 0;
  let authenticatorId: string;
  let clearPasskeys: () => Promise<void>;
  let apiPort: number;

  const shot = async (p: Page, name: string) => {
    await p.screenshot({
      path: join(ARTEFACTS, `${String(++step).padStart(2, '0')}-${name}.png`),
      fullPage: true,
    });
  };
  /**
   * One state at desktop and phone widths (1280, 390, 360 px): a screenshot of each, and no
   * horizontal scrolling at 360 px, the narrowest phone we support.
   */
  const shotWidths = async (p: Page, name: string) => {
    for (const width of [1280, 390, 360]) {
      await p.setViewportSize({ width, height: 800 });
      await p.screenshot({ path: join(ARTEFACTS, `${name}-${width}.png`), fullPage: true });
      const { scrollWidth, innerWidth } = await p.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        innerWidth: window.innerWidth,
      }));
      assert.ok(
        scrollWidth <= innerWidth,
        `${name} at ${width} px: ${scrollWidth} px wide, more than the window`,
      );
    }
    await p.setViewportSize({ width: 1280, height: 800 });
  };
  const method = (p: Page) => p.getByTestId('claim-method').textContent();
  const signedIn = (p: Page) => p.getByTestId('signed-in').waitFor({ state: 'visible', timeout: 15_000 });
  const signedOut = (p: Page) => p.getByTestId('signed-out').waitFor({ state: 'visible', timeout: 15_000 });
  const statusHas = (p: Page, text: string | RegExp) =>
    p.getByTestId('status').filter({ hasText: text }).waitFor({ timeout: 15_000 });
  const renewals = async (p: Page) => Number(await p.getByTestId('renewals').textContent());
  /** The sign-in element's controls (in its shadow root). */
  const ui = (p: Page, selector: string) => p.locator(`tessera-sign-in ${selector}`);
  const uiStep = (p: Page, step: string) =>
    p.waitForFunction(
      (s) => (document.querySelector('tessera-sign-in') as unknown as { step: string }).step === s,
      step,
      {
        timeout: 15_000,
      },
    );
  /** Signs in by code through the element (the code is sent as soon as it is complete). */
  const signInByCode = async (p: Page, identifier: string, to = identifier.toLowerCase()) => {
    await uiStep(p, 'identifier');
    await ui(p, '#identifier').fill(identifier);
    await ui(p, 'button[type=submit]').click();
    await statusHas(p, 'Code sent');
    await ui(p, '#code').fill(server.lastCode(to));
  };
  /** The page client's access token (renewed first if due, as getAccessToken() does). */
  const accessToken = (p: Page) =>
    p.evaluate(() => (globalThis as unknown as DemoWindow).tesseraDemo.client.getAccessToken());
  /** The SDK's storage entries (packages/client/src/session/record.ts: storageKeys). */
  const sessionEntry = () => `tessera.${apiKeyId}.session`;
  const deviceEntry = () => `tessera.${apiKeyId}.device`;
  const stored = (p: Page, name: string) => p.evaluate((key) => localStorage.getItem(key), name);
  /** Every entry of the SDK's IndexedDB key store, described (the keys themselves cannot be read). */
  const keyStore = (p: Page) =>
    p.evaluate(
      () =>
        new Promise<Record<string, string>>((resolve, reject) => {
          const opened = indexedDB.open('tessera-keys');
          opened.onerror = () => reject(opened.error);
          opened.onsuccess = () => {
            const found: Record<string, string> = {};
            const cursor = opened.result.transaction('keys').objectStore('keys').openCursor();
            cursor.onerror = () => reject(cursor.error);
            cursor.onsuccess = () => {
              const entry = cursor.result;
              if (!entry) {
                opened.result.close();
                resolve(found);
                return;
              }
              const value = entry.value as CryptoKey | CryptoKeyPair | string;
              const key = typeof value === 'object' && 'privateKey' in value ? value.privateKey : value;
              found[String(entry.key)] =
                typeof key === 'object' && 'algorithm' in key
                  ? `${key.algorithm.name} ${key.type} ${key.extractable ? 'extractable' : 'non-extractable'}`
                  : `not a key: ${typeof key}`;
              entry.continue();
            };
          };
        }),
    );

  before(async () => {
    // This run's screenshots only: a stale one of an earlier run must not pass for a step of this one.
    rmSync(ARTEFACTS, { recursive: true, force: true });
    mkdirSync(ARTEFACTS, { recursive: true });
    apiPort = await freePort();
    server = await startServer('sqlite', {
      env: {
        TESSERA_ACCESS_TOKEN_TTL: String(TTL),
        // No grace window for a refresh token presented twice: a double renewal would revoke the
        // session, so the tabs must really renew one at a time (the SDK does not rely on grace).
        TESSERA_REFRESH_GRACE: '0',
        // The passkey step signs the same user in by OTP again, seconds after the first code.
        TESSERA_OTP_RESEND_INTERVAL: '0',
        TESSERA_DEMO_API_URL: `http://127.0.0.1:${apiPort}`,
      },
    });
    // WebAuthn needs a domain, not an IP: the page is opened on localhost.
    origin = server.url.replace('127.0.0.1', 'localhost');
    await server.ctx.projects.create({ name: 'demo', origins: [origin], rpId: 'localhost' });
    apiKeyId = (await server.ctx.projects.findByName('demo'))!.api_key_id;
    const app = createApi({ issuer: server.url, apiKeyId, allowedOrigin: origin });
    api = await new Promise<Server>((resolve) => {
      const s = app.listen(apiPort, '127.0.0.1', () => resolve(s));
    });
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    // Automation resolves a conditional (autofill) request at once with a stored passkey, as if
    // the user had picked it: the passkey test relies on that.
    authenticatorId = await addVirtualAuthenticator(cdp);
    clearPasskeys = () => cdp.send('WebAuthn.clearCredentials', { authenticatorId }).then(() => {});
    await page.goto(`${origin}/demo/`);
  });

  after(async () => {
    await browser?.close();
    api?.close();
    await server?.close();
  });

  test('signed out: the sign-in form fits a phone; PIN inputs are masked', async (t) => {
    t.diagnostic(`screenshots in ${ARTEFACTS}`);
    await signedOut(page);
    await shotWidths(page, 'state-signed-out');
    for (const id of ['pin-value']) {
      const input = page.getByTestId(id);
      assert.equal(await input.getAttribute('type'), 'password', `${id} is masked`);
      assert.equal(await input.getAttribute('inputmode'), 'numeric');
      assert.equal(await input.getAttribute('autocomplete'), 'off');
    }
    assert.equal(await ui(page, '#identifier').getAttribute('autocomplete'), 'username webauthn');
    // At 360 px the element's "Send code" button keeps clear of the labels around it (the old form's
    // button touched the "Code" label).
    await page.setViewportSize({ width: 360, height: 800 });
    const boxes = await page.evaluate(() => {
      const root = document.querySelector('tessera-sign-in')!.shadowRoot!;
      return Array.from(root.querySelectorAll('label, button[type=submit]')).map((e) =>
        e.getBoundingClientRect().toJSON(),
      );
    });
    await page.setViewportSize({ width: 1280, height: 800 });
    const overlap = (a: DOMRect, b: DOMRect) =>
      a.left < b.right && b.left < a.right && a.top < b.bottom + 4 && b.top < a.bottom + 4;
    for (const [i, a] of boxes.entries())
      for (const b of boxes.slice(i + 1)) assert.equal(overlap(a, b), false, 'controls keep 4 px apart');
  });

  test('OTP sign-in with the code from the development outbox', async () => {
    await uiStep(page, 'identifier');
    await ui(page, '#identifier').fill('Browser@Example.com');
    await ui(page, 'button[type=submit]').click();
    await statusHas(page, 'Code sent');
    assert.equal(await ui(page, '#code').getAttribute('autocomplete'), 'one-time-code');
    await shot(page, 'otp-code');
    await ui(page, '#code').fill(server.lastCode('browser@example.com'));
    await signedIn(page);
    assert.equal(await method(page), 'OTP');
    assert.equal(await page.getByTestId('claim-identifier').textContent(), 'browser@example.com');
    await shot(page, 'signed-in-otp');
  });

  test('signed in: the account from userinfo, token claims decoded and marked not verified, nothing set up yet', async () => {
    await page
      .getByTestId('user-identifier')
      .filter({ hasText: 'browser@example.com' })
      .waitFor({ timeout: 15_000 });
    await page
      .getByTestId('access-claims')
      .filter({ hasText: '"type": "access_token"' })
      .waitFor({ timeout: 15_000 });
    assert.match((await page.getByTestId('id-claims').textContent()) ?? '', /"type": "id_token"/);
    assert.match((await page.getByTestId('claims-not-verified').textContent()) ?? '', /not verified/);
    assert.equal(await page.getByTestId('device-state').textContent(), 'not trusted');
    assert.equal(await page.getByTestId('pin-state').textContent(), 'not set');
    assert.equal(await page.getByTestId('passkey-state').textContent(), 'none');
    await shotWidths(page, 'state-signed-in');
  });

  test('/verify and the sample backend accept the token', async () => {
    await page.getByTestId('verify').click();
    await statusHas(page, 'the access token is valid');
    await page.getByTestId('call-api').click();
    await statusHas(page, /Hello, browser@example.com/);
    await shot(page, 'verify-and-backend');
  });

  test('the sample backend down, or refusing the page’s origin: the page says which', async () => {
    const sampleApi = `http://127.0.0.1:${apiPort}/**`;
    // Down: every connection refused.
    await page.route(sampleApi, (route) => route.abort('connectionrefused'));
    await page.getByTestId('call-api').click();
    await statusHas(page, /The sample backend is not running at http:\/\/127\.0\.0\.1:\d+/);
    await page.unroute(sampleApi);
    // Up, but its CORS answers allow another origin: the browser reports both cases with one error.
    await page.route(sampleApi, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        headers: { 'access-control-allow-origin': 'http://elsewhere.example' },
        body: '{"message":"hidden"}',
      }),
    );
    await page.getByTestId('call-api').click();
    await statusHas(
      page,
      `answered but refused this page's origin (CORS): start it with ALLOWED_ORIGIN=${origin}`,
    );
    await page.unroute(sampleApi);
    await page.getByTestId('call-api').click();
    await statusHas(page, /Hello, browser@example.com/);
  });

  test('the server’s root leads to the demo; the page loads with no console error (its own icon)', async () => {
    const root = await fetch(`${origin}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/demo/');
    const fresh = await context.newPage();
    const problems: string[] = [];
    fresh.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    fresh.on('pageerror', (error) => problems.push(error.message));
    await fresh.goto(`${origin}/`);
    assert.equal(new URL(fresh.url()).pathname, '/demo/');
    await signedIn(fresh);
    assert.equal((await fetch(`${origin}/demo/favicon.svg`)).headers.get('content-type'), 'image/svg+xml');
    assert.deepEqual(problems, []);
    await fresh.close();
  });

  test('the stored bundle is encrypted: no token text in localStorage', async () => {
    const session = await stored(page, sessionEntry());
    assert.match(session ?? '', /^tessera-enc:v1:/, 'the session is stored, encrypted');
    const everything = await page.evaluate(() => Object.values(localStorage).join('\n'));
    // Token shapes, not their first characters: random base64url ciphertext holds `eyJ` or
    // `tsr_` by chance (about one run in 250 for `eyJ` alone), but not a JWT's `eyJ….eyJ` nor a
    // refresh token's `tsr_` + 22-character id + `.`.
    assert.doesNotMatch(everything, /eyJ[\w-]*\.eyJ|tsr_[\w-]{22}\./);
    // The session is usable all the same: the SDK decrypts it with the key kept in IndexedDB.
    const token = (await accessToken(page)) ?? '';
    assert.match(token, /^eyJ/);
    assert.equal(everything.includes(token.split('.')[1]!), false, 'the token payload is not stored as is');
    assert.deepEqual(await keyStore(page), { 'tessera.storage-key': 'AES-GCM secret non-extractable' });
    await page.getByTestId('stored').filter({ hasText: sessionEntry() }).waitFor({ timeout: 5000 });
    await shot(page, 'encrypted-storage');
  });

  test('trusted device and PIN, then sign-in with each', async () => {
    await page.getByTestId('register-device').click();
    await statusHas(page, 'trusted device');
    await page
      .getByTestId('device-state')
      .filter({ hasText: /^trusted$/ })
      .waitFor({ timeout: 15_000 });
    assert.equal(await page.getByTestId('register-device').isVisible(), false, 'no second "Trust" offered');
    // Registering again (another click, a second tab) finds this browser's device: no duplicate.
    const ids = await page.evaluate(async () => {
      const client = (globalThis as unknown as { tesseraDemo: { client: TrustedDevices } }).tesseraDemo
        .client;
      const again = await client.devices.register('Demo browser');
      return { again: again.deviceId, listed: (await client.devices.list()).map((d) => d.deviceId) };
    });
    assert.deepEqual(ids.listed, [ids.again], 'one device for this browser');
    await page.reload();
    await signedIn(page);
    await page
      .getByTestId('device-state')
      .filter({ hasText: /^trusted$/ })
      .waitFor({ timeout: 15_000 });
    assert.equal(await page.getByTestId('device').count(), 1);
    await page.getByTestId('pin-value').fill('4826');
    await page.getByTestId('set-pin').click();
    await statusHas(page, 'PIN set');
    await page.getByTestId('pin-state').filter({ hasText: /^set$/ }).waitFor({ timeout: 15_000 });
    await shot(page, 'device-and-pin-set');

    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await ui(page, 'button.device').click();
    await signedIn(page);
    assert.equal(await method(page), 'TRUSTED_DEVICE');
    await shot(page, 'signed-in-device');

    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await ui(page, 'button.use-pin').click();
    await ui(page, '#pin').fill('4826');
    await ui(page, '#pin').press('Enter');
    await signedIn(page);
    assert.equal(await method(page), 'PIN');
    await shot(page, 'signed-in-pin');
  });

  test('passkey registration and sign-in with the virtual authenticator (user verification on)', async () => {
    // Signed in by PIN: adding a passkey needs a recent OTP or passkey sign-in, and the page says so.
    await page.getByTestId('register-passkey').click();
    await statusHas(page, /sign in again with a one-time code or a passkey/);
    await shot(page, 'passkey-needs-recent-sign-in');
    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await uiStep(page, 'device');
    await ui(page, 'button.other-way').click();
    await signInByCode(page, 'browser@example.com');
    await signedIn(page);
    await page.getByTestId('register-passkey').click();
    await statusHas(page, 'Passkey added');
    await page.getByTestId('passkey-state').filter({ hasText: /^1$/ }).waitFor({ timeout: 15_000 });
    assert.equal(await page.getByTestId('passkey').count(), 1);
    await shot(page, 'passkey-registered');
    await shotWidths(page, 'state-all-set-up');
    // The modal prompt, with the autofill offer off.
    await page.getByTestId('autofill-toggle').uncheck();
    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await uiStep(page, 'device');
    await ui(page, 'button.other-way').click();
    await ui(page, 'button.passkey').click();
    await signedIn(page);
    assert.equal(await method(page), 'BIOMETRIC');
    await statusHas(page, 'Signed in with a passkey.');
    // The autofill (conditional UI): signed out, the page offers the passkey in the e-mail field's
    // autofill, and the virtual authenticator picks it as a user would.
    await page.getByTestId('autofill-toggle').check();
    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await uiStep(page, 'device');
    await ui(page, 'button.other-way').click();
    await signedIn(page);
    assert.equal(await method(page), 'BIOMETRIC');
    // Off from now on: the next tests sign out and in other ways.
    await page.getByTestId('autofill-toggle').uncheck();
    await shot(page, 'signed-in-passkey');
  });

  test('the access token is renewed before it expires (30 s lifetime)', async () => {
    // The page asks for the token every 2 s; the SDK renews it once less than half its life is left.
    const first = (await accessToken(page))!;
    const before = await renewals(page);
    for (let i = 0; i < 40 && (await renewals(page)) === before; i++) await page.waitForTimeout(1000);
    assert.ok((await renewals(page)) > before, 'the page saw a renewal');
    const next = (await accessToken(page))!;
    assert.notEqual(next, first, 'a new access token');
    assert.equal(claimsOf(next).sid, claimsOf(first).sid, 'of the same session');
    assert.ok(claimsOf(next).iat < claimsOf(first).exp, 'renewed before the old one expired');
    await page.getByTestId('verify').click();
    await statusHas(page, 'the access token is valid');
    await shot(page, 'renewed-automatically');
  });

  test('two tabs renew at the same moment: one refresh, the same tokens, nobody signed out', async () => {
    const second = await context.newPage();
    await second.goto(`${origin}/demo/`);
    await signedIn(second);
    const tabs = [page, second];
    // Only the test asks for tokens from now on.
    for (const p of tabs) await p.getByTestId('keep-warm').uncheck();
    // The token now (renewed first if already due), and when its renewal falls due: less than
    // min(60 s, half its lifetime) left. Aim 3 s into that window, well before it expires.
    const current = (await accessToken(page))!;
    const { iat, exp } = claimsOf(current);
    const dueAt = (exp - Math.min(60, (exp - iat) / 2) + 3) * 1000;

    for (const p of tabs) {
      await p.evaluate(() => {
        const w = globalThis as unknown as DemoWindow;
        w.e2eEvents = [];
        w.tesseraDemo.client.onAuthStateChange((event) => w.e2eEvents?.push(event.type));
      });
    }
    // Every request for a token the browser sends; the first is held until both tabs have asked,
    // so the two getAccessToken() calls overlap for certain, whichever tab wins the lock.
    const posts: Request[] = [];
    const onRequest = (request: Request) => {
      if (new URL(request.url()).pathname === '/oauth/token') posts.push(request);
    };
    let asked = 0;
    let bothAsked = () => {};
    const bothHaveAsked = new Promise<void>((resolve) => {
      bothAsked = resolve;
    });
    for (const p of tabs) {
      await p.exposeFunction('e2eStarted', () => {
        if (++asked === tabs.length) bothAsked();
      });
    }
    context.on('request', onRequest);
    await context.route('**/oauth/token', async (route) => {
      await bothHaveAsked;
      await route.continue();
    });

    // Both tabs call getAccessToken() at the same wall-clock moment, when the token is due.
    const tokens = await Promise.all(
      tabs.map((p) =>
        p.evaluate(async (at) => {
          const w = globalThis as unknown as DemoWindow;
          await new Promise((resolve) => setTimeout(resolve, at - Date.now()));
          void w.e2eStarted?.();
          return w.tesseraDemo.client.getAccessToken();
        }, dueAt),
      ),
    );
    context.off('request', onRequest);
    await context.unroute('**/oauth/token');

    assert.deepEqual(
      posts.map((r) => r.method()),
      ['POST'],
      'exactly one POST /oauth/token: one tab renewed, the other took its tokens',
    );
    assert.equal((await posts[0]!.response())?.status(), 200);
    assert.match(tokens[0] ?? '', /^eyJ/);
    assert.equal(tokens[1], tokens[0], 'both tabs hold the same access token');
    assert.notEqual(tokens[0], current, 'and it is a renewed one');
    for (const p of tabs) {
      assert.deepEqual(
        await p.evaluate(() => (globalThis as unknown as DemoWindow).e2eEvents),
        ['initialSession', 'refreshed'],
        'each tab saw its initial session, one renewal and no sign-out',
      );
      assert.equal(
        await p.evaluate(() => (globalThis as unknown as DemoWindow).tesseraDemo.client.isSignedIn()),
        true,
      );
      assert.ok(await p.getByTestId('signed-in').isVisible(), 'the tab shows the signed-in state');
    }
    const reuse = await server.storage.db.kysely
      .selectFrom('audit_events')
      .select('id')
      .where('type', '=', 'refresh.reuse_detected')
      .execute();
    assert.equal(reuse.length, 0, 'no refresh token was used twice');
    for (const p of tabs) {
      await p.getByTestId('verify').click();
      await statusHas(p, 'the access token is valid');
    }
    await shot(page, 'renewed-together-tab-1');
    await shot(second, 'renewed-together-tab-2');
    await page.getByTestId('keep-warm').check();
    await second.close();
  });

  test('"Sign out other devices" keeps this session; a passkey can be removed from the list', async () => {
    await page.getByTestId('sign-out-others').click();
    await statusHas(page, 'Signed out on the other devices');
    assert.ok(await page.getByTestId('signed-in').isVisible());
    await page.getByTestId('verify').click();
    await statusHas(page, 'the access token is valid');
    await page.getByTestId('passkey-remove').click();
    await statusHas(page, 'Passkey Demo passkey removed');
    // Gone from the authenticator as well, as when a user deletes it there.
    await clearPasskeys();
    // The passkey's session (this one: signed in by passkey) ended with it.
    await signedOut(page);
    await uiStep(page, 'device');
    await ui(page, 'button.device').click();
    await signedIn(page);
    await page
      .getByTestId('passkey-state')
      .filter({ hasText: /^none$/ })
      .waitFor({ timeout: 15_000 });
  });

  test('sign-out revokes the session and clears storage in every tab', async () => {
    const second = await context.newPage();
    await second.goto(`${origin}/demo/`);
    await signedIn(second);
    assert.match(
      (await stored(page, sessionEntry())) ?? '',
      /^tessera-enc:v1:/,
      'signed in: a session is stored',
    );
    const keysBefore = await keyStore(page);
    assert.deepEqual(keysBefore, {
      'tessera.storage-key': 'AES-GCM secret non-extractable',
      [`tessera.${apiKeyId}.device-key`]: 'ECDSA private non-extractable',
    });
    await shot(page, 'before-sign-out');

    await page.getByTestId('sign-out').click();
    await signedOut(page);
    await signedOut(second);
    // logout() removes every token, here and in the other tab: from storage and from memory.
    assert.equal(await stored(page, sessionEntry()), null, 'the session entry is gone');
    for (const p of [page, second]) assert.equal(await accessToken(p), null, 'no token in any tab');
    // It keeps the trusted device (its id, and its key pair in IndexedDB) and the storage key;
    // IndexedDB holds keys only, never a token.
    assert.match((await stored(page, deviceEntry())) ?? '', /^tessera-enc:v1:/, 'the device id is kept');
    assert.deepEqual(await keyStore(page), keysBefore);
    const sessions = await server.storage.db.kysely
      .selectFrom('sessions')
      .select(['revoked_at'])
      .where('revoked_at', 'is', null)
      .execute();
    assert.equal(sessions.length, 0, 'every session of the demo user is revoked');
    await second.close();
    // A reload starts from storage alone: still signed out, the device still offered.
    await page.reload();
    await signedOut(page);
    await ui(page, 'button.device').waitFor({ state: 'visible', timeout: 5000 });
    await page.getByTestId('stored').filter({ hasText: deviceEntry() }).waitFor({ timeout: 5000 });
    assert.equal(await page.getByTestId('stored').filter({ hasText: sessionEntry() }).count(), 0);
    await shot(page, 'signed-out');
    await shotWidths(page, 'state-signed-out-device-trusted');
  });

  test('opened at 127.0.0.1: a passkey sign-in says to use localhost', async () => {
    const ip = await context.newPage();
    await ip.goto(`${server.url}/demo/`);
    await signedOut(ip);
    await ip.getByTestId('autofill-toggle').uncheck();
    await ui(ip, 'button.passkey').click();
    const port = new URL(server.url).port;
    await statusHas(ip, `open this page at http://localhost:${port} instead`);
    assert.match((await ip.getByTestId('status').textContent()) ?? '', /webauthn_origin_mismatch/);
    await shotWidths(ip, 'state-passkey-on-ip-address');
    await ip.close();
  });
});
