// The hosted sign-in pages (issue 32) in Chromium with every sign-in method of <tessera-sign-in>,
// not only the code: a first authorization by code that takes the offers (trust this device, a
// PIN, a passkey on a virtual authenticator), then new authorizations with `prompt=login` in the
// same browser by the trusted device, the PIN (the project requiring it), the passkey's button and
// its autofill; and a run with every offer skipped. Each ends at the client's loopback redirect
// with a code whose ID token (verified against the JWKS) carries the method's RFC 8176 `amr` and
// a fresh `auth_time`. axe-core on every step; screenshots test-artifacts/oidc/hosted-methods-*.png.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLocalJWKSet, type JWTPayload, jwtVerify } from 'jose';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';
import { authorizeUrl, exchangeCode, pkce, registerClient } from '../../packages/server/test/helpers/oidc.js';
import {
  ARTEFACTS,
  addVirtualAuthenticator,
  axeViolations,
  bundleHostedAssets,
  launchChromium,
  outboxCode,
  skipBrowser,
} from './browser.js';

/** A control inside the element's shadow root (Playwright's CSS pierces it). */
const inElement = (page: Page, selector: string) => page.locator(`tessera-sign-in ${selector}`);

/** Waits until the element shows `step`. */
const waitForStep = (page: Page, step: string) =>
  page.waitForFunction(
    (s) => (document.querySelector('tessera-sign-in') as unknown as { step?: string } | null)?.step === s,
    step,
    { timeout: 15_000 },
  );

describe('hosted pages: code, trusted device, PIN, passkey (button and autofill), offers skipped (issue 32)', {
  skip: skipBrowser,
}, () => {
  let server: TestServer;
  let browser: Browser;
  let rp: Server;
  let clientId: string;
  /** The client's loopback redirect URI (any port, RFC 8252), answered by `rp`. */
  let REDIRECT: string;
  /** The issuer opened as `localhost`: WebAuthn needs a domain, not an IP. */
  let ISSUER: string;
  let page: Page;
  let authenticator: { cdp: CDPSession; id: string };
  const email = 'methods@example.com';
  const durations: Record<string, number> = {};

  before(async () => {
    bundleHostedAssets();
    server = await startServer('sqlite', { env: RELAXED_LIMITS });
    ISSUER = server.url.replace('127.0.0.1', 'localhost');
    // The page's origin is the project's, and its relying-party id `localhost`.
    await server.ctx.projects.update(server.project.api_key_id, {
      origins: ['http://app.test', ISSUER],
      rpId: 'localhost',
    });
    rp = createServer((_request, response) => response.end('<!doctype html><title>RP</title><p>back</p>'));
    await new Promise<void>((resolve) => rp.listen(0, '127.0.0.1', resolve));
    REDIRECT = `http://127.0.0.1:${(rp.address() as AddressInfo).port}/callback`;
    ({ client_id: clientId } = await registerClient(server, {
      client_name: 'Acme notes',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    }));
    browser = await launchChromium();
    ({ page, authenticator } = await open());
  });
  after(async () => {
    console.log(`# durations (ms): ${JSON.stringify(durations)}`);
    await browser?.close();
    rp?.close();
    await server?.close();
  });

  /** A context (axe needs the CSP bypassed) whose page has a virtual platform authenticator. */
  async function open() {
    const ctx = await browser.newContext({
      bypassCSP: true,
      locale: 'en-US',
      viewport: { width: 1280, height: 900 },
    });
    const p = await ctx.newPage();
    p.on('pageerror', (error) => assert.fail(`page error: ${error.message}`));
    const cdp = await ctx.newCDPSession(p);
    // The branding read (which says whether the project requires a PIN) is cacheable for 5 min.
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const authenticatorId = await addVirtualAuthenticator(cdp);
    return { context: ctx, page: p, authenticator: { cdp, id: authenticatorId } };
  }

  const credentials = async () =>
    (await authenticator.cdp.send('WebAuthn.getCredentials', { authenticatorId: authenticator.id }))
      .credentials;

  /** Starts an authorization; returns the PKCE verifier and the nonce. */
  async function authorize(p: Page, extra: Record<string, string> = {}) {
    const { verifier, challenge } = pkce();
    const nonce = `n-${Math.random().toString(36).slice(2)}`;
    const url = authorizeUrl({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      scope: 'openid email offline_access',
      state: 'st',
      nonce,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    await p.goto(`${ISSUER}${url}`);
    await p.waitForURL(/\/oauth\/sign-in\?/);
    return { verifier, nonce };
  }

  /** axe-core finds nothing at this step; a screenshot of it. */
  async function check(p: Page, name: string) {
    await p.waitForTimeout(150); // the step's entrance animation
    assert.deepEqual(await axeViolations(p), [], name);
    await p.screenshot({ path: join(ARTEFACTS, `hosted-methods-${name}.png`), fullPage: true });
  }

  /** Past any offers (“Not now”, “Continue”) to the redirect; the code's tokens, the ID token verified. */
  async function finish(p: Page, started: { verifier: string; nonce: string }, who = email) {
    const done = /^http:\/\/127\.0\.0\.1:\d+\/callback\?/;
    for (let i = 0; i < 6 && !done.test(p.url()); i++) {
      const skip = p
        .locator('tessera-sign-in')
        .getByRole('button', { name: /^(Not now|Continue)$/ })
        .first();
      const left = await Promise.race([
        p
          .waitForURL((url) => done.test(url.href) || url.pathname === '/oauth/consent', { timeout: 15_000 })
          .then(() => true),
        skip.waitFor({ timeout: 15_000 }).then(() => false),
      ]).catch(() => false);
      if (left) break;
      await skip.click().catch(() => {});
    }
    // The client is a third party: the first authorization of each user asks for consent.
    if (/\/oauth\/consent\?/.test(p.url())) {
      await check(p, `consent-${who.split('@')[0]}`);
      await p.getByRole('button', { name: 'Allow' }).click();
    }
    await p.waitForURL(done);
    const answer = new URL(p.url()).searchParams;
    assert.equal(answer.get('state'), 'st');
    assert.equal(answer.get('iss'), server.url);
    const code = answer.get('code');
    assert.ok(code, p.url());
    const tokens = await exchangeCode(server, clientId, REDIRECT, code, started.verifier);
    assert.equal(tokens.status, 200, tokens.text);
    const jwks = createLocalJWKSet((await server.request('GET', '/.well-known/jwks.json')).body);
    const { payload } = await jwtVerify(tokens.body.id_token, jwks, {
      issuer: server.url,
      audience: clientId,
    });
    assert.equal(payload.nonce, started.nonce);
    assert.ok(payload.sub, 'a subject');
    assert.ok(tokens.body.refresh_token, 'offline_access: a refresh token');
    return payload as JWTPayload & { amr: string[]; auth_time: number };
  }

  /** `auth_time` is a number of seconds no earlier than `since` (ms) and no later than now. */
  function assertFresh(payload: { auth_time: number }, since: number) {
    assert.equal(typeof payload.auth_time, 'number');
    assert.ok(
      payload.auth_time >= Math.floor(since / 1000),
      `auth_time ${payload.auth_time} before ${since}`,
    );
    assert.ok(payload.auth_time <= Math.ceil(Date.now() / 1000));
  }

  let firstAuthTime = 0;

  test('first authorization: code, then trust this device, a PIN and a passkey; amr otp', {
    timeout: 120_000,
  }, async () => {
    const t0 = Date.now();
    const started = await authorize(page);
    await waitForStep(page, 'identifier');
    await check(page, 'identifier');
    await inElement(page, '#identifier').fill(email);
    await inElement(page, 'button[type=submit]').click();
    await waitForStep(page, 'code');
    await check(page, 'code');
    await inElement(page, '#code').fill(await outboxCode(server.url, email));
    await waitForStep(page, 'offers');
    await check(page, 'offers');
    await inElement(page, 'button.offer-trust').click();
    await inElement(page, '[data-offer=trust] [part~=status]').waitFor();
    await inElement(page, 'button.offer-pin').click();
    await inElement(page, '#new-pin').fill('4829');
    await inElement(page, '#confirm-pin').fill('4829');
    await inElement(page, '[data-offer=pin] button[type=submit]').click();
    await inElement(page, '[data-offer=pin] [part~=status]').waitFor();
    await inElement(page, 'button.offer-passkey').click();
    await inElement(page, '[data-offer=passkey] [part~=status]').waitFor();
    assert.equal((await credentials()).length, 1, 'the passkey is in the virtual authenticator');
    await check(page, 'offers-taken');
    await inElement(page, 'button.continue').click();
    const payload = await finish(page, started);
    assert.deepEqual(payload.amr, ['otp']);
    assertFresh(payload, t0);
    firstAuthTime = payload.auth_time;
    durations.code = Date.now() - t0;
  });

  test('prompt=login: the trusted device signs in with one tap; amr swk', { timeout: 60_000 }, async () => {
    const t0 = Date.now();
    const started = await authorize(page, { prompt: 'login' });
    await waitForStep(page, 'device');
    await check(page, 'device');
    await inElement(page, 'button.device').click();
    const payload = await finish(page, started);
    assert.deepEqual(payload.amr, ['swk']);
    assertFresh(payload, t0);
    assert.ok(payload.auth_time >= firstAuthTime);
    durations.device = Date.now() - t0;
  });

  test('prompt=login, the project requiring a PIN: the PIN pad, a wrong PIN, the PIN; amr swk pin mfa', {
    timeout: 60_000,
  }, async () => {
    await server.ctx.projects.update(server.project.api_key_id, { deviceRequiresPin: true });
    try {
      const t0 = Date.now();
      const started = await authorize(page, { prompt: 'login' });
      await waitForStep(page, 'pin');
      await check(page, 'pin');
      await page.keyboard.type('0000');
      await page.keyboard.press('Enter');
      await inElement(page, '[part~=error]')
        .filter({ hasText: /Wrong PIN/ })
        .waitFor();
      await check(page, 'pin-wrong');
      await page.keyboard.type('4829');
      await page.keyboard.press('Enter');
      const payload = await finish(page, started);
      assert.deepEqual(payload.amr, ['swk', 'pin', 'mfa']);
      assertFresh(payload, t0);
      durations.pin = Date.now() - t0;
    } finally {
      await server.ctx.projects.update(server.project.api_key_id, { deviceRequiresPin: false });
    }
  });

  test('prompt=login: the passkey button; amr hwk user', { timeout: 60_000 }, async () => {
    const t0 = Date.now();
    // The autofill would answer first with a stored passkey, and a pending autofill request takes
    // one the moment it comes back (racing the click): as on a browser without passkey autofill,
    // it is turned off, and the passkey is taken out until the button.
    const stored = await credentials();
    await authenticator.cdp.send('WebAuthn.clearCredentials', { authenticatorId: authenticator.id });
    const started = await authorize(page, { prompt: 'login' });
    await waitForStep(page, 'device');
    await page.evaluate(() => document.querySelector('tessera-sign-in')!.setAttribute('autofill', 'off'));
    await inElement(page, 'button.other-way').click();
    await waitForStep(page, 'identifier');
    await check(page, 'passkey');
    for (const credential of stored)
      await authenticator.cdp.send('WebAuthn.addCredential', {
        authenticatorId: authenticator.id,
        credential,
      } as never);
    await inElement(page, 'button.passkey').click();
    const payload = await finish(page, started);
    assert.deepEqual(payload.amr, ['hwk', 'user']);
    assertFresh(payload, t0);
    durations.passkeyButton = Date.now() - t0;
  });

  test('prompt=login: the passkey in the identifier field’s autofill; amr hwk user', {
    timeout: 60_000,
  }, async () => {
    const t0 = Date.now();
    const started = await authorize(page, { prompt: 'login' });
    await waitForStep(page, 'device');
    // At the identifier step Chromium's automation answers the autofill's conditional request
    // with the stored passkey, as if the user had picked it.
    await inElement(page, 'button.other-way').click();
    const payload = await finish(page, started);
    assert.deepEqual(payload.amr, ['hwk', 'user']);
    assertFresh(payload, t0);
    durations.passkeyAutofill = Date.now() - t0;
  });

  test('every offer “Not now”: the redirect with a code all the same', { timeout: 60_000 }, async () => {
    const t0 = Date.now();
    const fresh = await open();
    try {
      const p = fresh.page;
      const started = await authorize(p);
      await waitForStep(p, 'identifier');
      // Another user: the outbox's newest code for `email` could be the first test's.
      const who = 'skipper@example.com';
      await inElement(p, '#identifier').fill(who);
      await inElement(p, 'button[type=submit]').click();
      await waitForStep(p, 'code');
      await inElement(p, '#code').fill(await outboxCode(server.url, who));
      await waitForStep(p, 'offers');
      for (const offer of ['trust', 'pin', 'passkey']) await inElement(p, `button.skip-${offer}`).click();
      await check(p, 'offers-skipped');
      const payload = await finish(p, started, who);
      assert.deepEqual(payload.amr, ['otp']);
      assertFresh(payload, t0);
      const { credentials: none } = (await fresh.authenticator.cdp.send('WebAuthn.getCredentials', {
        authenticatorId: fresh.authenticator.id,
      })) as { credentials: unknown[] };
      assert.equal(none.length, 0, 'no passkey was made');
      durations.skipped = Date.now() - t0;
    } finally {
      await fresh.context.close();
    }
  });
});
