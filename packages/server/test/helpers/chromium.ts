import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';

/** Debian's chromium, driven by playwright-core (never a downloaded browser). */
export const CHROMIUM = process.env.TESSERA_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests skip here (said once on the console), or false when Chromium is present. */
export function chromiumSkip(): string | false {
  const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
  if (existsSync(CHROMIUM) || required) return false;
  console.log(`# browser tests skipped: ${CHROMIUM} not found (apt-get install -y chromium)`);
  return `${CHROMIUM} not found`;
}

/** Headless Chromium without background traffic of its own (updates, sync, safe browsing). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

let axe: string | undefined;
/** axe-core's script (axe.min.js), for a test to put into a page in the way the page's CSP allows. */
export function axeSource(): string {
  axe ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  return axe;
}

/** axe-core (already in the page) run over it, shadow roots included: the violations, one line each. */
export function runAxe(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(): Promise<{
            violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }>;
          }>;
        };
      }
    ).axe;
    const result = await axe.run();
    return result.violations.map(
      (v) => `${v.id}: ${v.help} (${JSON.stringify(v.nodes.map((n) => n.target))})`,
    );
  });
}

/**
 * A virtual platform authenticator (CDP WebAuthn: CTAP2, internal, resident keys, user verified)
 * for the page of `cdp`; its id.
 */
export async function addVirtualAuthenticator(cdp: CDPSession): Promise<string> {
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
    },
  });
  return authenticatorId;
}
