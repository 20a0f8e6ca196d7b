import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ARTEFACTS,
  axeViolations,
  skipBrowser,
  startUiHarness,
  type UiHarness,
  waitForStep,
} from './helpers/browser.js';

// @tessera/react's <SignIn/> (the element, with the provider's client) and <UserButton/> (devices,
// passkeys, PIN, sign out) in an app, in headless Chromium.

interface ReactApp {
  signedIn: Array<{ authMethod: string; accessToken: string | null }>;
  steps: string[];
}
const app = (page: Page) => page.evaluate(() => (globalThis as unknown as { reactApp: ReactApp }).reactApp);

describe('@tessera/react: <SignIn/> and <UserButton/>', { skip: skipBrowser }, () => {
  let ui: UiHarness;
  before(async () => {
    ui = await startUiHarness();
  });
  after(() => ui?.close());

  test('sign in by code with an offer, manage the account, sign out, sign in on the trusted device', async () => {
    const { page } = await ui.open('/react', { authenticator: true });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await waitForStep(page, 'identifier');
    assert.deepEqual(await axeViolations(page), []);
    await page.locator('tessera-sign-in #identifier').fill('react@example.com');
    await page.locator('tessera-sign-in button[type=submit]').click();
    await waitForStep(page, 'code');
    await page.locator('tessera-sign-in #code').fill(ui.server.lastCode('react@example.com'));
    // The provider's session starts with the code; <SignIn/> stays for the offers.
    await waitForStep(page, 'offers');
    await page.locator('tessera-sign-in button.offer-trust').click();
    await page.locator('tessera-sign-in [data-offer=trust] [part~=status]').waitFor();
    await page.locator('tessera-sign-in button.continue').click();
    const account = page.getByRole('button', { name: 'react@example.com' });
    await account.waitFor({ timeout: 15_000 });
    const seen = await app(page);
    assert.equal(seen.signedIn[0]?.authMethod, 'OTP');
    assert.deepEqual(seen.steps, ['identifier', 'code', 'offers', 'done']);

    await account.click();
    assert.equal(await account.getAttribute('aria-expanded'), 'true');
    await page.getByText('(this device)').waitFor();
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('status').filter({ hasText: 'Passkey added.' }).waitFor();
    await page
      .getByRole('button', { name: /^Remove / })
      .nth(1)
      .waitFor();
    await page.getByLabel('Set a PIN').fill('4829');
    await page.getByRole('button', { name: 'Save PIN' }).click();
    await page.getByRole('status').filter({ hasText: 'PIN saved.' }).waitFor();
    await page.getByText('A PIN is set.').waitFor();
    assert.deepEqual(await axeViolations(page), []);
    await page.screenshot({ path: join(ARTEFACTS, 'react-user-button.png'), fullPage: true });

    await page.getByRole('button', { name: 'Sign out' }).click();
    // Signed out: <SignIn/> again, on this trusted device.
    await waitForStep(page, 'device');
    await page.locator('tessera-sign-in button.device').click();
    await account.waitFor({ timeout: 15_000 });
    assert.equal((await app(page)).signedIn.at(-1)?.authMethod, 'TRUSTED DEVICE');
    assert.deepEqual(errors, []);
  });
});
