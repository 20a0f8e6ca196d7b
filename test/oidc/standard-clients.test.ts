// Real, unmodified third-party OpenID Connect clients (npm devDependencies) complete the
// authorization code flow against a real Tessera, the user signing in on the hosted pages in
// Chromium with the code from the development outbox. The clients' code is docs/OIDC.md's
// snippets, run as written (placeholders replaced): sign-in, ID token verified against the JWKS,
// userinfo, refresh, logout (openid-client); loopback redirect, refresh, revocation (oauth4webapi).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  freePort,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../packages/server/test/helpers/harness.js';
import { registerClient } from '../../packages/server/test/helpers/oidc.js';
import { bundleHostedAssets, launchChromium, ROOT, signInOnHostedPage, skipBrowser } from './browser.js';
import { oidcSnippets, substitute } from './snippets.js';

const PYTHON = '/usr/bin/python3';
const authlib = spawnSync(PYTHON, ['-c', 'import authlib, requests']).status === 0;

describe('standard OpenID Connect clients against Tessera (issue 31)', {
  skip: skipBrowser,
}, () => {
  let server: TestServer;
  let browser: Browser;
  let work: string;
  const children: ChildProcess[] = [];
  const code = oidcSnippets();

  before(async () => {
    bundleHostedAssets();
    server = await startServer('sqlite', { env: RELAXED_LIMITS });
    work = mkdtempSync(join(tmpdir(), 'tessera-oidc-'));
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
    browser = await launchChromium();
  });
  after(async () => {
    for (const child of children) child.kill();
    await browser?.close();
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Runs a snippet as its own process; `onLine` sees each line it prints. */
  function run(name: string, source: string, onLine: (line: string) => void = () => {}, python = false) {
    const file = join(work, python ? `${name}.py` : `${name}.mts`);
    writeFileSync(file, source);
    const [command, args] = python ? [PYTHON, [file]] : [process.execPath, ['--import', 'tsx', file]];
    const child = spawn(command, args, {
      cwd: work,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        onLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf('\n');
      }
    });
    const exited = new Promise<number>((resolve) => child.once('exit', (status) => resolve(status ?? -1)));
    return { child, exited, errors: () => errors };
  }

  const result = async (page: Page) => JSON.parse((await page.locator('#result').textContent())!);

  test('openid-client: sign-in, ID token verified against the JWKS, userinfo, refresh, logout', {
    timeout: 120_000,
  }, async () => {
    const port = await freePort();
    const app = `http://127.0.0.1:${port}`;
    const client = await registerClient(server, {
      client_name: 'openid-client app',
      redirect_uris: [`${app}/callback`],
      post_logout_redirect_uris: [`${app}/`],
      token_endpoint_auth_method: 'client_secret_basic',
      first_party: true,
    });
    const proc = run(
      'openid-client',
      substitute(code.get('oidc-openid-client')!, {
        issuer: server.url,
        clientId: client.client_id,
        secret: client.client_secret!,
        port,
      }),
    );
    for (let up = false; !up; ) {
      up = await fetch(app).then(
        () => true,
        () => false,
      );
      if (!up) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(proc.child.exitCode, null, proc.errors());
    }
    const page = await browser.newPage();
    await page.goto(`${app}/login`);
    const email = 'openid-client@example.com';
    await signInOnHostedPage(page, (to) => server.lastCode(to), email, 'openid-client', /\/callback\?/);
    assert.deepEqual(await result(page), { signedIn: email, amr: ['otp'] });
    await page.goto(`${app}/refresh`);
    assert.equal((await result(page)).refreshed, server.config.accessTokenTtl);
    // A second sign-in goes through the hosted session: no new code.
    const sent = server.outbox.list().length;
    await page.goto(`${app}/login`);
    await page.waitForURL(`${app}/callback?**`);
    assert.equal((await result(page)).signedIn, email);
    assert.equal(server.outbox.list().length, sent);
    await page.goto(`${app}/logout`);
    await page.waitForURL(`${app}/`);
    assert.deepEqual(await result(page), { signedIn: null });
    // The hosted session ended with the logout: signing in asks for a code again.
    await page.goto(`${app}/login`);
    await page.waitForURL(/\/oauth\/sign-in\?/);
    await page.close();
  });

  /**
   * A client that prints `Open <url>`, takes the code on a loopback port, and prints its result as
   * JSON: the browser signs in at the URL; the result is returned.
   */
  async function loopbackClient(name: string, source: string, email: string, python = false) {
    let open: (url: string) => void = () => {};
    const opened = new Promise<string>((resolve) => {
      open = resolve;
    });
    let printed: (line: string) => void = () => {};
    const done = new Promise<string>((resolve) => {
      printed = resolve;
    });
    const proc = run(
      name,
      source,
      (line) => {
        if (line.startsWith('Open ')) open(line.slice(5));
        else if (line.startsWith('{')) printed(line);
      },
      python,
    );
    const failed = proc.exited.then((status) =>
      Promise.reject(new Error(`${name} exited ${status}: ${proc.errors()}`)),
    );
    const url = await Promise.race([opened, failed]);
    const page = await browser.newPage();
    await page.goto(url);
    await signInOnHostedPage(page, (to) => server.lastCode(to), email, name, /127\.0\.0\.1:\d+\/callback\?/);
    const answer = JSON.parse(await Promise.race([done, failed]));
    assert.equal(await proc.exited, 0, proc.errors());
    await page.close();
    return answer;
  }

  test('oauth4webapi: a public client on a loopback port signs in, refreshes and revokes', {
    timeout: 120_000,
  }, async () => {
    const client = await registerClient(server, {
      client_name: 'oauth4webapi CLI',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const email = 'oauth4webapi@example.com';
    const source = substitute(code.get('oidc-oauth4webapi')!, {
      issuer: server.url,
      clientId: client.client_id,
    });
    const answer = await loopbackClient('oauth4webapi', source, email);
    assert.equal(answer.signedIn, email);
    assert.equal(answer.refreshed, server.config.accessTokenTtl);
  });

  test('Authlib (Python): client_secret_post, ID token verified against the JWKS, userinfo, refresh, revocation', {
    timeout: 120_000,
    skip: !authlib && 'needs /usr/bin/python3 with python3-authlib and python3-requests (Debian)',
  }, async () => {
    const client = await registerClient(server, {
      client_name: 'Authlib app',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'client_secret_post',
      first_party: true,
    });
    const email = 'authlib@example.com';
    const source = substitute(code.get('oidc-authlib')!, {
      issuer: server.url,
      clientId: client.client_id,
      secret: client.client_secret!,
    });
    const answer = await loopbackClient('authlib-app', source, email, true);
    assert.deepEqual(answer, { signedIn: email, amr: ['otp'], refreshed: server.config.accessTokenTtl });
  });
});
