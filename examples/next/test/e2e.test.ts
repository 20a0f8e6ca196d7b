// examples/next, built with `next build`, served with `next start` and driven in Chromium against a
// real Tessera, on the Next major create-next-app gives today (16: proxy.ts on the Node.js runtime,
// cacheComponents on) and the previous one (15: middleware.ts on the Edge runtime, no
// cacheComponents, as create-next-app 15 writes it). Next is not a dependency of the monorepo (it
// would add some 370 MB to every install): each major is installed with npm into a temporary copy
// of the app, with @tessera/* as the tarballs `npm pack` makes, as an outside app would install them.
// The registry must be reachable; without it (or without Chromium) the test is skipped, visibly,
// unless TESSERA_TEST_REQUIRE_SERVICES=1. TESSERA_TEST_NEXT_MAJORS=16 runs one major only.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../../packages/server/test/helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../../../packages/server/test/helpers/harness.js';
import { assertSessionCookies } from '../../../packages/ssr/test/browser-cookies.js';
import { nextBuild, npmInstall, registryHas, startNext } from '../../../test/helpers/next-app.js';

const run = promisify(execFile);
const APP = fileURLToPath(new URL('..', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test-artifacts', 'examples-next');
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';

/** The Next versions tested: the app's own (16) and the last release of the previous major. */
const NEXT_VERSIONS: Record<string, string> = {
  '16': JSON.parse(readFileSync(join(APP, 'package.json'), 'utf8')).dependencies.next,
  '15': '15.5.29',
};
const majors = (process.env.TESSERA_TEST_NEXT_MAJORS ?? '16,15').split(',').map((m) => m.trim());

const why = !existsSync(CHROMIUM)
  ? `${CHROMIUM} not found`
  : !(await registryHas('next@16'))
    ? 'the npm registry is not reachable (Next is installed from it)'
    : false;

/** Packs @tessera/core, verify and ssr from fresh builds, once for every major. */
async function packTessera(into: string): Promise<void> {
  await run('npm', ['run', 'build'], { cwd: ROOT, timeout: 300_000 });
  await run(process.execPath, [join(APP, 'scripts', 'pack-tessera.mjs'), into], { timeout: 120_000 });
}

/** A copy of the app in its own folder with `next@version` installed; Next 15 gets its own names. */
async function prepare(work: string, tarballs: string, major: string): Promise<string> {
  const dir = join(work, `next${major}`);
  cpSync(APP, dir, {
    recursive: true,
    filter: (source) => !/[/\\](node_modules|\.next|\.tessera|test|scripts)$|next-env\.d\.ts$/.test(source),
  });
  cpSync(tarballs, join(dir, '.tessera'), { recursive: true });
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  manifest.dependencies.next = NEXT_VERSIONS[major];
  manifest.devDependencies['axe-core'] = '^4.10.0'; // the accessibility check of this test only
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  if (major === '15') {
    // Next 15 knows no proxy.ts nor cacheComponents: what its create-next-app and docs give.
    const proxy = readFileSync(join(dir, 'proxy.ts'), 'utf8');
    assert.match(proxy, /export async function proxy\(/);
    writeFileSync(
      join(dir, 'middleware.ts'),
      proxy.replace('export async function proxy(', 'export async function middleware('),
    );
    rmSync(join(dir, 'proxy.ts'));
    writeFileSync(
      join(dir, 'next.config.ts'),
      "import type { NextConfig } from 'next';\n\nconst nextConfig: NextConfig = {};\n\nexport default nextConfig;\n",
    );
  }
  await npmInstall(dir);
  return dir;
}

describe('examples/next in headless Chromium', { skip: why && !required ? why : false }, () => {
  let tessera: TestServer;
  let work: string;
  let tarballs: string;
  let browser: Browser;

  before(async () => {
    if (why) throw new Error(`required but ${why}`);
    tessera = await startServer('sqlite', { env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
    work = mkdtempSync(join(tmpdir(), 'tessera-next-'));
    tarballs = join(work, 'tarballs');
    await packTessera(tarballs);
    browser = await launchChromium();
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await tessera?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  for (const major of majors) {
    test(`Next ${major}: next build, next start, sign in, renew, sign out`, {
      timeout: 900_000,
    }, async (t) => {
      const dir = await prepare(work, tarballs, major);
      const port = await freePort();
      const origin = `http://localhost:${port}`;
      const env = {
        ...process.env,
        NODE_ENV: 'production',
        NODE_OPTIONS: '',
        NEXT_TELEMETRY_DISABLED: '1',
        TESSERA_ISSUER: tessera.url,
        TESSERA_API_KEY_ID: tessera.project.api_key_id,
        APP_ORIGIN: origin,
      };
      const built = await nextBuild(dir, env);
      const buildLog = `${built.stdout}\n${built.stderr}`;
      assert.match(buildLog, new RegExp(`Next\\.js ${major}\\.`), 'the intended Next major was built');
      assert.doesNotMatch(buildLog, /Date\.now\(\)|prerender(ing)? error|Error occurred prerendering/i);
      assert.match(buildLog, major === '15' ? /Middleware/ : /Proxy/);

      const server = await startNext(dir, 'start', port, env);
      t.after(() => server.stop());

      const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
      t.after(() => context.close());
      const page = await context.newPage();
      const failures: string[] = [];
      page.on('response', (r) => r.status() >= 500 && failures.push(`${r.status()} ${r.url()}`));
      page.on('request', (r) => !r.url().startsWith(origin) && failures.push(`off-origin ${r.url()}`));
      await signInAndOut(page, context, origin, major, dir);
      assert.deepEqual(failures, []);
      assert.doesNotMatch(server.log(), /Date\.now\(\)|Error:|node:crypto|Failed to load/, server.log());
      await server.stop();
      if (readFileSync(join(dir, 'next.config.ts'), 'utf8').includes('cacheComponents: true')) {
        await devRendersAtRequestTime(dir, env);
      }
    });
  }

  /**
   * `next dev` checks what `next build` and `next start` do not: with Cache Components and Partial
   * Prefetching, a Server Component that reads the clock before a request-time API (verifying the
   * session's token does) logs "encountered the unstable value `Date.now()` while prerendering" on
   * every request. readSession awaits `connection()` first, so a signed-in page logs nothing.
   */
  async function devRendersAtRequestTime(dir: string, env: NodeJS.ProcessEnv): Promise<void> {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const dev = await startNext(dir, 'dev', port, { ...env, NODE_ENV: 'development', APP_ORIGIN: origin });
    try {
      const identifier = 'next-dev@example.com';
      const { access_token } = await tessera.signIn(identifier);
      const headers = { cookie: `__Host-tessera-access=${access_token}` };
      for (const path of ['/account', '/', '/account']) {
        const page = await fetch(`${origin}${path}`, { headers, redirect: 'manual' });
        assert.equal(page.status, 200, path);
        assert.match(
          await page.text(),
          new RegExp(identifier.replace('.', '\\.')),
          `${path} renders the session`,
        );
      }
      // The check runs beside the render: give its output the time to reach the log.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.doesNotMatch(dev.log(), /Date\.now\(\)|unstable value|Error:/, dev.log());
    } finally {
      await dev.stop();
    }
  }

  /** The whole user journey, keyboard-driven, with an accessibility check on every page. */
  async function signInAndOut(
    page: Page,
    context: BrowserContext,
    origin: string,
    major: string,
    dir: string,
  ) {
    const checkAccessibility = (name: string) => accessible(page, dir, name);
    const identifier = `next${major}@example.com`;
    const cookie = async (name: string) => (await context.cookies(origin)).find((c) => c.name === name);
    const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `next${major}-${name}.png`) });

    // Signed out, the proxy sends /account to the sign-in page.
    await page.goto(`${origin}/account`);
    assert.match(page.url(), /\/signin\?redirect_to=%2Faccount$/);
    await checkAccessibility('sign-in');
    await shot('signin');
    await page.keyboard.press('Tab');
    await page.keyboard.type(identifier);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/signin\/code\?next=%2Faccount&challenge_id=/);
    const code = tessera.lastCode(identifier);

    // A mistyped code keeps the same challenge: the user stays on the code step.
    await page.getByLabel('Code').fill(code === '000000' ? '111111' : '000000');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/signin\/code\?next=%2Faccount&challenge_id=.+&error=invalid_code$/);
    assert.equal(await page.getByTestId('error').textContent(), 'Error: invalid_code');
    await checkAccessibility('code with an error');
    await shot('code-error');
    await page.getByLabel('Code').fill(code);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/account`);
    await page.getByTestId('identifier').waitFor();
    assert.equal(await page.getByTestId('identifier').textContent(), identifier);
    assert.equal(await page.getByTestId('method').textContent(), 'OTP');
    await checkAccessibility('account');
    await shot('account');

    await assertSessionCookies(context, origin);
    assert.doesNotMatch(await page.evaluate(() => document.cookie), /tessera-refresh|tessera-access/);

    // The access cookie gone (expired): the proxy renews before the page renders.
    const refresh = (await cookie('__Host-tessera-refresh'))!.value;
    await context.clearCookies({ name: '__Host-tessera-access' });
    await page.reload();
    await page.getByTestId('identifier').waitFor();
    assert.equal(await page.getByTestId('identifier').textContent(), identifier);
    assert.notEqual((await cookie('__Host-tessera-refresh'))!.value, refresh, 'the refresh token rotated');
    assert.ok(await cookie('__Host-tessera-access'));

    // Sign out: revoked at Tessera, cookies gone, home page signed out.
    const last = (await cookie('__Host-tessera-refresh'))!.value;
    await page.getByRole('button', { name: 'Sign out' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/`);
    await page.getByTestId('signed-out').waitFor();
    await checkAccessibility('home');
    assert.equal(await cookie('__Host-tessera-refresh'), undefined);
    assert.equal(await cookie('__Host-tessera-access'), undefined);
    const grant = await tessera.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: last, client_id: tessera.project.api_key_id },
    });
    assert.equal(grant.status, 400, 'the refresh token was revoked');
  }

  /** axe-core (installed with the app) on the page: no violation, and nothing wider than 360 px. */
  async function accessible(page: Page, dir: string, name: string) {
    const axe = readFileSync(join(dir, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
    await page.addScriptTag({ content: axe });
    const violations = await page.evaluate(async () => {
      // biome-ignore lint/suspicious/noExplicitAny: axe is injected as a global script
      const result = await (window as any).axe.run(document);
      return result.violations.map((v: { id: string; nodes: unknown[] }) => `${v.id} (${v.nodes.length})`);
    });
    assert.deepEqual(violations, [], `${name}: axe violations`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 360, `${name}: the page is ${width} px wide at 360 px`);
  }
});
