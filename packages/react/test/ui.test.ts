import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import {
  axeViolations,
  type OpenPage,
  REACT_ARTEFACTS,
  settled,
  skipBrowser,
  startUiHarness,
  type UiHarness,
  waitForStep,
} from '../../ui/test/helpers/browser.js';

// @tessera/react in an app (test/fixtures/app.tsx, bundled with esbuild): <TesseraProvider>,
// <SignIn/> and <UserButton/> against a real Tessera (SQLite, development outbox) in headless
// Chromium with a virtual authenticator. Every method end to end (code, passkey in the autofill
// and as a button, trusted device, PIN), each offer after a code taken and skipped, the callbacks'
// payloads, the user button (devices, passkeys, PIN set and locked, remove, sign out; Escape and
// focus), axe-core at every step in light and dark at 1280 and 360 px, keyboard only, and
// screenshots under test-artifacts/react/.

interface SignedIn {
  userId: string;
  authMethod: string;
  tokensStored: boolean;
  accessToken: string | null;
  idToken: string | null;
}
interface ErrorDetail {
  code: string;
  message: string;
  detail: string;
}
interface ReactApp {
  signedIn: SignedIn[];
  steps: string[];
  errors: ErrorDetail[];
  signedOut: number;
}

const APP = fileURLToPath(new URL('./fixtures/app.tsx', import.meta.url));
const README = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
/** packages/react/README.md's snippet, as an app's entry beside the fixtures (to resolve the workspace). */
const SNIPPET = fileURLToPath(new URL('./fixtures/.readme-user-button.tsx', import.meta.url));

/** The code of the fence after `<!-- snippet: name -->` in packages/react/README.md. */
function snippet(name: string): string {
  const match = new RegExp(`<!-- snippet: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(README);
  assert.ok(match, `packages/react/README.md has no snippet "${name}"`);
  return match[1]!;
}
const app = (page: Page) => page.evaluate(() => (globalThis as unknown as { reactApp: ReactApp }).reactApp);
const signIn = (page: Page, selector: string) => page.locator(`tessera-sign-in ${selector}`);
const trigger = (page: Page) => page.locator('tessera-user-button button.trigger');
const panel = (page: Page) => page.locator('tessera-user-button [part~=panel]');
const setLocale = (page: Page, locale: string) =>
  page.evaluate((l) => (globalThis as unknown as { setLocale(l: string): void }).setLocale(l), locale);

/** Waits for the n-th sign-in the app's `onSignedIn` received, and returns it. */
async function signedIn(page: Page, n: number): Promise<SignedIn> {
  await page.waitForFunction(
    (count) => (globalThis as unknown as { reactApp: ReactApp }).reactApp.signedIn.length >= count,
    n,
    { timeout: 15_000 },
  );
  return (await app(page)).signedIn[n - 1]!;
}

/** Waits for an error the app's `onError` received with this code. */
async function errored(page: Page, code: string): Promise<ErrorDetail> {
  await page.waitForFunction(
    (c) => (globalThis as unknown as { reactApp: ReactApp }).reactApp.errors.some((e) => e.code === c),
    code,
    { timeout: 15_000 },
  );
  return (await app(page)).errors.findLast((e) => e.code === code)!;
}

/** Focus inside a component's shadow root: the focused control's part or id. */
const focused = (page: Page, host: string) =>
  page.evaluate((h) => {
    const active = document.querySelector(h)?.shadowRoot?.activeElement as HTMLElement | null | undefined;
    if (!active) return '';
    return active.getAttribute('part') ?? (active.id || active.tagName.toLowerCase());
  }, host);

/**
 * At one step: axe-core in light and dark at 1280 and 360 px (no violation, nothing wider than
 * the window) and a screenshot of each (`<name>-<theme>.png` at 1280 px, `<name>-<theme>-360.png`);
 * `locales` adds 1280 px ones in French and German (`<name>-<theme>-fr.png`).
 */
async function checkStep(
  page: Page,
  name: string,
  problems: string[],
  locales: string[] = [],
): Promise<void> {
  for (const theme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: theme });
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      for (const v of await axeViolations(page)) problems.push(`${name} ${theme} ${width}px: ${v}`);
      const { scroll, inner, panelOut } = await page.evaluate(() => {
        const open = document
          .querySelector('tessera-user-button')
          ?.shadowRoot?.querySelector('[part~=panel]');
        const box = open?.getBoundingClientRect();
        return {
          scroll: document.documentElement.scrollWidth,
          inner: window.innerWidth,
          panelOut: box ? box.left < 0 || box.right > window.innerWidth : false,
        };
      });
      if (scroll > inner)
        problems.push(`${name} ${theme} ${width}px: ${scroll} px wide, wider than the window`);
      if (panelOut) problems.push(`${name} ${theme} ${width}px: the account panel leaves the window`);
      await settled(page);
      const suffix = width === 360 ? '-360' : '';
      await page.screenshot({ path: join(REACT_ARTEFACTS, `${name}-${theme}${suffix}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const locale of locales) {
      await setLocale(page, locale);
      await settled(page);
      await page.screenshot({
        path: join(REACT_ARTEFACTS, `${name}-${theme}-${locale}.png`),
        fullPage: true,
      });
    }
    if (locales.length > 0) await setLocale(page, 'en');
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe('@tessera/react: <SignIn/> and <UserButton/> in an app, in headless Chromium', {
  skip: skipBrowser,
}, () => {
  let ui: UiHarness;
  let tab: OpenPage;
  let page: Page;
  const problems: string[] = [];
  const email = 'grace@example.com';

  before(async () => {
    mkdirSync(REACT_ARTEFACTS, { recursive: true });
    ui = await startUiHarness(
      { TESSERA_RATE_LIMIT_OTP_START: '1000/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
      { app: APP, readme: SNIPPET },
    );
    // Bundled at its first load; only the placeholders change (this test's issuer and API key id).
    writeFileSync(
      SNIPPET,
      snippet('user-button')
        .replaceAll('https://auth.example.com', ui.server.url)
        .replaceAll('pk_…', ui.apiKeyId),
    );
    tab = await ui.open('/app', { authenticator: true });
    page = tab.page;
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  });
  after(async () => {
    rmSync(SNIPPET, { force: true });
    await ui?.close();
  });

  test('signed out: <SignIn/> shows the identifier step, onStep says so, no user button', async () => {
    await waitForStep(page, 'identifier');
    assert.deepEqual((await app(page)).steps, ['identifier']);
    assert.equal(await page.locator('tessera-user-button').count(), 0);
    await checkStep(page, 'sign-in-identifier', problems, ['fr', 'de']);
  });

  test('code: sent, a wrong code reaches onError with its message, the right one the offers', async () => {
    await signIn(page, '#identifier').fill(email);
    await signIn(page, 'button[type=submit]').click();
    await waitForStep(page, 'code');
    await checkStep(page, 'sign-in-code', problems, ['fr', 'de']);
    const code = ui.server.lastCode(email);
    await signIn(page, '#code').fill(code === '000000' ? '111111' : '000000');
    const error = await errored(page, 'invalid_code');
    assert.match(error.message, /^That code is not right\. Check it and try again/);
    assert.equal(typeof error.detail, 'string');
    assert.equal(await signIn(page, '[part~=error]').innerText(), error.message);
    await checkStep(page, 'sign-in-error-wrong-code', problems);
    await signIn(page, '#code').fill(code);
    await waitForStep(page, 'offers');
    // The provider's session has started; <SignIn/> stays on screen for the offers.
    assert.deepEqual((await app(page)).signedIn, []);
    await checkStep(page, 'sign-in-offers', problems, ['fr', 'de']);
  });

  test('offers: trust this device, set a PIN, add a passkey; Continue reaches onSignedIn with the tokens', async () => {
    await signIn(page, 'button.offer-trust').click();
    await signIn(page, '[data-offer=trust] [part~=status]').waitFor();
    await signIn(page, 'button.offer-pin').click();
    await signIn(page, '#new-pin').fill('4829');
    await signIn(page, '#confirm-pin').fill('4829');
    await signIn(page, '[data-offer=pin] button[type=submit]').click();
    await signIn(page, '[data-offer=pin] [part~=status]').waitFor();
    await signIn(page, 'button.offer-passkey').click();
    await signIn(page, '[data-offer=passkey] [part~=status]').waitFor();
    const { credentials } = (await tab.authenticator!.send('WebAuthn.getCredentials')) as {
      credentials: unknown[];
    };
    assert.equal(credentials.length, 1, 'the passkey is in the virtual authenticator');
    await checkStep(page, 'sign-in-offers-taken', problems);
    await signIn(page, 'button.continue').click();
    const detail = await signedIn(page, 1);
    assert.equal(detail.authMethod, 'OTP');
    assert.equal(detail.tokensStored, true);
    assert.match(detail.userId, /\S/);
    const verified = await ui.server.request('POST', '/verify', {
      body: { oauth_token: { access_token: detail.accessToken } },
    });
    assert.deepEqual(verified.body, { success: true });
    assert.match(detail.idToken ?? '', /^eyJ/);
    const seen = await app(page);
    assert.deepEqual(seen.steps, ['identifier', 'code', 'offers', 'done']);
    assert.deepEqual(
      seen.errors.map((e) => e.code),
      ['invalid_code'],
    );
    // onSignedIn took <SignIn/> away: the header's user button shows the user.
    await trigger(page).waitFor();
    assert.equal(await page.locator('tessera-sign-in').count(), 0);
    await page.getByTestId('hello').waitFor();
  });

  test('user button: initial and identifier, aria-expanded, the account (devices, passkeys, PIN)', async () => {
    const button = trigger(page);
    assert.equal(await button.getAttribute('aria-expanded'), 'false');
    assert.equal(await page.locator('tessera-user-button [part~=avatar]').innerText(), 'G');
    assert.equal(await page.getByRole('button', { name: email }).count(), 1, 'named by the identifier');
    const { height, width } = (await button.boundingBox())!;
    assert.ok(height >= 44 && width >= 44, `the button is ${width}×${height} px`);
    await checkStep(page, 'user-button', problems);
    await button.click();
    assert.equal(await button.getAttribute('aria-expanded'), 'true');
    assert.equal(await focused(page, 'tessera-user-button'), 'title', 'the panel’s heading has the focus');
    const account = page.getByRole('dialog', { name: 'Your account' });
    await account.getByText('Signed in with a one-time code').waitFor();
    await account.locator('[part~=section][part~=devices] [part~=badge]').waitFor();
    assert.equal(await account.locator('[part~=devices] [part~=item]').count(), 1);
    assert.equal(await account.locator('[part~=devices] [part~=badge]').innerText(), 'this device');
    assert.equal(await account.locator('[part~=passkeys] [part~=item]').count(), 1);
    assert.equal(await account.locator('[part~=pin-state]').innerText(), 'A PIN is set.');
    // Every control is a 44 px target.
    const small = await page.evaluate(() =>
      Array.from(document.querySelector('tessera-user-button')!.shadowRoot!.querySelectorAll('button, input'))
        .map((e) => ({ e, r: e.getBoundingClientRect() }))
        .filter(({ r }) => r.height < 44 || r.width < 44)
        .map(({ e, r }) => `${e.outerHTML} ${r.width}×${r.height}`),
    );
    assert.deepEqual(small, []);
    await checkStep(page, 'user-button-open', problems, ['fr', 'de']);
    await setLocale(page, 'fr');
    assert.equal(await page.getByRole('dialog', { name: 'Votre compte' }).count(), 1);
    assert.equal(await account.count(), 0);
    await setLocale(page, 'en');
  });

  test('user button: Escape closes it and gives the focus back; a press outside closes it too', async () => {
    await page.keyboard.press('Escape');
    assert.equal(await trigger(page).getAttribute('aria-expanded'), 'false');
    assert.equal(await panel(page).count(), 0);
    assert.equal(await focused(page, 'tessera-user-button'), 'button trigger');
    await trigger(page).click();
    await panel(page).waitFor();
    await page.mouse.click(5, 400);
    assert.equal(await panel(page).count(), 0);
    assert.equal(await trigger(page).getAttribute('aria-expanded'), 'false');
  });

  test('user button: another device of the user is listed and removed', async () => {
    // The same user signs in on a second browser and trusts it.
    const other = await ui.open('/app');
    await waitForStep(other.page, 'identifier');
    await signIn(other.page, '#identifier').fill(email);
    await signIn(other.page, 'button[type=submit]').click();
    await waitForStep(other.page, 'code');
    await signIn(other.page, '#code').fill(ui.server.lastCode(email));
    await waitForStep(other.page, 'offers');
    await signIn(other.page, 'button.offer-trust').click();
    await signIn(other.page, '[data-offer=trust] [part~=status]').waitFor();
    await other.context.close();

    await trigger(page).click();
    const account = page.getByRole('dialog', { name: 'Your account' });
    const devices = account.locator('[part~=devices] [part~=item]');
    await devices.nth(1).waitFor();
    assert.equal(await devices.count(), 2);
    const theirs = devices.filter({ hasNot: page.locator('[part~=badge]') });
    const name = (await theirs.locator('div').innerText()).split('\n')[0]!;
    assert.equal(await theirs.getByRole('button').getAttribute('aria-label'), `Remove ${name}`);
    await theirs.getByRole('button').click();
    await account.getByRole('status').filter({ hasText: 'The device is removed.' }).waitFor();
    await page.waitForFunction(
      () =>
        document
          .querySelector('tessera-user-button')!
          .shadowRoot!.querySelectorAll('[part~=devices] [part~=item]').length === 1,
    );
    assert.equal(await account.locator('[part~=devices] [part~=badge]').count(), 1, 'this device stays');
    assert.equal(
      await focused(page, 'tessera-user-button').then((f) => f !== ''),
      true,
      'the focus stays in the panel',
    );
    await checkStep(page, 'user-button-device-removed', problems);
  });

  test('user button: sign out; onSignedOut fires; the trusted device signs in with one tap', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await waitForStep(page, 'device');
    assert.equal((await app(page)).signedOut, 1);
    assert.equal(await page.locator('tessera-user-button').count(), 0);
    await checkStep(page, 'sign-in-device', problems, ['fr', 'de']);
    await signIn(page, 'button.device').click();
    assert.equal((await signedIn(page, 2)).authMethod, 'TRUSTED DEVICE');
    await trigger(page).click();
    await page.getByText('Signed in with a trusted device').waitFor();
  });

  test('PIN required: the PIN pad, a wrong PIN (onError), then PIN sign-in', async () => {
    await ui.server.ctx.projects.update(ui.apiKeyId, { deviceRequiresPin: true });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await waitForStep(page, 'pin');
    await checkStep(page, 'sign-in-pin', problems, ['fr', 'de']);
    await page.keyboard.type('0000');
    await page.keyboard.press('Enter');
    const wrong = await errored(page, 'invalid_pin');
    assert.equal(wrong.message, 'Wrong PIN. 4 tries left before PIN sign-in is locked.');
    await checkStep(page, 'sign-in-error-wrong-pin', problems);
    await page.keyboard.type('4829');
    await page.keyboard.press('Enter');
    assert.equal((await signedIn(page, 3)).authMethod, 'PIN');
    await trigger(page).click();
    await page.getByText('Signed in with a PIN').waitFor();
  });

  test('PIN locked after five wrong PINs; the passkey in the autofill signs in; the button says locked', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await waitForStep(page, 'pin');
    for (let i = 0; i < 5; i++) {
      await page.keyboard.type('0000');
      await page.keyboard.press('Enter');
      await page.waitForFunction(
        (n) => (globalThis as unknown as { reactApp: ReactApp }).reactApp.errors.length >= n,
        (await app(page)).errors.length + 1,
      );
      if ((await app(page)).errors.at(-1)!.code === 'pin_locked') break;
    }
    const locked = await errored(page, 'pin_locked');
    assert.match(locked.message, /locked/);
    // pin_locked sends the element to the identifier step, where Chromium's automation answers the
    // autofill's conditional request with the stored passkey, as if the user had picked it.
    assert.equal((await signedIn(page, 4)).authMethod, 'BIOMETRIC');
    await trigger(page).click();
    await page.getByText('Signed in with a passkey').waitFor();
    const state = page.locator('tessera-user-button [part~=pin-state]');
    await state.waitFor();
    assert.equal(
      await state.innerText(),
      'PIN sign-in is locked after too many wrong PINs. Sign in with a code to unlock it.',
    );
    await checkStep(page, 'user-button-pin-locked', problems);
    await ui.server.ctx.projects.update(ui.apiKeyId, { deviceRequiresPin: false });
  });

  test('passkey button (modal) signs in: BIOMETRIC', async () => {
    const auth = tab.authenticator!;
    const { credentials } = (await auth.send('WebAuthn.getCredentials')) as { credentials: object[] };
    await auth.send('WebAuthn.clearCredentials');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await waitForStep(page, 'device');
    // As on a browser without passkey autofill: a pending autofill request would take the passkey
    // the moment it comes back, racing the button (seen under load: the button detached mid-click).
    await page.evaluate(() => document.querySelector('tessera-sign-in')!.setAttribute('autofill', 'off'));
    await signIn(page, 'button.other-way').click();
    await waitForStep(page, 'identifier');
    for (const credential of credentials) await auth.send('WebAuthn.addCredential', { credential });
    await settled(page);
    await signIn(page, 'button.passkey').click();
    assert.equal((await signedIn(page, 5)).authMethod, 'BIOMETRIC');
  });

  test('each offer skipped: onSignedIn all the same; then the user button adds and removes a passkey, sets a PIN', async () => {
    const fresh = await ui.open('/app', { authenticator: true });
    const p = fresh.page;
    const who = 'skip@example.com';
    await waitForStep(p, 'identifier');
    await signIn(p, '#identifier').fill(who);
    await signIn(p, 'button[type=submit]').click();
    await waitForStep(p, 'code');
    await signIn(p, '#code').fill(ui.server.lastCode(who));
    await waitForStep(p, 'offers');
    for (const offer of ['trust', 'pin', 'passkey']) await signIn(p, `button.skip-${offer}`).click();
    assert.equal(await signIn(p, '[part~=offer]').count(), 0);
    await checkStep(p, 'sign-in-offers-skipped', problems);
    await signIn(p, 'button.continue').click();
    assert.equal((await signedIn(p, 1)).authMethod, 'OTP');
    await trigger(p).click();
    const account = p.getByRole('dialog', { name: 'Your account' });
    await account.getByText('No trusted device yet.').waitFor();
    await account.getByText('No passkey yet.').waitFor();
    await account.getByText('No PIN yet.').waitFor();
    assert.equal(await account.getByRole('button', { name: 'Trust this device' }).count(), 1);
    await checkStep(p, 'user-button-empty', problems, ['fr', 'de']);

    await account.getByRole('button', { name: 'Add a passkey' }).click();
    await account.getByRole('status').filter({ hasText: 'Your passkey is added.' }).waitFor();
    await account.locator('[part~=passkeys] [part~=item]').waitFor();
    const passkey = (await account.locator('[part~=passkeys] [part~=item] div').innerText()).split('\n')[0]!;
    await account.getByRole('button', { name: `Remove the passkey ${passkey}` }).click();
    await account.getByRole('status').filter({ hasText: 'The passkey is removed.' }).waitFor();
    await account.getByText('No passkey yet.').waitFor();

    // A PIN: the two must match; saving it trusts this device (a PIN signs in with one).
    await account.getByRole('button', { name: 'Set a PIN' }).click();
    assert.equal(await focused(p, 'tessera-user-button'), 'input pin', 'the new PIN field has the focus');
    await account.getByLabel('New PIN (4 to 12 digits)').fill('4829');
    await account.getByLabel('Repeat the PIN').fill('4892');
    await account.getByRole('button', { name: 'Save PIN' }).click();
    assert.equal(
      await account.getByRole('alert').innerText(),
      'The two PINs are not the same. Type the same PIN twice.',
    );
    assert.equal(await account.getByLabel('Repeat the PIN').getAttribute('aria-invalid'), 'true');
    assert.equal(
      await p.evaluate(
        () =>
          (document.querySelector('tessera-user-button')!.shadowRoot!.activeElement as HTMLInputElement).name,
      ),
      'again',
      'the PIN to repeat has the focus again',
    );
    await checkStep(p, 'user-button-pin-form', problems);
    await account.getByLabel('Repeat the PIN').fill('4829');
    await account.getByRole('button', { name: 'Save PIN' }).click();
    await account.getByRole('status').filter({ hasText: 'Your PIN is set.' }).waitFor();
    await account.getByText('A PIN is set.').waitFor();
    await account.locator('[part~=devices] [part~=badge]').waitFor();
    await fresh.context.close();
  });

  test('keyboard only: sign in by code with the offers, open the account, Escape, sign out', async () => {
    const fresh = await ui.open('/app');
    const p = fresh.page;
    const who = 'keys@example.com';
    await waitForStep(p, 'identifier');
    assert.equal(await focused(p, 'tessera-sign-in'), 'input', 'the identifier field has the focus');
    await p.keyboard.type(who);
    await p.keyboard.press('Tab'); // the country
    await p.keyboard.press('Tab'); // Send code
    await p.keyboard.press('Enter');
    await waitForStep(p, 'code');
    await p.keyboard.type(ui.server.lastCode(who));
    await waitForStep(p, 'offers');
    await p.keyboard.press('Tab');
    await p.keyboard.press('Enter'); // trust this device
    await signIn(p, '[data-offer=trust] [part~=status]').waitFor();
    await p.keyboard.press('Tab'); // past "Set a PIN" to its "Not now"
    await p.keyboard.press('Enter');
    await p.keyboard.press('Tab'); // past "Add a passkey" to its "Not now"
    await p.keyboard.press('Enter');
    assert.equal(await focused(p, 'tessera-sign-in'), 'button primary continue');
    await p.keyboard.press('Enter');
    assert.equal((await signedIn(p, 1)).authMethod, 'OTP');
    await trigger(p).waitFor();
    // <SignIn/> is gone with the focus; the user button is the first control of the page.
    await p.keyboard.press('Tab');
    assert.equal(await focused(p, 'tessera-user-button'), 'button trigger');
    const outline = await p.evaluate(() => {
      const b = document.querySelector('tessera-user-button')!.shadowRoot!.activeElement!;
      const s = getComputedStyle(b);
      return `${s.outlineStyle} ${s.outlineWidth}`;
    });
    assert.equal(outline, 'solid 3px', 'the focused button shows its outline');
    await p.keyboard.press('Enter');
    await panel(p).waitFor();
    await p.getByText('this device', { exact: true }).waitFor();
    await p.keyboard.press('Escape');
    assert.equal(await focused(p, 'tessera-user-button'), 'button trigger');
    await p.keyboard.press('Enter');
    await p.getByText('this device', { exact: true }).waitFor();
    // Tab through the panel to Sign out.
    for (let i = 0; i < 12 && (await focused(p, 'tessera-user-button')) !== 'button sign-out'; i++)
      await p.keyboard.press('Tab');
    assert.equal(await focused(p, 'tessera-user-button'), 'button sign-out');
    await p.keyboard.press('Enter');
    await waitForStep(p, 'device');
    assert.equal((await app(p)).signedOut, 1);
    // The trusted device's step: its heading has the focus, then "Continue on this device".
    await p.keyboard.press('Tab');
    assert.equal(await focused(p, 'tessera-sign-in'), 'button primary device');
    await p.keyboard.press('Enter');
    assert.equal((await signedIn(p, 2)).authMethod, 'TRUSTED DEVICE');
    await fresh.context.close();
  });

  test('packages/react/README.md: <UserButton/> in German with a text replaced, themed by its CSS', async () => {
    // Signed in on this origin by the app (the session is in the browser's storage), then the snippet.
    const fresh = await ui.open('/app');
    const p = fresh.page;
    const who = 'readme@example.com';
    await waitForStep(p, 'identifier');
    await signIn(p, '#identifier').fill(who);
    await signIn(p, 'button[type=submit]').click();
    await waitForStep(p, 'code');
    await signIn(p, '#code').fill(ui.server.lastCode(who));
    await waitForStep(p, 'offers');
    await signIn(p, 'button.continue').click();
    await signedIn(p, 1);
    await p.goto(`${ui.origin}/readme?css=${encodeURIComponent(snippet('user-button-theming'))}`);
    await trigger(p).click();
    const account = p.getByRole('dialog', { name: 'Ihr Konto' });
    await account.getByText('Angemeldet mit einem Einmalcode').waitFor();
    assert.equal(await account.locator('[part~=sign-out]').textContent(), 'Log out');
    const colours = await p.evaluate(() => {
      const root = document.querySelector('tessera-user-button')!.shadowRoot!;
      return {
        avatar: getComputedStyle(root.querySelector('[part~=avatar]')!).backgroundColor,
        border: getComputedStyle(root.querySelector('[part~=trigger]')!).borderTopColor,
        radius: getComputedStyle(root.querySelector('[part~=panel]')!).borderTopLeftRadius,
      };
    });
    assert.deepEqual(colours, { avatar: 'rgb(122, 31, 92)', border: 'rgb(122, 31, 92)', radius: '4px' });
    for (const v of await axeViolations(p)) problems.push(`readme: ${v}`);
    await p.screenshot({ path: join(REACT_ARTEFACTS, 'readme-user-button-de.png'), fullPage: true });
    await account.locator('[part~=sign-out]').click();
    await p.waitForURL(`${ui.origin}/`);
    await fresh.context.close();
  });

  test('no axe violation, nothing wider than the window, no page error, in any step', () => {
    assert.deepEqual(problems, []);
  });
});
