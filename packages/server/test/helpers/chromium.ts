import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

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
