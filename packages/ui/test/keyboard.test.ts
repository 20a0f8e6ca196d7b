import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ARTEFACTS,
  focusedId,
  skipBrowser,
  startUiHarness,
  type UiHarness,
  waitForStep,
} from './helpers/browser.js';

// Keyboard only, end to end: no mouse, no click. Focus moves to each step's field or heading, every
// control is reached with Tab, and the focused control shows a visible outline.

/** What has the focus inside the element: its id, else its class, and its outline. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const active = document.querySelector('tessera-sign-in')!.shadowRoot!.activeElement as HTMLElement | null;
    if (!active) return { name: '', outline: '' };
    const style = getComputedStyle(active);
    return {
      name: active.id || active.className || active.tagName.toLowerCase(),
      outline: `${style.outlineStyle} ${style.outlineWidth}`,
    };
  });

describe('keyboard only', { skip: skipBrowser }, () => {
  let ui: UiHarness;
  before(async () => {
    ui = await startUiHarness();
  });
  after(() => ui?.close());

  test('signs in by code, trusts the device, sets a PIN and skips the passkey with the keyboard alone', async () => {
    const { page } = await ui.open('/');
    await waitForStep(page, 'identifier');
    assert.equal(await focusedId(page), 'identifier');
    await page.keyboard.type('keys@example.com');
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).name, 'country');
    await page.keyboard.press('Tab');
    const send = await focused(page);
    assert.equal(send.name, 'primary');
    assert.equal(send.outline, 'solid 3px', 'the focused button shows its outline');
    await page.keyboard.press('Enter');
    await waitForStep(page, 'code');
    assert.equal(await focusedId(page), 'code');
    await page.keyboard.type(ui.server.lastCode('keys@example.com'));
    await waitForStep(page, 'offers');
    assert.equal((await focused(page)).name, 'h2', 'the offers heading has the focus');
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).name, 'secondary offer-trust');
    await page.keyboard.press('Enter');
    await page.locator('tessera-sign-in [data-offer=trust] [part~=status]').waitFor();
    assert.equal((await focused(page)).name, 'secondary offer-pin', 'on to the next offer');
    await page.keyboard.press('Enter');
    assert.equal(await focusedId(page), 'new-pin');
    await page.keyboard.type('4829');
    await page.keyboard.press('Tab');
    await page.keyboard.type('4829');
    await page.keyboard.press('Enter');
    await page.locator('tessera-sign-in [data-offer=pin] [part~=status]').waitFor();
    assert.equal((await focused(page)).name, 'secondary offer-passkey');
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).name, 'link skip-passkey');
    await page.keyboard.press('Enter');
    assert.equal((await focused(page)).name, 'primary continue');
    await page.screenshot({ path: join(ARTEFACTS, 'keyboard-offers-done.png'), fullPage: true });
    await page.keyboard.press('Enter');
    await waitForStep(page, 'done');
    const signedIn = await page.evaluate(
      () =>
        (
          globalThis as unknown as { uiEvents: Array<{ type: string; detail: { authMethod: string } }> }
        ).uiEvents.find((e) => e.type === 'signed-in')?.detail.authMethod,
    );
    assert.equal(signedIn, 'OTP');
    // The next visit: the trusted device, then the PIN, by keyboard too.
    await ui.server.ctx.projects.update(ui.apiKeyId, { deviceRequiresPin: true });
    await page.reload();
    await waitForStep(page, 'pin');
    assert.equal(await focusedId(page), 'pin');
    await page.keyboard.type('4829');
    await page.keyboard.press('Enter');
    await waitForStep(page, 'done');
  });
});
