import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientErrorCode, ClientErrorCodes, ErrorCodes } from '@tessera/client';
import type { Page } from 'playwright-core';
import { ERROR_TABLE } from '../src/errors.js';
import { de } from '../src/messages/de.js';
import { en } from '../src/messages/en.js';
import { fr } from '../src/messages/fr.js';
import { skipBrowser, startUiHarness, type UiHarness, waitForStep } from './helpers/browser.js';

// Every error code the client can carry, as a sign-in step gets it from the service: the element
// shows the message of its row in ERROR_TABLE (what happened, what to do next), never the code.

const EVERY_CODE: ClientErrorCode[] = [...Object.values(ErrorCodes), ...Object.values(ClientErrorCodes)];

test('the table has a message for every code, in every language, each saying what to do next', () => {
  assert.deepEqual(Object.keys(ERROR_TABLE).sort(), [...EVERY_CODE].sort());
  for (const messages of [en, fr, de]) {
    assert.deepEqual(Object.keys(messages).sort(), Object.keys(en).sort(), 'every language has every text');
    for (const [code, entry] of Object.entries(ERROR_TABLE)) {
      for (const key of [entry.text, entry.left, entry.wait].filter(Boolean) as Array<keyof typeof en>) {
        const text = messages[key];
        assert.ok(text.length > 20, `${code}: ${text}`);
        assert.doesNotMatch(text, /[a-z]+_[a-z]+/, `${code}: no code in the text`);
      }
    }
  }
});

describe('each error code of a sign-in step shows its message', { skip: skipBrowser }, () => {
  let ui: UiHarness;
  let page: Page;
  before(async () => {
    ui = await startUiHarness();
    ({ page } = await ui.open('/'));
    await waitForStep(page, 'identifier');
  });
  after(() => ui?.close());

  type Failed = {
    detail: { code: string; message: string; detail: string };
    shown: string | null;
    step: string;
  };
  type Test = { problem(code: string, extra: object): Promise<Failed>; offline(): Promise<Failed> };
  /** The element's error when the service answers `otp/start` with a problem document of `code`. */
  const failWith = (code: string, extra: Record<string, number> = {}) =>
    page.evaluate(
      ([c, e]) =>
        (globalThis as unknown as { tesseraTest: Test }).tesseraTest.problem(c as string, e as object),
      [code, extra] as const,
    );

  for (const code of EVERY_CODE) {
    test(code, async () => {
      const { detail, shown, step } = await failWith(code);
      const entry = ERROR_TABLE[code];
      const expected = en[entry.text].replace('{name}', 'Acme');
      assert.equal(shown, expected);
      // The SDK adds the page's origin to an origin refusal's detail (what to add to the project).
      const sent =
        code === 'origin_not_allowed' ? `x (this page's origin: ${new URL(page.url()).origin})` : 'x';
      assert.deepEqual(detail, { code, message: expected, detail: sent });
      assert.equal(shown?.includes(code), false);
      assert.equal(step, entry.go ?? 'identifier');
    });
  }

  test('with retry_after, the seconds to wait; with attempts_left, the tries left', async () => {
    assert.equal(
      (await failWith('rate_limited', { retry_after: 42 })).shown,
      'Too many attempts. Wait 42 seconds, then try again.',
    );
    assert.equal(
      (await failWith('resend_too_soon', { retry_after: 17 })).shown,
      'A code was sent moments ago. Wait 17 seconds before asking for another.',
    );
    assert.equal(
      (await failWith('invalid_pin', { attempts_left: 3 })).shown,
      'Wrong PIN. 3 tries left before PIN sign-in is locked.',
    );
  });

  test('a code the client does not know, and a network failure, show messages too', async () => {
    assert.equal((await failWith('brand_new_code')).shown, en.errGeneric);
    const offline = await page.evaluate(() =>
      (globalThis as unknown as { tesseraTest: Test }).tesseraTest.offline(),
    );
    assert.equal(offline.detail.code, 'network_error');
    assert.equal(offline.detail.message, en.errNetwork);
    assert.equal(offline.shown, en.errNetwork);
  });
});
