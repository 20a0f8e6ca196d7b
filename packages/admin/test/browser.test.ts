// @tessera/admin in Chromium: bundled for browsers with esbuild, loaded by a page of the server's
// own origin (as the console is; the admin API has no CORS), calling the real server from there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../../server/test/helpers/chromium.js';
import {
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../../server/test/helpers/harness.js';

const skip = chromiumSkip();

describe('@tessera/admin in a browser', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let script: string;

  before(async () => {
    server = await startServer('sqlite', { env: RELAXED_LIMITS });
    const result = await build({
      stdin: {
        contents:
          "import * as admin from './src/index.ts';\n(globalThis as { admin?: unknown }).admin = admin;\n",
        resolveDir: fileURLToPath(new URL('..', import.meta.url)),
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      conditions: ['tessera-source'],
      write: false,
      logLevel: 'silent',
    });
    script = result.outputFiles[0]!.text;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('finds a user, pages through the audit log, and refuses with a typed error', async () => {
    const email = uniqueEmail('browser');
    await server.signIn(email);
    await server.signIn(email);
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    // The page is served at the server's origin by the browser's own routing: nothing is added to the server.
    await page.route(`${server.url}/admin-test/**`, (route) =>
      route.fulfill(
        route.request().url().endsWith('.js')
          ? { contentType: 'text/javascript', body: script }
          : {
              contentType: 'text/html',
              body: '<!doctype html><title>admin</title><script type="module" src="/admin-test/admin.js"></script>',
            },
      ),
    );
    await page.goto(`${server.url}/admin-test/`);
    await page.waitForFunction(() => 'admin' in globalThis);
    const answer = await page.evaluate(
      async ({ issuer, apiKeyId, apiKeySecret, email }) => {
        type Module = typeof import('../src/index.js');
        const { createTesseraAdmin, TesseraAdminError } = (globalThis as unknown as { admin: Module }).admin;
        const admin = createTesseraAdmin({ issuer, apiKeyId, apiKeySecret });
        const user = await admin.users.find(email);
        const pages: number[] = [];
        for await (const page of admin.audit
          .list({ user_id: user!.user_id, type: 'signin.succeeded', limit: '1' })
          .pages())
          pages.push(page.events.length);
        const refusal = await admin.users.get('nobody').catch((error: unknown) => error);
        return {
          identifier: user?.identifier,
          pages,
          typed: refusal instanceof TesseraAdminError,
          code: (refusal as { code?: string }).code,
        };
      },
      {
        issuer: server.url,
        apiKeyId: server.project.api_key_id,
        apiKeySecret: server.project.api_key_secret,
        email,
      },
    );
    assert.deepEqual(answer, { identifier: email, pages: [1, 1], typed: true, code: 'user_not_found' });
    assert.deepEqual(problems, []);
  });
});
