import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ARTEFACTS,
  axeViolations,
  focusedId,
  type OpenPage,
  partText,
  settled,
  skipBrowser,
  startUiHarness,
  type UiHarness,
  waitForStep,
} from './helpers/browser.js';

// <tessera-sign-in> alone, on an app's page, against a real Tessera (SQLite, development outbox),
// in headless Chromium with a virtual authenticator: every method end to end, each offer after a
// sign-in by code, axe-core in every step (light and dark, 1280 and 360 px), screenshots of every
// step in both themes and three languages under test-artifacts/ui/.

interface SignedIn {
  userId: string;
  authMethod: string;
  tokensStored: boolean;
  accessToken: string | null;
  idToken: string | null;
}

const events = (page: Page) =>
  page.evaluate(
    () => (globalThis as unknown as { uiEvents: Array<{ type: string; detail: unknown }> }).uiEvents,
  );
const signedInDetail = async (page: Page): Promise<SignedIn> => {
  await page.waitForFunction(() =>
    (globalThis as unknown as { uiEvents: Array<{ type: string }> }).uiEvents.some(
      (e) => e.type === 'signed-in',
    ),
  );
  return (await events(page)).find((e) => e.type === 'signed-in')!.detail as SignedIn;
};
const el = (page: Page, selector: string) => page.locator(`tessera-sign-in ${selector}`);

/**
 * At one step: axe-core in light and dark at 1280 and 360 px (no violation, no sideways scroll),
 * and a screenshot in each theme and language (`<name>-<theme>-<locale>.png`, 1280 px) plus the
 * 360 px ones in English.
 */
async function checkStep(page: Page, name: string, problems: string[]): Promise<void> {
  for (const dark of [false, true]) {
    const theme = dark ? 'dark' : 'light';
    await page.emulateMedia({ colorScheme: theme });
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      const violations = await axeViolations(page);
      for (const v of violations) problems.push(`${name} ${theme} ${width}px: ${v}`);
      const { scroll, inner } = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        inner: window.innerWidth,
      }));
      if (scroll > inner)
        problems.push(`${name} ${theme} ${width}px: ${scroll} px wide, wider than the window`);
      if (width === 360)
        await settled(page).then(() =>
          page.screenshot({ path: join(ARTEFACTS, `${name}-${theme}-en-360.png`), fullPage: true }),
        );
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const locale of ['en', 'fr', 'de']) {
      await page.evaluate(
        (l) => document.querySelector('tessera-sign-in')!.setAttribute('locale', l),
        locale,
      );
      await settled(page);
      await page.screenshot({ path: join(ARTEFACTS, `${name}-${theme}-${locale}.png`), fullPage: true });
    }
    await page.evaluate(() => document.querySelector('tessera-sign-in')!.setAttribute('locale', 'en'));
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe('<tessera-sign-in> in headless Chromium', { skip: skipBrowser }, () => {
  let ui: UiHarness;
  let tab: OpenPage;
  let page: Page;
  const problems: string[] = [];
  const email = 'ada@example.com';

  before(async () => {
    ui = await startUiHarness();
    tab = await ui.open('/', { authenticator: true });
    page = tab.page;
  });
  after(() => ui?.close());

  test('identifier step: labelled field with passkey autofill, focus on it, no axe violation', async () => {
    await waitForStep(page, 'identifier');
    assert.equal(await focusedId(page), 'identifier');
    const input = el(page, '#identifier');
    assert.equal(await input.getAttribute('autocomplete'), 'username webauthn');
    assert.equal(await partText(page, 'title'), 'Sign in to Acme');
    assert.match(
      await page.locator('tessera-sign-in label[for=identifier]').innerText(),
      /E-mail or phone number/,
    );
    // The project's SMS countries, with their calling codes, in the browser's language.
    const countries = await el(page, '#country option').allInnerTexts();
    assert.deepEqual(countries, [
      'France (+33)',
      'Germany (+49)',
      'United Kingdom (+44)',
      'United States (+1)',
    ]);
    await checkStep(page, 'identifier', problems);
  });

  test('no passkey yet: the passkey button says so, and what to do', async () => {
    await el(page, 'button.passkey').click();
    await page.waitForFunction(() =>
      /No passkey for Acme/.test(
        document.querySelector('tessera-sign-in')!.shadowRoot!.querySelector('[part~=error]')!.textContent ??
          '',
      ),
    );
    assert.equal(
      await partText(page, 'error'),
      'No passkey for Acme was found on this device. Sign in with a code, then add a passkey.',
    );
    const error = (await events(page)).find((e) => e.type === 'error')?.detail as Record<string, string>;
    assert.equal(error.code, 'passkey_not_available');
    assert.equal(
      error.message,
      'No passkey for Acme was found on this device. Sign in with a code, then add a passkey.',
    );
    assert.match(error.detail ?? '', /passkeys\.register\(\)/, 'the developer-facing detail comes along');
    await checkStep(page, 'error-no-passkey', problems);
  });

  test('code step: sent, countdown following resend_after, focus on the code field', async () => {
    await el(page, '#identifier').fill(email);
    await el(page, 'button[type=submit]').click();
    await waitForStep(page, 'code');
    assert.equal(await focusedId(page), 'code');
    const code = el(page, '#code');
    assert.equal(await code.getAttribute('autocomplete'), 'one-time-code');
    assert.equal(await code.getAttribute('inputmode'), 'numeric');
    assert.match(await partText(page, 'text'), /sent to ada@example\.com/);
    const resend = el(page, 'button.resend');
    assert.equal(await resend.isDisabled(), true);
    const countdown = await resend.innerText();
    const seconds = Number(/New code in (\d+) s/.exec(countdown)?.[1]);
    assert.ok(seconds > 20 && seconds <= 30, countdown);
    // The countdown is announced politely, not every second.
    assert.match(await el(page, '[aria-live=polite]').innerText(), /ask for a new code in \d+ seconds/);
    await checkStep(page, 'code', problems);
  });

  test('a wrong code: its message, the field cleared and focused for another try', async () => {
    const wrong = ui.server.lastCode(email) === '000000' ? '111111' : '000000';
    await el(page, '#code').fill(wrong);
    await page.waitForFunction(() =>
      /not right/.test(
        document.querySelector('tessera-sign-in')!.shadowRoot!.querySelector('[part~=error]')!.textContent ??
          '',
      ),
    );
    assert.match(await partText(page, 'error'), /^That code is not right\. Check it and try again/);
    assert.equal(await el(page, '#code').getAttribute('aria-invalid'), 'true');
    assert.equal(await focusedId(page), 'code');
    assert.equal(await el(page, '#code').inputValue(), '');
    await checkStep(page, 'error-wrong-code', problems);
  });

  test('the whole code pasted as text signs in, then the offers show', async () => {
    await page.evaluate(
      (c) => navigator.clipboard.writeText(`Your code: ${c.slice(0, 3)} ${c.slice(3)}`),
      ui.server.lastCode(email),
    );
    await el(page, '#code').focus();
    await page.keyboard.press('Control+V');
    await waitForStep(page, 'offers');
    assert.equal(await partText(page, 'title'), 'You are signed in');
    assert.equal(await focusedId(page), '', 'focus is on the heading (no id)');
    assert.deepEqual(await el(page, '[part~=offer] h3').allInnerTexts(), [
      'Trust this device',
      'Set a PIN',
      'Add a passkey',
    ]);
    await checkStep(page, 'offers', problems);
  });

  test('offers: trust this device, set a PIN (validated), add a passkey', async () => {
    await el(page, 'button.offer-trust').click();
    await el(page, '[data-offer=trust] [part~=status]').waitFor();
    assert.equal(
      await el(page, '[data-offer=trust] [part~=status]').innerText(),
      '✓ This device is trusted.',
    );
    await el(page, 'button.offer-pin').click();
    assert.equal(await focusedId(page), 'new-pin');
    await el(page, '#new-pin').fill('1234');
    await el(page, '#confirm-pin').fill('1234');
    await el(page, '[data-offer=pin] button[type=submit]').click();
    await page.waitForFunction(() =>
      /too easy/.test(
        document.querySelector('tessera-sign-in')!.shadowRoot!.querySelector('[part~=error]')!.textContent ??
          '',
      ),
    );
    assert.match(await partText(page, 'error'), /This PIN is too easy to guess/);
    await el(page, '#new-pin').fill('4829');
    await el(page, '#confirm-pin').fill('4892');
    await el(page, '[data-offer=pin] button[type=submit]').click();
    assert.equal(await partText(page, 'error'), 'The two PINs are not the same. Type the same PIN twice.');
    await el(page, '#confirm-pin').fill('4829');
    await el(page, '[data-offer=pin] button[type=submit]').click();
    await el(page, '[data-offer=pin] [part~=status]').waitFor();
    await el(page, 'button.offer-passkey').click();
    await el(page, '[data-offer=passkey] [part~=status]').waitFor();
    assert.equal(
      await el(page, '[data-offer=passkey] [part~=status]').innerText(),
      '✓ Your passkey is added.',
    );
    const credentials = (await tab.authenticator!.send('WebAuthn.getCredentials')) as {
      credentials: unknown[];
    };
    assert.equal(credentials.credentials.length, 1);
  });

  test('Continue: the done step and the signed-in event with the tokens', async () => {
    await el(page, 'button.continue').click();
    await waitForStep(page, 'done');
    const detail = await signedInDetail(page);
    assert.equal(detail.authMethod, 'OTP');
    assert.equal(detail.tokensStored, true);
    assert.match(detail.accessToken ?? '', /^eyJ/);
    assert.match(detail.idToken ?? '', /^eyJ/);
    const verified = await ui.server.request('POST', '/verify', {
      body: { oauth_token: { access_token: detail.accessToken } },
    });
    assert.deepEqual(verified.body, { success: true });
    const steps = (await events(page))
      .filter((e) => e.type === 'step')
      .map((e) => (e.detail as { step: string }).step);
    assert.deepEqual(steps, ['identifier', 'code', 'offers', 'done']);
    await checkStep(page, 'done', problems);
  });

  test('a trusted device: one tap signs in (TRUSTED DEVICE)', async () => {
    await page.reload();
    await waitForStep(page, 'device');
    assert.equal(await partText(page, 'title'), 'Welcome back');
    await checkStep(page, 'device', problems);
    await el(page, 'button.device').click();
    await waitForStep(page, 'done');
    assert.equal((await signedInDetail(page)).authMethod, 'TRUSTED DEVICE');
  });

  test('the project requires the PIN: the PIN pad, a wrong PIN counted, then PIN sign-in', async () => {
    await ui.server.ctx.projects.update(ui.apiKeyId, { deviceRequiresPin: true });
    await page.reload();
    await waitForStep(page, 'pin');
    assert.equal(await focusedId(page), 'pin');
    assert.equal(await el(page, '#pin').getAttribute('type'), 'password');
    assert.equal(await el(page, '[part~=pin-key]').count(), 12);
    await checkStep(page, 'pin', problems);
    // The pad's keys (touch) and the keyboard fill the same field.
    for (const d of '48') await el(page, `[part~=pin-key][aria-label="Digit ${d}"]`).click();
    assert.equal(await focusedId(page), 'pin', 'a key of the pad leaves the focus in the field');
    await page.keyboard.type('00');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() =>
      /Wrong PIN/.test(
        document.querySelector('tessera-sign-in')!.shadowRoot!.querySelector('[part~=error]')!.textContent ??
          '',
      ),
    );
    assert.equal(await partText(page, 'error'), 'Wrong PIN. 4 tries left before PIN sign-in is locked.');
    assert.equal(await el(page, '#pin').inputValue(), '');
    await checkStep(page, 'error-wrong-pin', problems);
    await page.keyboard.type('4829');
    await page.keyboard.press('Enter');
    await waitForStep(page, 'done');
    assert.equal((await signedInDetail(page)).authMethod, 'PIN');
    await ui.server.ctx.projects.update(ui.apiKeyId, { deviceRequiresPin: false });
  });

  test('passkey from the identifier field’s autofill (conditional mediation): BIOMETRIC', async () => {
    await page.reload();
    await waitForStep(page, 'device');
    // Chromium's automation answers a conditional request at once with the stored passkey, as if
    // the user had picked it in the autofill.
    await el(page, 'button.other-way').click();
    await waitForStep(page, 'done');
    assert.equal((await signedInDetail(page)).authMethod, 'BIOMETRIC');
  });

  test('passkey button (modal): BIOMETRIC', async () => {
    const auth = tab.authenticator!;
    const { credentials } = (await auth.send('WebAuthn.getCredentials')) as { credentials: object[] };
    await auth.send('WebAuthn.clearCredentials');
    await page.reload();
    await waitForStep(page, 'device');
    // As on a browser without passkey autofill: a pending autofill request would take the passkey
    // the moment it comes back, racing the button (seen under load: the button detached mid-click).
    await page.evaluate(() => document.querySelector('tessera-sign-in')!.setAttribute('autofill', 'off'));
    await el(page, 'button.other-way').click();
    await waitForStep(page, 'identifier');
    for (const credential of credentials) await auth.send('WebAuthn.addCredential', { credential });
    await settled(page);
    await el(page, 'button.passkey').click();
    await waitForStep(page, 'done');
    await page.evaluate(() => document.querySelector('tessera-sign-in')!.removeAttribute('autofill'));
    assert.equal((await signedInDetail(page)).authMethod, 'BIOMETRIC');
  });

  test('no axe violation and nothing wider than the window in any step, light and dark, 1280 and 360 px', () => {
    assert.deepEqual(problems, []);
  });
});
