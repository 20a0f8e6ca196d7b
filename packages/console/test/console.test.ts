import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type { Page } from 'playwright-core';
import { chromiumSkip } from '../../server/test/helpers/chromium.js';
import { run } from '../../server/test/helpers/cli.js';
import { basicAuth, type TestServer } from '../../server/test/helpers/harness.js';
import {
  deviceSignIn,
  otpUser,
  registerDevice,
  type SignedInUser,
  setPin,
} from '../../server/test/helpers/sign-in-methods.js';
import {
  bundleConsole,
  type ConsoleHarness,
  type ConsolePage,
  checkPage,
  codeFor,
  startConsole,
} from './helpers/console.js';

// The console (issue 33) in headless Chromium against a real Tessera (SQLite, development outbox):
// an operator signs in by code, adds a passkey and signs in with it (CDP virtual authenticator);
// finds a user, signs them out everywhere (their token then fails /verify), removes a device,
// unlocks a PIN, edits claims (the next token carries them), creates an OAuth client (its secret
// shown once), rotates the signing keys and redelivers a webhook. A support member is offered no
// deletion and no secret, and the service refuses both; a viewer of one project sees nothing of
// another. axe-core on every page; screenshots at 1280 and 360 px under test-artifacts/console/.

const OPERATOR = 'ops@example.com';
const SUPPORT = 'sam@example.com';
const VIEWER = 'vic@example.com';

/** `tessera console grant …` against the running server's database, as an operator would. */
async function grant(h: ConsoleHarness, args: string[]): Promise<void> {
  const result = await run(['console', 'grant', ...args], {
    TESSERA_DATABASE_URL: h.server.storage.url,
    TESSERA_MASTER_KEY: h.server.masterKey,
    TESSERA_ISSUER: h.origin,
    TESSERA_LOG_LEVEL: 'silent',
  });
  assert.equal(result.code, 0, `console grant ${args.join(' ')}: ${result.stderr}`);
}

/** Waits until the sign-in element shows `name`. */
async function waitForStep(page: Page, name: string): Promise<void> {
  await page.waitForFunction(
    (s) => (document.querySelector('tessera-sign-in') as unknown as { step?: string } | null)?.step === s,
    name,
    { timeout: 15_000 },
  );
}

/** Signs in by a code from the outbox, by keyboard; lands on a console page. */
async function signInByCode(h: ConsoleHarness, page: Page, identifier: string): Promise<void> {
  await waitForStep(page, 'identifier');
  await page.locator('tessera-sign-in #identifier').fill(identifier);
  await page.keyboard.press('Enter');
  await waitForStep(page, 'code');
  await page.keyboard.type(codeFor(h.server, identifier));
  await page.waitForURL((url) => !url.pathname.startsWith('/console/sign-in'), { timeout: 15_000 });
}

/** Follows a link or opens a path of the console as a click would (no reload). */
async function go(page: Page, path: string): Promise<void> {
  await page.evaluate((to) => {
    history.pushState(null, '', to);
    dispatchEvent(new PopStateEvent('popstate'));
  }, path);
}

/** The page's heading once it shows `text`. */
const heading = (page: Page, text: string | RegExp) => page.getByRole('heading', { level: 1, name: text });

/**
 * At 360 px, the elements of the page whose content is wider than they are (a long word out of its
 * box), described; boxes that scroll or clip on purpose are left out.
 */
async function overflowing(page: Page): Promise<string[]> {
  await page.setViewportSize({ width: 360, height: 900 });
  await page.waitForTimeout(50);
  const found = await page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>('body *'))
      .filter((e) => {
        if (getComputedStyle(e).display === 'inline' || e.clientWidth === 0) return false;
        // Inside (or itself) a box that scrolls or is visually hidden (a stacked table's head).
        for (let a: HTMLElement | null = e; a && a !== document.body; a = a.parentElement)
          if (getComputedStyle(a).overflowX !== 'visible') return false;
        return e.scrollWidth > e.clientWidth + 1;
      })
      .map((e) => `<${e.tagName.toLowerCase()}> ${e.textContent?.trim().slice(0, 60)}`),
  );
  await page.setViewportSize({ width: 1280, height: 900 });
  return found;
}

/** Confirms the open dialog (typing `typed` first when asked). */
async function confirmDialog(page: Page, typed?: string): Promise<void> {
  const dialog = page.locator('dialog[open]');
  await dialog.waitFor();
  if (typed !== undefined) await dialog.locator('input').fill(typed);
  await dialog.locator('button[type=submit]').click();
  await dialog.waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
  await page.locator('dialog[open]').waitFor({ state: 'hidden', timeout: 10_000 });
}

/** The toast that says an action is done. */
const toast = (page: Page, text: string | RegExp) => page.locator('.toasts p', { hasText: text }).waitFor();

const verify = async (server: TestServer, accessToken: string) =>
  (await server.request('POST', '/verify', { body: { oauth_token: { access_token: accessToken } } }))
    .body as {
    success: boolean;
    reason?: string;
  };

describe('the console in a browser', { skip: chromiumSkip() }, () => {
  let h: ConsoleHarness;
  let op: ConsolePage;
  let ada: SignedInUser;
  let base: string;
  const problems: string[] = [];
  const hook: { server?: Server; url: string; hits: number; fail: boolean } = {
    url: '',
    hits: 0,
    fail: true,
  };

  before(async () => {
    bundleConsole();
    h = await startConsole();
    base = `/console/p/${h.server.project.api_key_id}`;
    await grant(h, [OPERATOR, 'operator']);
    // A user of the project with a session, a trusted device and a locked PIN.
    ada = await otpUser(h.server, 'ada@example.com');
    await registerDevice(h.server, ada, 'Ada’s phone');
    await setPin(h.server, ada, '4829');
    const tablet = await registerDevice(h.server, ada, 'Ada’s tablet');
    for (let i = 0; i < 5; i++) {
      const wrong = await deviceSignIn(h.server, tablet, { pin: '1111' });
      assert.notEqual(wrong.status, 200);
    }
    // A webhook receiver that fails until told otherwise.
    hook.server = createServer((request, response) => {
      request.resume();
      hook.hits++;
      response.writeHead(hook.fail ? 500 : 204).end();
    });
    await new Promise<void>((resolve) => hook.server!.listen(0, '127.0.0.1', resolve));
    const address = hook.server.address();
    hook.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  });

  after(async () => {
    hook.server?.close();
    await h?.close();
  });

  test('an operator signs in by code, adds a passkey, then signs in with the passkey', async () => {
    op = await h.open('/console/');
    const { page } = op;
    await page.waitForURL(/\/console\/sign-in/);
    await waitForStep(page, 'identifier');
    await checkPage(page, 'sign-in', problems);
    await signInByCode(h, page, OPERATOR);
    // An operator sees every project (the console's own too): the first one opens.
    await heading(page, /^Overview of /).waitFor();
    // The member's account: add a passkey (the virtual authenticator makes it).
    await page.getByRole('link', { name: 'Your account' }).click();
    await heading(page, 'Your account').waitFor();
    await page.getByLabel('Passkey name').fill('Test laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await toast(page, /passkey is added/);
    await page.getByRole('cell', { name: 'Test laptop', exact: true }).waitFor();
    assert.equal((await op.authenticator.credentials()).length, 1);
    await checkPage(page, 'account', problems);
    // Signed out, then in again with the passkey alone.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in/);
    await waitForStep(page, 'identifier');
    // The button, unless the browser's passkey autofill (the virtual authenticator answers it at
    // once) has signed in already: either way the passkey alone signs in.
    await page
      .locator('tessera-sign-in')
      .getByRole('button', { name: 'Sign in with a passkey' })
      .click({ timeout: 5_000 })
      .catch(() => {});
    await heading(page, /^Overview of /).waitFor({ timeout: 15_000 });
    const [credential] = (await op.authenticator.credentials()) as Array<{ signCount: number }>;
    assert.ok(credential!.signCount >= 2, 'the passkey signed the sign-in');
  });

  test('the overview charts sign-ins per method, failures, codes sent and refresh-token reuse', async () => {
    const { page } = op;
    await go(page, base);
    await heading(page, /Overview of test/).waitFor();
    await page.locator('svg.chart').nth(3).waitFor();
    assert.equal(await page.locator('svg.chart').count(), 4);
    // Ada's five wrong PINs and her code sign-in are in the charts' totals.
    const totals = (await page.locator('.totals').textContent()) ?? '';
    assert.match(totals, /Failed sign-ins\s*5/);
    assert.match(totals, /Codes sent\s*[1-9]/);
    // The send budgets as they stand, from the service's own counters.
    const budgets = page.getByRole('table', { name: 'Code sending budgets' });
    const emailHour = budgets.getByRole('row', { name: /E-mail, hourly/ });
    assert.match((await emailHour.textContent()) ?? '', /[1-9]\d* of 2,000 \(0 %\)/);
    assert.match((await budgets.getByRole('row', { name: /SMS, daily/ }).textContent()) ?? '', /0 of 1,000/);
    await checkPage(page, 'overview', problems);
  });

  test('by keyboard alone: finds a user, signs them out everywhere (their token then fails /verify)', async () => {
    const { page } = op;
    assert.equal((await verify(h.server, ada.bundle.access_token)).success, true);
    const focused = () =>
      page.evaluate(() => {
        const e = document.activeElement as HTMLElement | null;
        return `${e?.tagName.toLowerCase()} ${e?.getAttribute('aria-label') ?? e?.textContent?.trim() ?? ''}`;
      });
    // The navigation: from the page's heading, back to the menu's Users link.
    await page.getByRole('link', { name: 'Users' }).focus();
    await page.keyboard.press('Enter');
    await heading(page, 'Users').waitFor();
    assert.equal(await focused(), 'h1 Users', 'a new page puts the focus on its heading');
    await page.keyboard.press('Tab');
    await page.keyboard.type('ada@');
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'ada@example.com' }).waitFor();
    await checkPage(page, 'users', problems);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'a ada@example.com');
    await page.keyboard.press('Enter');
    await heading(page, 'ada@example.com').waitFor();
    // Each session with the network it was started from (the test's loopback), never the address.
    const sessions = page.getByRole('table', { name: 'Sessions' });
    assert.ok(
      (await sessions.locator('td[data-label="IP network"]').allInnerTexts()).includes('127.0.0.0/24'),
    );
    await checkPage(page, 'user', problems);
    await page.getByRole('button', { name: 'Sign out everywhere' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('dialog[open]').waitFor();
    // The dialog takes the focus; Escape cancels and gives it back to the button.
    await page.keyboard.press('Escape');
    await page
      .locator('dialog[open]')
      .waitFor({ state: 'detached' })
      .catch(() => {});
    assert.equal(await focused(), 'button Sign out everywhere');
    await page.keyboard.press('Enter');
    await page.locator('dialog[open]').waitFor();
    assert.match(await focused(), /^button Sign out everywhere/);
    await page.keyboard.press('Enter');
    await toast(page, /signed out everywhere/);
    const answer = await verify(h.server, ada.bundle.access_token);
    assert.equal(answer.success, false);
    assert.match(answer.reason ?? '', /revoked/);
  });

  test('removes a device and unlocks the PIN', async () => {
    const { page } = op;
    await page.getByRole('button', { name: 'Remove Ada’s phone' }).click();
    await confirmDialog(page);
    await toast(page, /device is removed/);
    const devices = await h.server.request('GET', `/v1/users/${ada.userId}/devices`, {
      headers: { authorization: basicAuth(h.server.project) },
    });
    assert.deepEqual(
      devices.body.devices.map((d: { name: string }) => d.name),
      ['Ada’s tablet'],
    );
    await page.getByText('Locked after too many wrong PINs').waitFor();
    await page.getByRole('button', { name: 'Unlock PIN' }).click();
    await toast(page, /unlocked/);
    await page.getByText('Locked after too many wrong PINs').waitFor({ state: 'detached' });
  });

  test('edits claims with validation; the next token carries them', async () => {
    const { page } = op;
    const editor = page.getByLabel('Claims (JSON object)');
    await editor.fill('{"plan": "gold",}');
    await page.getByRole('button', { name: 'Save claims' }).click();
    await page.getByText(/This is not valid JSON/).waitFor();
    assert.equal(await editor.getAttribute('aria-invalid'), 'true');
    await editor.fill('{"sub": "someone-else"}');
    await page.getByRole('button', { name: 'Save claims' }).click();
    await page.getByText('“sub” is a reserved claim name and cannot be set.').waitFor();
    await editor.fill('{"plan": "gold", "seats": 5}');
    await page.getByRole('button', { name: 'Save claims' }).click();
    await toast(page, /claims are saved/);
    const next = await h.server.signIn('ada@example.com');
    const claims = decodeJwt(next.access_token);
    assert.equal(claims.plan, 'gold');
    assert.equal(claims.seats, 5);
  });

  test('the audit log filters by user and exports CSV', async () => {
    const { page } = op;
    await page.getByRole('link', { name: 'All of this user’s events in the audit log' }).click();
    await heading(page, 'Audit log').waitFor();
    await page.getByRole('cell', { name: 'claims.changed' }).first().waitFor();
    const users = await page.locator('td[data-label="User"]').allInnerTexts();
    assert.ok(users.length > 0 && users.every((u) => u === ada.userId), 'only Ada’s events');
    await page.getByLabel('Event', { exact: true }).selectOption('signin.failed');
    await page.getByRole('button', { name: 'Show events' }).click();
    await page.waitForURL(/type=signin.failed/);
    assert.equal(await page.getByRole('cell', { name: 'signin.failed' }).count(), 5);
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await download;
    const csv = await (await file.createReadStream()).toArray();
    const text = Buffer.concat(csv as Buffer[]).toString('utf8');
    assert.equal(text.trim().split('\n').length, 6, text);
    await checkPage(page, 'audit', problems);
  });

  test('creates an OAuth client and shows its secret once', async () => {
    const { page } = op;
    await page.getByRole('link', { name: 'OAuth clients' }).click();
    await heading(page, 'OAuth clients').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Shop backend');
    await page.getByLabel('Redirect URIs').fill('https://shop.example.com/callback');
    await page.getByRole('button', { name: 'Create client' }).click();
    const secret = ((await page.locator('[data-secret]').textContent()) ?? '').trim();
    assert.ok(secret.length >= 32, 'a client secret is shown');
    await checkPage(page, 'clients-secret', problems);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.locator('[data-secret]').waitFor({ state: 'detached' });
    await page.getByRole('heading', { name: 'Shop backend' }).waitFor();
    await page.reload();
    await heading(page, 'OAuth clients').waitFor();
    await page.getByRole('heading', { name: 'Shop backend' }).waitFor();
    assert.ok(!(await page.content()).includes(secret), 'the secret is not shown again');
    await checkPage(page, 'clients', problems);
  });

  test('branding: the preview follows the draft; message texts are checked before saving', async () => {
    const { page } = op;
    await page.getByRole('link', { name: 'Branding' }).click();
    await heading(page, 'Branding').waitFor();
    await page.getByLabel('Display name').fill('Acme Shop');
    await page.locator('.preview tessera-sign-in').getByText('Sign in to Acme Shop').waitFor();
    await page.getByLabel('Button colour (light theme)', { exact: true }).fill('#0a7c5a');
    await page.getByRole('button', { name: 'Save branding' }).click();
    await toast(page, /branding is saved/);
    const branding = await h.server.request('GET', `/v1/projects/${h.server.project.api_key_id}/branding`);
    assert.equal(branding.body.name, 'Acme Shop');
    assert.equal(branding.body.primary_color, '#0a7c5a');
    await page.getByLabel('SMS text').fill('Your code is {{cod}}');
    await page.getByText(/Unknown placeholder \{\{cod\}\}/).waitFor();
    await page.getByLabel('SMS text').fill('{{code}} is your {{brand}} code');
    await page.getByRole('button', { name: 'Save texts' }).click();
    await toast(page, /message texts are saved/);
    const project = await h.server.ctx.projects.get(h.server.project.api_key_id);
    assert.equal(project.message_templates?.locales.en?.sms_text, '{{code}} is your {{brand}} code');
    await page.getByRole('radio', { name: 'Dark' }).check();
    await checkPage(page, 'branding', problems);
  });

  test('project settings save origins, the device-PIN policy, SMS countries and token lifetimes', async () => {
    const { page } = op;
    await page.getByRole('link', { name: 'Project settings' }).click();
    await heading(page, 'Project settings').waitFor();
    const origins = page.getByLabel('Allowed origins');
    await origins.fill(`${await origins.inputValue()}\nhttps://shop.example.com`);
    await page.getByLabel('Trusted devices also need the PIN').check();
    // The project follows the server's countries until told otherwise; the field is then editable.
    const follow = page.getByLabel(/^Use the server’s countries: all$/);
    assert.equal(await follow.isChecked(), true);
    const countries = page.getByRole('textbox', { name: 'SMS countries' });
    assert.equal(await countries.isDisabled(), true);
    await follow.uncheck();
    await countries.fill('gb, ie');
    // Each lifetime says the server's, which is also the longest allowed.
    await page.getByText('Empty: the server’s 3600 s, also the longest allowed.').first().waitFor();
    await page.getByRole('textbox', { name: 'Access token' }).fill('900');
    await page.getByRole('textbox', { name: 'Refresh token' }).fill('86400');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await toast(page, /settings are saved/);
    const project = await h.server.ctx.projects.get(h.server.project.api_key_id);
    assert.ok(project.origins.includes('https://shop.example.com'));
    assert.equal(project.device_requires_pin, 1);
    assert.deepEqual(project.sms_countries, ['GB', 'IE']);
    assert.equal(project.access_token_ttl, 900);
    assert.equal(project.id_token_ttl, null);
    assert.equal(project.refresh_token_ttl, 86_400);
    // The next token is minted with the project's lifetime.
    const next = await h.server.signIn('lifetime@example.com');
    const { exp, iat } = decodeJwt(next.access_token);
    assert.equal((exp ?? 0) - (iat ?? 0), 900);
    // The form shows what was saved (it once showed the page's older copy, and a second save
    // undid the first).
    assert.equal(await page.getByRole('textbox', { name: 'Refresh token' }).inputValue(), '86400');
    assert.equal(await countries.inputValue(), 'GB, IE');
    assert.equal(await follow.isChecked(), false);
    // Past the server's: the service's reason is shown, and nothing is saved.
    await page.getByRole('textbox', { name: 'Access token' }).fill('3601');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /from 30 to 3600/ })
      .waitFor();
    assert.equal((await h.server.ctx.projects.get(h.server.project.api_key_id)).access_token_ttl, 900);
    await checkPage(page, 'settings', problems);
    // Emptied: the server's again (the earlier toast may still show, so the project is watched).
    await page.getByRole('textbox', { name: 'Access token' }).fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    for (let i = 0; ; i++) {
      const saved = await h.server.ctx.projects.get(h.server.project.api_key_id);
      if (saved.access_token_ttl === null) {
        assert.equal(saved.refresh_token_ttl, 86_400);
        assert.deepEqual(saved.sms_countries, ['GB', 'IE']);
        break;
      }
      assert.ok(i < 100, 'the emptied lifetime was not saved within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  test('rotates the signing keys', async () => {
    const { page } = op;
    await page.getByRole('link', { name: 'Signing keys' }).click();
    await heading(page, 'Signing keys').waitFor();
    const rows = page.locator('tbody tr');
    await rows.first().waitFor();
    const before = await rows.count();
    await page.getByRole('button', { name: 'Rotate keys' }).click();
    await confirmDialog(page);
    await toast(page, /new signing key is published/);
    await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length > n, before);
    await checkPage(page, 'keys', problems);
  });

  test('shows a webhook’s deliveries and redelivers one', async () => {
    const { page } = op;
    const created = await h.server.request('POST', '/v1/webhooks', {
      body: { url: hook.url, event_types: ['signin.succeeded'] },
      headers: { authorization: basicAuth(h.server.project) },
    });
    assert.equal(created.status, 201, created.text);
    await h.server.signIn('bob@example.com');
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await heading(page, 'Webhooks').waitFor();
    await checkPage(page, 'webhooks', problems);
    await page.getByRole('link', { name: hook.url }).click();
    await heading(page, `Webhook ${hook.url}`).waitFor();
    // The first attempt fails (the receiver answers 500).
    for (let i = 0; i < 50 && hook.hits === 0; i++) await page.waitForTimeout(200);
    assert.ok(hook.hits >= 1, 'the event was delivered once');
    hook.fail = false;
    const hits = hook.hits;
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page
      .getByRole('button', { name: /^Redeliver signin.succeeded/ })
      .first()
      .click();
    await toast(page, /queued for delivery again/);
    for (let i = 0; i < 50 && hook.hits === hits; i++) await page.waitForTimeout(200);
    assert.ok(hook.hits > hits, 'redelivered');
    await checkPage(page, 'webhook', problems);
    await go(page, '/console/projects');
    await heading(page, 'Projects').waitFor();
    await checkPage(page, 'projects', problems);
    await go(page, `${base}/no-such-page`);
    await heading(page, 'Not found').waitFor();
    await checkPage(page, 'not-found', problems);
  });

  test('a support member is offered no deletion and no secret, and the service refuses both', async () => {
    await grant(h, [SUPPORT, 'support', '--project', 'test']);
    const support = await h.open('/console/', { width: 360 });
    const { page } = support;
    await page.waitForURL(/\/console\/sign-in/);
    await signInByCode(h, page, SUPPORT);
    await heading(page, /Overview of test/).waitFor();
    await go(page, `${base}/users/${ada.userId}`);
    await heading(page, 'ada@example.com').waitFor();
    await page.getByRole('button', { name: 'Sign out everywhere' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Delete user' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Save claims' }).count(), 0);
    await checkPage(page, 'user-support', problems);
    await go(page, `${base}/clients`);
    await page.getByRole('heading', { name: 'Shop backend' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create client' }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Signing keys' }).count(), 0);
    // The service itself refuses what the console does not offer.
    const member = await h.server.signIn(SUPPORT, await consoleProject(h.server));
    const headers = {
      authorization: `Bearer ${member.access_token}`,
      'tessera-project': h.server.project.api_key_id,
    };
    const deleted = await h.server.request('DELETE', `/v1/users/${ada.userId}`, { headers });
    assert.equal(deleted.status, 403, deleted.text);
    assert.equal(deleted.body.code, 'forbidden');
    const client = await h.server.request('POST', '/v1/clients', {
      headers,
      body: { client_name: 'Sneaky', redirect_uris: ['https://sneaky.example.com/cb'] },
    });
    assert.equal(client.status, 403, client.text);
    const rotated = await h.server.request(
      'POST',
      `/v1/operator/projects/${h.server.project.api_key_id}/rotate-secret`,
      {
        headers,
      },
    );
    assert.equal(rotated.status, 403, rotated.text);
    await support.context.close();
  });

  test('a viewer of one project sees nothing of another, in the console and over the API', async () => {
    const other = await h.server.ctx.projects.create({
      name: 'other',
      origins: ['https://other.example.com'],
    });
    const bea = await otpUser(h.server, 'bea@example.com', other);
    await grant(h, [VIEWER, 'viewer', '--project', 'test']);
    const viewer = await h.open('/console/');
    const { page } = viewer;
    await page.waitForURL(/\/console\/sign-in/);
    await signInByCode(h, page, VIEWER);
    await heading(page, /Overview of test/).waitFor();
    await go(page, `/console/p/${other.api_key_id}/users/${bea.userId}`);
    await heading(page, 'Not found').waitFor();
    assert.equal(await page.getByText('bea@example.com').count(), 0);
    await go(page, `${base}/users/${ada.userId}`);
    await heading(page, 'ada@example.com').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Sign out everywhere' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Remove/ }).count(), 0);
    await checkPage(page, 'user-viewer', problems);
    const member = await h.server.signIn(VIEWER, await consoleProject(h.server));
    const answer = await h.server.request('GET', `/v1/users/${bea.userId}`, {
      headers: { authorization: `Bearer ${member.access_token}`, 'tessera-project': other.api_key_id },
    });
    assert.equal(answer.status, 404, answer.text);
    await viewer.context.close();
  });

  test('in a German or French browser the console, its page language and its sign-in element follow', async () => {
    const LANGUAGES = [
      {
        locale: 'de-DE',
        lang: 'de',
        sendCode: 'Code senden',
        overview: 'Übersicht über test',
        total: /Fehlgeschlagene Anmeldungen\s*5/,
        sections: ['Sitzungen', 'Anmeldemethoden', 'Vertrauenswürdige Geräte', 'Eigene Claims'],
        signOutEverywhere: 'Überall abmelden',
      },
      {
        locale: 'fr-FR',
        lang: 'fr',
        sendCode: 'Envoyer le code',
        overview: 'Vue d’ensemble de test',
        total: /Connexions échouées\s*5/,
        sections: ['Sessions', 'Méthodes de connexion', 'Appareils de confiance', 'Claims personnalisés'],
        signOutEverywhere: 'Déconnecter partout',
      },
    ];
    for (const l of LANGUAGES) {
      const member = await h.open('/console/', { locale: l.locale });
      const { page } = member;
      await page.waitForURL(/\/console\/sign-in/);
      await waitForStep(page, 'identifier');
      assert.equal(await page.evaluate(() => document.documentElement.lang), l.lang, 'the page’s language');
      assert.equal(await page.locator('tessera-sign-in').getAttribute('locale'), l.lang);
      await page.locator('tessera-sign-in').getByRole('button', { name: l.sendCode }).waitFor();
      await checkPage(page, `sign-in-${l.lang}`, problems);
      await signInByCode(h, page, OPERATOR);
      await go(page, base);
      await heading(page, l.overview).waitFor();
      await page.locator('svg.chart').nth(3).waitFor();
      // (Without the soft hyphens that let long German words break.)
      assert.match(((await page.locator('.totals').textContent()) ?? '').replaceAll('\u00ad', ''), l.total);
      await checkPage(page, `overview-${l.lang}`, problems);
      for (const o of await overflowing(page)) problems.push(`overview-${l.lang} 360px: ${o} overflows`);
      await go(page, `${base}/users/${ada.userId}`);
      await heading(page, 'ada@example.com').waitFor();
      for (const name of l.sections) await page.getByRole('heading', { name, exact: true }).waitFor();
      await page.getByRole('button', { name: l.signOutEverywhere }).waitFor();
      await checkPage(page, `user-${l.lang}`, problems);
      for (const o of await overflowing(page)) problems.push(`user-${l.lang} 360px: ${o} overflows`);
      // Every other page in that language too: axe-core, no sideways scroll, no text out of its box.
      for (const [name, path] of [
        ['users', `${base}/users`],
        ['audit', `${base}/audit`],
        ['webhooks', `${base}/webhooks`],
        ['clients', `${base}/clients`],
        ['branding', `${base}/branding`],
        ['settings', `${base}/settings`],
        ['projects', '/console/projects'],
        ['keys', '/console/keys'],
        ['account', '/console/account'],
      ] as const) {
        await go(page, path);
        await page.locator('h1').first().waitFor();
        await page.waitForLoadState('networkidle');
        // The console's own loading notes are gone (the sign-in element in the branding preview
        // shows its own while it starts, as in English).
        await page.waitForFunction(() => !document.querySelector('main p.muted[role="status"]'));
        if (name === 'branding') await waitForStep(page, 'identifier');
        await checkPage(page, `${name}-${l.lang}`, problems);
        for (const o of await overflowing(page)) problems.push(`${name}-${l.lang} 360px: ${o} overflows`);
      }
      problems.push(...member.problems);
      await member.context.close();
    }
  });

  test('no page has an axe-core violation, a CSP violation or sideways scroll at 1280 or 360 px', () => {
    assert.deepEqual([...problems, ...(op?.problems ?? [])], []);
  });
});

/** The console project's credentials as the harness's signIn takes them (only the key id is used). */
async function consoleProject(server: TestServer) {
  const project = await server.ctx.console.project();
  assert.ok(project, 'the console project exists');
  return { project_id: project.id, name: project.name, api_key_id: project.api_key_id, api_key_secret: '' };
}
