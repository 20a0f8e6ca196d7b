// examples/next-authjs: Auth.js (next-auth v5) in a Next.js app, built with `next build`, served
// with `next start`, signs users in with Tessera as a standard OpenID Provider, driven in Chromium.
// The app's auth code is docs/OIDC.md's Auth.js snippets, written into a copy of the app as they
// stand in the docs. Next and next-auth are not dependencies of the monorepo (Next alone is some
// 370 MB): they are installed with npm into that copy, at the versions package.json pins, as
// examples/next/test/e2e.test.ts does. Without the registry (or Chromium) the end-to-end test is
// skipped, visibly, unless TESSERA_TEST_REQUIRE_SERVICES=1.
//
// Tessera runs with 30 s access tokens and no refresh grace window (TESSERA_REFRESH_GRACE=0): the
// refresh the app makes once the access token has expired must be the only one (a second refresh
// with the spent token would revoke the session, and the page would say so).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../../packages/server/test/helpers/chromium.js';
import {
  freePort,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../../packages/server/test/helpers/harness.js';
import { registerClient, tokenRequest } from '../../../packages/server/test/helpers/oidc.js';
import { nextBuild, npmInstall, registryHas, startNext } from '../../../test/helpers/next-app.js';
import {
  ARTEFACTS,
  axeViolations,
  bundleHostedAssets,
  outboxCode,
  signInOnHostedPage,
} from '../../../test/oidc/browser.js';
import { oidcSnippets } from '../../../test/oidc/snippets.js';

const APP = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
const manifest = JSON.parse(readFileSync(join(APP, 'package.json'), 'utf8'));

/** docs/OIDC.md's Auth.js snippets, by the file each names on its first line (`// auth.ts`). */
function docsFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, code] of oidcSnippets()) {
    if (!name.startsWith('authjs-')) continue;
    const [first = '', ...rest] = code.split('\n');
    const path = /^\/\/ (\S+)$/.exec(first)?.[1];
    assert.ok(path, `snippet ${name}: the first line names the file`);
    files.set(path, `${rest.join('\n')}\n`);
  }
  return files;
}

test('docs/OIDC.md shows every Auth.js file of examples/next-authjs as it is', () => {
  const files = docsFiles();
  assert.deepEqual([...files.keys()].sort(), [
    'app/actions.ts',
    'app/api/auth/[...nextauth]/route.ts',
    'auth.ts',
    'proxy.ts',
  ]);
  for (const [path, code] of files) {
    const [first, ...rest] = readFileSync(join(APP, path), 'utf8').split('\n');
    assert.equal(first, `// ${path}`, `${path} starts by naming itself, as its snippet does`);
    assert.equal(code, rest.join('\n'), `${path}: docs/OIDC.md shows the file as it is`);
  }
});

const why = !existsSync(CHROMIUM)
  ? `${CHROMIUM} not found`
  : !(await registryHas(`next-auth@${manifest.dependencies['next-auth']}`))
    ? 'the npm registry is not reachable (Next and next-auth are installed from it)'
    : false;

/** A copy of the app with the docs' snippets as its auth files, and its dependencies installed. */
async function prepare(work: string): Promise<string> {
  const dir = join(work, 'app');
  cpSync(APP, dir, {
    recursive: true,
    filter: (source) => !/[/\\](node_modules|\.next|test)$|next-env\.d\.ts$/.test(source),
  });
  for (const [path, code] of docsFiles()) writeFileSync(join(dir, path), `// ${path}\n${code}`);
  await npmInstall(dir);
  return dir;
}

describe('examples/next-authjs: Auth.js in Next.js against Tessera (issue 31)', {
  skip: why && !required ? why : false,
}, () => {
  let tessera: TestServer;
  let work: string;
  let browser: Browser;

  before(async () => {
    if (why) throw new Error(`required but ${why}`);
    bundleHostedAssets();
    tessera = await startServer('sqlite', {
      env: { ...RELAXED_LIMITS, TESSERA_ACCESS_TOKEN_TTL: '30', TESSERA_REFRESH_GRACE: '0' },
    });
    work = mkdtempSync(join(tmpdir(), 'tessera-authjs-'));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await tessera?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test(`Next ${manifest.dependencies.next}, next-auth ${manifest.dependencies['next-auth']}: sign-in, tokens verified against the JWKS, refresh, userinfo, logout`, {
    timeout: 900_000,
  }, async (t) => {
    const timings: string[] = [];
    let mark = Date.now();
    const lap = (what: string) => {
      timings.push(`${what} ${((Date.now() - mark) / 1000).toFixed(1)} s`);
      mark = Date.now();
    };
    const dir = await prepare(work);
    lap('npm install');
    // Next calls a 127.0.0.1 origin `localhost` (its request URLs), so the app is localhost's.
    const port = await freePort();
    const origin = `http://localhost:${port}`;
    const client = await registerClient(tessera, {
      client_name: 'Auth.js app',
      redirect_uris: [`${origin}/api/auth/callback/tessera`],
      post_logout_redirect_uris: [`${origin}/`],
      token_endpoint_auth_method: 'client_secret_basic',
      first_party: true,
    });
    const secret = randomBytes(32).toString('base64');
    const env = {
      ...process.env,
      NODE_ENV: 'production',
      NODE_OPTIONS: '',
      NEXT_TELEMETRY_DISABLED: '1',
      AUTH_SECRET: secret,
      AUTH_URL: origin,
      AUTH_TESSERA_ISSUER: tessera.url,
      AUTH_TESSERA_ID: client.client_id,
      AUTH_TESSERA_SECRET: client.client_secret!,
    };
    const built = await nextBuild(dir, env);
    assert.match(`${built.stdout}${built.stderr}`, new RegExp(`Next\\.js ${manifest.dependencies.next}`));
    assert.match(built.stdout, /Proxy/);
    lap('next build');

    const server = await startNext(dir, 'start', port, env);
    t.after(() => server.stop());
    lap('next start');

    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    t.after(() => context.close());
    const page = await context.newPage();
    const failures: string[] = [];
    page.on('response', (r) => r.status() >= 500 && failures.push(`${r.status()} ${r.url()}`));
    const email = 'authjs@example.com';

    // Signed out: the home page offers the sign-in; Auth.js sends the browser to Tessera.
    await page.goto(origin);
    await page.getByTestId('signed-out').waitFor();
    await accessible(page, 'home, signed out');
    await page.getByRole('button', { name: 'Sign in with Tessera' }).focus();
    await page.keyboard.press('Enter');
    await signInOnHostedPage(page, (to) => outboxCode(tessera.url, to), email, 'authjs', /\/account$/);
    assert.equal(page.url(), `${origin}/account`);
    assert.equal(await page.getByTestId('email').textContent(), email, 'the profile Auth.js read (userinfo)');
    assert.equal(await page.getByTestId('userinfo').textContent(), email, 'userinfo with the access token');
    await accessible(page, 'account');
    await page.screenshot({ path: join(ARTEFACTS, 'authjs-account.png') });
    lap('sign-in');

    // The session Auth.js keeps (an encrypted JWT in an HttpOnly cookie): the tokens Tessera issued,
    // checked here against Tessera's JWKS.
    const signedIn = await sessionOf(context, dir, secret);
    const discovery = (await tessera.request('GET', '/.well-known/openid-configuration')).body;
    const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri));
    const { payload: id } = await jwtVerify(signedIn.id_token, jwks, {
      issuer: tessera.url,
      audience: client.client_id,
      algorithms: ['ES256'],
    });
    assert.equal(id.azp, client.client_id);
    assert.deepEqual(id.amr, ['otp']);
    assert.equal(typeof id.nonce, 'string', 'Auth.js sent a nonce (checks: nonce) and Tessera echoed it');
    assert.equal(typeof id.auth_time, 'number');
    const { payload: access } = await jwtVerify(signedIn.access_token, jwks, {
      issuer: tessera.url,
      audience: tessera.project.api_key_id,
    });
    assert.equal(access.client_id, client.client_id);
    assert.equal(access.sub, id.sub);
    assert.equal(access.identifier, email);
    assert.ok(signedIn.refresh_token, 'offline_access: a refresh token');

    // Refresh: once the access token has expired, the next page renews it (proxy.ts, the jwt
    // callback's rotation). One refresh: with no grace window a second one would revoke the session.
    const expiresAt = await page.getByTestId('expires-at').textContent();
    assert.equal(expiresAt, new Date(signedIn.expires_at * 1000).toISOString());
    await sleep(signedIn.expires_at * 1000 - Date.now() + 1500);
    await page.reload();
    await page.getByTestId('userinfo').waitFor();
    assert.equal(await page.getByTestId('userinfo').textContent(), email, 'userinfo with the new token');
    const renewed = await sessionOf(context, dir, secret);
    assert.notEqual(renewed.refresh_token, signedIn.refresh_token, 'the refresh token rotated');
    assert.notEqual(renewed.access_token, signedIn.access_token);
    assert.ok(renewed.expires_at > signedIn.expires_at);
    assert.equal(
      await page.getByTestId('expires-at').textContent(),
      new Date(renewed.expires_at * 1000).toISOString(),
    );
    const { payload: renewedAccess } = await jwtVerify(renewed.access_token, jwks, {
      issuer: tessera.url,
      audience: tessera.project.api_key_id,
    });
    assert.equal(renewedAccess.sid, access.sid, 'the same session');
    await page.reload();
    assert.equal(await page.getByTestId('userinfo').textContent(), email);
    assert.equal(
      (await sessionOf(context, dir, secret)).refresh_token,
      renewed.refresh_token,
      'no second refresh',
    );
    lap('refresh');

    // Sign out: Auth.js's cookie goes, then Tessera's end_session_endpoint (id_token_hint) ends
    // the hosted session and the client's tokens, and returns to the home page.
    await page.getByRole('button', { name: 'Sign out' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/`);
    await page.getByTestId('signed-out').waitFor();
    assert.equal(
      (await context.cookies(origin)).find((c) => c.name === 'authjs.session-token'),
      undefined,
    );
    const refused = await tokenRequest(
      tessera,
      { grant_type: 'refresh_token', refresh_token: renewed.refresh_token },
      { authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}` },
    );
    assert.equal(refused.status, 400, 'the logout revoked the refresh token');
    assert.equal(refused.body.error, 'invalid_grant');
    // The hosted session ended too: signing in again asks who the user is.
    await page.getByRole('button', { name: 'Sign in with Tessera' }).click();
    await page.waitForURL(/\/oauth\/sign-in\?/);
    lap('logout');

    assert.deepEqual(failures, []);
    assert.doesNotMatch(server.log(), /\[auth\]\[error\]|Error:/, server.log());
    t.diagnostic(timings.join(', '));
  });
});

interface AuthjsSession {
  access_token: string;
  id_token: string;
  refresh_token: string;
  expires_at: number;
  error?: string;
}

/** The browser's Auth.js session cookie, decrypted with Auth.js's own `decode` and the app's secret. */
async function sessionOf(context: BrowserContext, dir: string, secret: string): Promise<AuthjsSession> {
  const name = 'authjs.session-token';
  const cookie = (await context.cookies()).find((c) => c.name === name);
  assert.ok(cookie, 'the session cookie is set');
  assert.ok(cookie.httpOnly, 'the session cookie is HttpOnly');
  const { decode } = (await import(pathToFileURL(join(dir, 'node_modules/@auth/core/jwt.js')).href)) as {
    decode(params: { token: string; secret: string; salt: string }): Promise<AuthjsSession | null>;
  };
  const session = await decode({ token: cookie.value, secret, salt: name });
  assert.ok(session, 'the session cookie decrypts');
  assert.equal(session.error, undefined);
  return session;
}

/** axe-core on the page: no violation, and nothing wider than 360 px. */
async function accessible(page: Page, name: string) {
  assert.deepEqual(await axeViolations(page), [], `${name}: axe violations`);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `${name}: the page is ${width} px wide at 360 px`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
