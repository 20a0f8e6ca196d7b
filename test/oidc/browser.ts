// Shared by the OpenID Provider's browser tests: Debian's Chromium, the element's bundle for the
// hosted pages, and axe-core injected into a page (the hosted pages' CSP allows no other way:
// these tests open them with `bypassCSP`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM } from '../../packages/server/test/helpers/chromium.js';

export { CHROMIUM, launchChromium } from '../../packages/server/test/helpers/chromium.js';

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

const AXE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

/** axe-core's violations on the page, one line each (the context must bypass the page's CSP). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
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
