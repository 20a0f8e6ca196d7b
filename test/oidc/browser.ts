// Shared by the OpenID Provider's browser tests: Debian's Chromium, the element's bundle for the
// hosted pages, and axe-core injected into a page (the hosted pages' CSP allows no other way:
// these tests open them with `bypassCSP`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { axeSource, CHROMIUM, runAxe } from '../../packages/server/test/helpers/chromium.js';

export {
  addVirtualAuthenticator,
  CHROMIUM,
  launchChromium,
} from '../../packages/server/test/helpers/chromium.js';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const skipBrowser: string | false = existsSync(CHROMIUM) ? false : `${CHROMIUM} not found`;
export const ARTEFACTS = join(ROOT, 'test-artifacts', 'oidc');

/** Builds the <tessera-sign-in> bundle the hosted pages serve (npm run build makes it too). */
export function bundleHostedAssets(): void {
  mkdirSync(ARTEFACTS, { recursive: true });
  const bundled = spawnSync(
    process.execPath,
    [join(ROOT, 'packages/server/scripts/bundle-hosted.mjs'), '--source'],
    { stdio: 'inherit' },
  );
  assert.equal(bundled.status, 0, 'bundle-hosted.mjs failed');
}

/** axe-core's violations on the page, one line each (the context must bypass the page's CSP). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axeSource() });
  return runAxe(page);
}

/**
 * Signs in on the hosted page the browser is on, through <tessera-sign-in> (packages/ui, rendered
 * by the page): identifier, the code `codeOf` finds, then past the element's offers (trust this
 * device, PIN, passkey) until the page hands over and leaves for `done`.
 */
export async function signInOnHostedPage(
  page: Page,
  codeOf: (email: string) => string | Promise<string>,
  email: string,
  shot: string,
  done: RegExp,
) {
  await page.waitForURL(/\/oauth\/sign-in\?/);
  const element = page.locator('tessera-sign-in');
  await element.getByLabel('E-mail or phone number').fill(email);
  await page.screenshot({ path: join(ARTEFACTS, `${shot}-identifier.png`) });
  await element.getByRole('button', { name: 'Send code' }).click();
  await element.getByLabel('Code').waitFor();
  let code: string;
  try {
    code = await codeOf(email);
  } catch (error) {
    // Once seen in a full run under load, not since: what the page showed, for the next time.
    await page.screenshot({ path: join(ARTEFACTS, `${shot}-no-code.png`) });
    const shown = await page.evaluate(
      () => document.querySelector('tessera-sign-in')?.shadowRoot?.textContent ?? '',
    );
    throw new Error(
      `${(error as Error).message}; the page says: ${shown.replace(/\s+/g, ' ').slice(0, 300)}`,
    );
  }
  await element.getByLabel('Code').fill(code);
  await page.screenshot({ path: join(ARTEFACTS, `${shot}-code.png`) });
  // The element submits a whole code by itself; the button is for a code typed slowly.
  await element
    .getByRole('button', { name: 'Sign in', exact: true })
    .click({ timeout: 1000 })
    .catch(() => {});
  for (let i = 0; i < 10 && !done.test(page.url()); i++) {
    const skip = element.getByRole('button', { name: /^(Not now|Continue)$/ }).first();
    const left = await Promise.race([
      page.waitForURL(done, { timeout: 15_000 }).then(() => true),
      skip.waitFor({ timeout: 15_000 }).then(() => false),
    ]).catch(() => false);
    if (left) break;
    if (i === 0) await page.screenshot({ path: join(ARTEFACTS, `${shot}-offers.png`) });
    await skip.click().catch(() => {});
  }
  await page.waitForURL(done);
}

/**
 * The newest code sent to `email`, read as a developer reads it: `GET /dev/outbox` of the issuer
 * (the element shows the code field as soon as the request is on its way; the code follows).
 */
export async function outboxCode(issuer: string, email: string): Promise<string> {
  for (let tries = 0; tries < 100; tries++) {
    const outbox = (await (await fetch(`${issuer}/dev/outbox`)).json()) as Array<{
      to: string;
      code: string;
    }>;
    const found = outbox.find((message) => message.to === email);
    if (found) return found.code;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`GET /dev/outbox has no code for ${email}`);
}
