import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ARTEFACTS,
  axeViolations,
  partText,
  settled,
  skipBrowser,
  startUiHarness,
  type UiHarness,
  waitForStep,
} from './helpers/browser.js';

// Theming (custom properties, ::part(), the theme attribute, the project's branding), languages
// (attribute, browser, messages override) and right-to-left layout.

const style = (page: Page, selector: string, property: string) =>
  page.evaluate(
    ([s, p]) =>
      getComputedStyle(
        document.querySelector('tessera-sign-in')!.shadowRoot!.querySelector(s!)!,
      ).getPropertyValue(p!),
    [selector, property],
  );
const open = (ui: UiHarness, query: Record<string, string>, options: { dark?: boolean } = {}) =>
  ui.open(`/?${new URLSearchParams(query)}`, options);

describe('theming, languages and right-to-left', { skip: skipBrowser }, () => {
  let ui: UiHarness;
  before(async () => {
    ui = await startUiHarness();
  });
  after(() => ui?.close());

  test('light and dark follow the system; theme= overrides it', async () => {
    const dark = await open(ui, {}, { dark: true });
    await waitForStep(dark.page, 'identifier');
    assert.equal(await style(dark.page, '.card', 'background-color'), 'rgb(22, 27, 34)');
    const forcedLight = await open(ui, { attrs: JSON.stringify({ theme: 'light' }) }, { dark: true });
    await waitForStep(forcedLight.page, 'identifier');
    assert.equal(await style(forcedLight.page, '.card', 'background-color'), 'rgb(255, 255, 255)');
    const forcedDark = await open(ui, { attrs: JSON.stringify({ theme: 'dark' }) });
    await waitForStep(forcedDark.page, 'identifier');
    assert.equal(await style(forcedDark.page, '.card', 'background-color'), 'rgb(22, 27, 34)');
  });

  test('the page themes it with --tessera-* properties and ::part()', async () => {
    const css =
      'tessera-sign-in{--tessera-color-primary:#7a1f5c;--tessera-radius:2px;--tessera-font-family:Georgia,serif}' +
      'tessera-sign-in::part(title){letter-spacing:2px}';
    const { page } = await open(ui, { css });
    await waitForStep(page, 'identifier');
    assert.equal(await style(page, '.primary', 'background-color'), 'rgb(122, 31, 92)');
    assert.equal(await style(page, '.card', 'border-top-left-radius'), '2px');
    assert.match(await style(page, '.card', 'font-family'), /Georgia/);
    assert.equal(await style(page, 'h2', 'letter-spacing'), '2px');
    assert.deepEqual(await axeViolations(page), []);
  });

  test('the project’s branding: name, logo, colours (light and dark), and the page still wins', async () => {
    await ui.server.ctx.projects.update(ui.apiKeyId, {
      branding: {
        display_name: 'Acme Cloud',
        logo_url: `${ui.origin}/logo.svg`,
        primary_color: '#ffd60a',
        primary_color_dark: '#0a7c5a',
      },
    });
    try {
      const { page } = await open(ui, {});
      await waitForStep(page, 'identifier');
      assert.equal(await partText(page, 'title'), 'Sign in to Acme Cloud');
      assert.equal(await page.locator('tessera-sign-in [part~=logo]').getAttribute('alt'), 'Acme Cloud logo');
      assert.equal(
        await page.locator('tessera-sign-in [part~=logo]').getAttribute('src'),
        `${ui.origin}/logo.svg`,
      );
      // A light brand colour gets dark text, a dark one light text: readable either way.
      assert.equal(await style(page, '.primary', 'background-color'), 'rgb(255, 214, 10)');
      assert.equal(await style(page, '.primary', 'color'), 'rgb(0, 0, 0)');
      await settled(page);
      await page.screenshot({ path: join(ARTEFACTS, 'branding-light-en.png'), fullPage: true });
      assert.deepEqual(await axeViolations(page), []);
      await page.emulateMedia({ colorScheme: 'dark' });
      assert.equal(await style(page, '.primary', 'background-color'), 'rgb(10, 124, 90)');
      assert.equal(await style(page, '.primary', 'color'), 'rgb(255, 255, 255)');
      await page.screenshot({ path: join(ARTEFACTS, 'branding-dark-en.png'), fullPage: true });
      assert.deepEqual(await axeViolations(page), []);
      const overridden = await open(ui, { css: 'tessera-sign-in{--tessera-color-primary:#7a1f5c}' });
      await waitForStep(overridden.page, 'identifier');
      assert.equal(await style(overridden.page, '.primary', 'background-color'), 'rgb(122, 31, 92)');
    } finally {
      await ui.server.ctx.projects.update(ui.apiKeyId, { branding: null });
    }
  });

  test('a server-rendered page gives the branding and the language in attributes (no read)', async () => {
    const branding = { name: 'Hosted', device_requires_pin: false, passkeys: true, sms_countries: [] };
    const { page } = await open(ui, {
      attrs: JSON.stringify({ branding: JSON.stringify(branding), locale: 'de' }),
    });
    await waitForStep(page, 'identifier');
    assert.equal(await partText(page, 'title'), 'Bei Hosted anmelden');
    assert.equal(
      await page.locator('tessera-sign-in #country').count(),
      0,
      'no SMS countries: no country list',
    );
  });

  test('the language: the attribute, else the browser’s; a messages override replaces any text', async () => {
    const context = await ui.browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(ui.origin);
    await waitForStep(page, 'identifier');
    assert.equal(await partText(page, 'title'), 'Connexion à Acme');
    // The browser's region picks the country of phone numbers.
    assert.equal(await page.locator('tessera-sign-in #country').inputValue(), 'FR');
    await page.evaluate(() => {
      (document.querySelector('tessera-sign-in') as unknown as { messages: object }).messages = {
        sendCode: 'Recevoir mon code',
      };
    });
    assert.equal(
      await page.locator('tessera-sign-in button[type=submit]').textContent(),
      'Recevoir mon code',
    );
    const { page: german } = await open(ui, { attrs: JSON.stringify({ locale: 'de-AT' }) });
    await waitForStep(german, 'identifier');
    assert.equal(await partText(german, 'title'), 'Bei Acme anmelden');
    assert.equal(await german.locator('tessera-sign-in .card').getAttribute('lang'), 'de');
    await context.close();
  });

  test('right to left: an Arabic override on a dir=rtl page lays out from the right', async () => {
    const messages = {
      signInTo: 'تسجيل الدخول إلى {name}',
      identifier: 'البريد الإلكتروني أو رقم الهاتف',
      identifierHint: 'سنرسل إليك رمزًا لمرة واحدة.',
      country: 'رمز البلد لأرقام الهاتف',
      sendCode: 'إرسال الرمز',
      or: 'أو',
      passkey: 'تسجيل الدخول بمفتاح المرور',
    };
    const { page } = await open(ui, {
      dir: 'rtl',
      lang: 'ar',
      attrs: JSON.stringify({ messages: JSON.stringify(messages) }),
    });
    await waitForStep(page, 'identifier');
    assert.equal(await partText(page, 'title'), 'تسجيل الدخول إلى Acme');
    assert.equal(await style(page, '.card', 'direction'), 'rtl');
    // The label's text (not its block) against the field: it starts at the right edge.
    const { text, field } = await page.evaluate(() => {
      const root = document.querySelector('tessera-sign-in')!.shadowRoot!;
      const range = document.createRange();
      range.selectNodeContents(root.querySelector('label[for=identifier]')!);
      const t = range.getBoundingClientRect();
      const f = root.querySelector('#identifier')!.getBoundingClientRect();
      return { text: { left: t.left, right: t.right }, field: { left: f.left, right: f.right } };
    });
    assert.ok(
      Math.abs(text.right - field.right) < 2,
      `label text ends at ${text.right}, field at ${field.right}`,
    );
    assert.ok(text.left > field.left + 20, 'the label text does not start at the left');
    await settled(page);
    await page.screenshot({ path: join(ARTEFACTS, 'identifier-light-ar-rtl.png'), fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
    await page.screenshot({ path: join(ARTEFACTS, 'identifier-light-ar-rtl-360.png'), fullPage: true });
    assert.deepEqual(await axeViolations(page), []);
  });

  test('reduced motion: the steps do not move', async () => {
    const context = await ui.browser.newContext({ reducedMotion: 'reduce' });
    const page = await context.newPage();
    await page.goto(ui.origin);
    await waitForStep(page, 'identifier');
    assert.equal(await style(page, '.step', 'animation-name'), 'none');
    const { page: moving } = await open(ui, {});
    await waitForStep(moving, 'identifier');
    assert.equal(await style(moving, '.step', 'animation-name'), 'in');
    await context.close();
  });
});
