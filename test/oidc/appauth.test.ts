// AppAuth-JS (@openid/appauth, unmodified), a native app's client: a public client with a loopback
// redirect, its NodeBasedHandler listening for the code and opening the system browser. The app's
// code is docs/OIDC.md's snippet, run as written with tsx (placeholders replaced). The "system
// browser" is Chromium: AppAuth opens URLs with the `opener` package, which runs `xdg-open <url>`
// on Linux; the app runs with a PATH whose `xdg-open` hands the URL to this test, which opens it in
// Chromium and signs in on the hosted page with the code from GET /dev/outbox. Then the app
// exchanges the code, verifies the ID token against the JWKS, calls userinfo, refreshes, and logs
// out through the end_session_endpoint, in the browser again.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../../packages/server/test/helpers/chromium.js';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';
import { registerClient } from '../../packages/server/test/helpers/oidc.js';
import { ARTEFACTS, bundleHostedAssets, outboxCode, ROOT, signInOnHostedPage } from './browser.js';
import { oidcSnippets, substitute } from './snippets.js';

describe('AppAuth-JS against Tessera: a native app with a loopback redirect (issue 31)', {
  skip: chromiumSkip(),
}, () => {
  let server: TestServer;
  let browser: Browser;
  let work: string;

  before(async () => {
    bundleHostedAssets();
    server = await startServer('sqlite', { env: RELAXED_LIMITS });
    work = mkdtempSync(join(tmpdir(), 'tessera-appauth-'));
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('sign-in in the system browser, ID token verified against the JWKS, userinfo, refresh, logout', {
    timeout: 120_000,
  }, async (t) => {
    const started = Date.now();
    const client = await registerClient(server, {
      client_name: 'AppAuth desktop app',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const source = substitute(oidcSnippets().get('oidc-appauth')!, {
      issuer: server.url,
      clientId: client.client_id,
    });
    writeFileSync(join(work, 'app.mts'), source);

    // This machine's URL handler: appends the URL to `opened`, for the test to open in Chromium.
    const bin = join(work, 'bin');
    const opened = join(work, 'opened.txt');
    mkdirSync(bin);
    writeFileSync(join(bin, 'xdg-open'), '#!/bin/sh\nprintf \'%s\\n\' "$1" >> "$TESSERA_TEST_OPENED"\n');
    chmodSync(join(bin, 'xdg-open'), 0o755);

    const app = spawn(process.execPath, ['--import', 'tsx', join(work, 'app.mts')], {
      cwd: work,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        PATH: `${bin}:${process.env.PATH}`,
        TESSERA_TEST_OPENED: opened,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => app.kill());
    let stdout = '';
    let stderr = '';
    app.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    app.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    const exited = new Promise<number>((resolve) => app.once('exit', (status) => resolve(status ?? -1)));

    /** The `n`th URL the app opened (1-based), once it has. */
    const nthOpened = async (n: number) => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
        const lines = existsSync(opened) ? readFileSync(opened, 'utf8').split('\n').filter(Boolean) : [];
        if (lines.length >= n) return lines[n - 1]!;
        assert.equal(app.exitCode, null, `the app exited early: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`the app opened no URL #${n}: ${stderr}`);
    };

    const context = await browser.newContext();
    t.after(() => context.close());
    const page = await context.newPage();
    const authorize = new URL(await nthOpened(1));
    assert.equal(`${authorize.origin}${authorize.pathname}`, `${server.url}/oauth/authorize`);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.match(authorize.searchParams.get('redirect_uri')!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    await page.goto(authorize.href);
    const email = 'appauth@example.com';
    await signInOnHostedPage(
      page,
      (to) => outboxCode(server.url, to),
      email,
      'appauth',
      /127\.0\.0\.1:\d+\/callback\?/,
    );
    await page.getByText('Close your browser to continue').waitFor();

    const logout = new URL(await nthOpened(2));
    assert.equal(`${logout.origin}${logout.pathname}`, `${server.url}/oauth/logout`);
    await page.goto(logout.href);
    await page.getByText('You are signed out.').waitFor();
    await page.screenshot({ path: join(ARTEFACTS, 'appauth-signed-out.png') });

    assert.equal(await exited, 0, stderr);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    assert.deepEqual(result, {
      signedIn: email,
      sub: result.sub,
      amr: ['otp'],
      refreshed: server.config.accessTokenTtl,
    });
    // The logout ended every session of the user: the hosted page's and the app's (its tokens).
    const sessions = await server.storage.db.kysely
      .selectFrom('sessions')
      .select(['id', 'revoked_at'])
      .where('user_id', '=', result.sub)
      .execute();
    assert.ok(sessions.length >= 2, 'the hosted session and the app session');
    assert.deepEqual(
      sessions.filter((s) => s.revoked_at === null),
      [],
      'no session of the user survives the logout',
    );
    t.diagnostic(`AppAuth-JS flow in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
});
