// The snippets README.md and docs/APPS.md lead with, run as written. Each is marked in the Markdown
// with `<!-- snippet: name -->` before its code fence; this test takes it from there, checks both
// documents carry the same text, makes only the substitutions in SUBSTITUTE (placeholders → this
// test's servers), and runs it against a real Tessera server: backends and the SSR app as
// processes (through tsx), the SPA and React snippets bundled with esbuild in Chromium, the React
// Native snippet bundled for Node without browser globals and with a stand-in for expo-secure-store.
// Package snippets (PACKAGE_SNIPPETS: @tessera/admin's) are in the package's README and in the guide
// that presents it, the same text in both, and run as processes too.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createVerifier } from '@tessera/verify';
import { build } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../packages/server/test/helpers/chromium.js';
import {
  basicAuth,
  freePort,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../packages/server/test/helpers/harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = ['README.md', 'docs/APPS.md'];
const NAMES = [
  'spa',
  'react',
  'ssr-express',
  'react-native',
  'backend-express',
  'backend-fastify',
  'backend-hono',
] as const;
type Name = (typeof NAMES)[number];
/** A package's snippet: in its README and in the guide that presents it, the same text. */
const PACKAGE_SNIPPETS = { admin: ['packages/admin/README.md', 'docs/MANAGING-USERS.md'] } as const;
const noChromium = !existsSync(CHROMIUM) && `${CHROMIUM} not found`;

/** The marked snippets of one document, by name. */
function snippetsOf(file: string): Map<string, string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found = new Map<string, string>();
  for (const match of text.matchAll(/<!-- snippet: ([\w-]+) -->\n```\w+\n([\s\S]*?)\n```\n/g)) {
    assert.ok(!found.has(match[1]!), `${file}: snippet ${match[1]} is marked twice`);
    found.set(match[1]!, `${match[2]!}\n`);
  }
  return found;
}

/** The placeholders a snippet may use, and what this test puts in their place: nothing else changes. */
interface Values {
  issuer: string;
  apiKeyId: string;
  port: number;
  api?: string;
}
function substitute(code: string, v: Values): string {
  const out = code
    .replaceAll('https://auth.example.com', v.issuer)
    .replaceAll("'pk_…'", `'${v.apiKeyId}'`)
    .replaceAll('https://api.example.com', v.api ?? 'https://api.example.com')
    .replaceAll('3000', String(v.port));
  return out;
}

describe('documentation snippets', { timeout: 300_000 }, () => {
  const snippets = new Map<Name, string>();
  const packageSnippets = new Map<keyof typeof PACKAGE_SNIPPETS, string>();
  let tessera: TestServer;
  let work: string;
  const children: ChildProcess[] = [];
  let browser: Browser | undefined;

  before(async () => {
    const [readme, apps] = DOCS.map(snippetsOf) as [Map<string, string>, Map<string, string>];
    for (const name of NAMES) {
      assert.ok(readme.has(name), `README.md has no snippet marked "${name}"`);
      assert.ok(apps.has(name), `docs/APPS.md has no snippet marked "${name}"`);
      assert.equal(apps.get(name), readme.get(name), `snippet ${name} differs between the documents`);
      snippets.set(name, readme.get(name)!);
    }
    for (const [name, [home, guide]] of Object.entries(PACKAGE_SNIPPETS)) {
      const text = snippetsOf(home).get(name);
      assert.ok(text, `${home} has no snippet marked "${name}"`);
      assert.equal(snippetsOf(guide).get(name), text, `snippet ${name} differs between ${home} and ${guide}`);
      packageSnippets.set(name as keyof typeof PACKAGE_SNIPPETS, text);
    }
    tessera = await startServer('sqlite', { env: RELAXED_LIMITS });
    work = mkdtempSync(join(tmpdir(), 'tessera-snippets-'));
    // The snippets import packages by name: resolve them from the workspace.
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
  });

  after(async () => {
    for (const child of children) child.kill();
    await browser?.close();
    await tessera?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('every marked snippet is one the test runs', () => {
    for (const file of DOCS) assert.deepEqual([...snippetsOf(file).keys()].sort(), [...NAMES].sort(), file);
    for (const [name, files] of Object.entries(PACKAGE_SNIPPETS))
      for (const file of files) assert.deepEqual([...snippetsOf(file).keys()], [name], file);
  });

  test('admin: finds the user, lists their sessions, sets a claim, signs them out everywhere, reads the audit log', async () => {
    const bundle = await tessera.signIn('ada@example.com');
    const sid = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sid;
    const file = join(work, 'admin.mts');
    const v = { issuer: tessera.url, apiKeyId: tessera.project.api_key_id, port: 0 };
    writeFileSync(file, substitute(packageSnippets.get('admin')!, v));
    const child = spawn(process.execPath, ['--conditions=tessera-source', '--import', 'tsx', file], {
      cwd: work,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        TESSERA_API_KEY_ID: tessera.project.api_key_id,
        TESSERA_API_KEY_SECRET: tessera.project.api_key_secret,
      },
    });
    children.push(child);
    let out = '';
    let errors = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      errors += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, errors);
    const lines = out.trim().split('\n');
    assert.match(lines[0]!, new RegExp(`^session ${sid} OTP \\d{4}-`));
    assert.equal(lines[1], 'revoked 1');
    assert.match(lines[2]!, /^event session\.revoked \d{4}-/);
    assert.equal(lines.length, 3, out);
    const verified = await tessera.request('POST', '/verify', {
      body: { oauth_token: { access_token: bundle.access_token } },
    });
    assert.equal(verified.body.success, false, 'signed out everywhere');
    const sub = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sub;
    const claims = await tessera.request('GET', `/v1/users/${sub}/claims`, {
      headers: { authorization: basicAuth(tessera.project) },
    });
    assert.deepEqual(claims.body, { claims: { plan: 'pro' } });
  });

  /** Runs a Node snippet as its own process (tsx, workspace sources) and waits for its port. */
  async function runProcess(name: Name, v: Values): Promise<string> {
    const file = join(work, `${name}.mts`);
    writeFileSync(file, substitute(snippets.get(name)!, v));
    const child = spawn(process.execPath, ['--conditions=tessera-source', '--import', 'tsx', file], {
      cwd: work,
      env: { ...process.env, NODE_OPTIONS: '', TESSERA_API_KEY_ID: v.apiKeyId },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const url = `http://localhost:${v.port}`;
    let exited: number | null = null;
    child.once('exit', (code) => {
      exited = code ?? -1;
    });
    for (;;) {
      if (exited !== null) throw new Error(`snippet ${name} exited with ${exited}: ${errors}`);
      const up = await fetch(url, { redirect: 'manual' }).then(
        () => true,
        () => false,
      );
      if (up) return url;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  for (const name of ['backend-express', 'backend-fastify', 'backend-hono'] as const) {
    test(`${name}: /api/me answers 401 without a token and the user with a real access token`, async () => {
      const v = { issuer: tessera.url, apiKeyId: tessera.project.api_key_id, port: await freePort() };
      const url = await runProcess(name, v);
      const bundle = await tessera.signIn(`${name}@example.com`);
      const sub = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sub;
      const me = await fetch(`${url}/api/me`, {
        headers: { Authorization: `Bearer ${bundle.access_token}` },
      });
      assert.equal(me.status, 200);
      assert.deepEqual(await me.json(), { user: sub });
      const none = await fetch(`${url}/api/me`);
      assert.equal(none.status, 401);
      assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
      const forged = await fetch(`${url}/api/me`, { headers: { Authorization: 'Bearer not.a.token' } });
      assert.equal(forged.status, 401);
    });
  }

  test('react-native: OTP sign-in through the storage adapter, kept across a restart, without browser APIs', async () => {
    const store = join(work, 'secure-store.json');
    const shim = join(work, 'expo-secure-store.mjs');
    // Stand-in for expo-secure-store: its key rule, values in a file (the Keychain outlives the app).
    writeFileSync(
      shim,
      `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const file = ${JSON.stringify(store)};
const read = () => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {});
const check = (key) => { if (!/^[\\w.-]+$/.test(key)) throw new Error('Invalid key provided to SecureStore: ' + key); };
export async function getItemAsync(key) { check(key); return read()[key] ?? null; }
export async function setItemAsync(key, value) { check(key); writeFileSync(file, JSON.stringify({ ...read(), [key]: value })); }
export async function deleteItemAsync(key) { check(key); const all = read(); delete all[key]; writeFileSync(file, JSON.stringify(all)); }
`,
    );
    const v = { issuer: tessera.url, apiKeyId: tessera.project.api_key_id, port: 0 };
    writeFileSync(join(work, 'react-native.ts'), substitute(snippets.get('react-native')!, v));
    // The app: React Native has no window, localStorage, IndexedDB, BroadcastChannel or Web Locks.
    writeFileSync(
      join(work, 'rn-app.ts'),
      `for (const name of ['window', 'document', 'localStorage', 'indexedDB', 'BroadcastChannel', 'navigator'])
  Reflect.deleteProperty(globalThis, name);
const { tessera } = await import('./react-native.ts');
const [step, identifier] = process.argv.slice(2);
if (step === 'start') {
  console.log(JSON.stringify(await tessera.otp.start(identifier!)));
} else if (step === 'complete') {
  const [challengeId, code] = (await new Promise<string>((r) => process.stdin.once('data', (d) => r(String(d))))).trim().split(' ');
  await tessera.otp.complete(challengeId!, code!);
  console.log(JSON.stringify({ token: await tessera.getAccessToken() }));
} else {
  console.log(JSON.stringify({ user: await tessera.getUser(), token: await tessera.getAccessToken() }));
}
tessera.close();
`,
    );
    const bundle = join(work, 'rn-app.mjs');
    await build({
      entryPoints: [join(work, 'rn-app.ts')],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      conditions: ['tessera-source'],
      alias: { 'expo-secure-store': shim },
      logLevel: 'silent',
    });
    const app = (args: string[], input?: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const child = spawn(process.execPath, [bundle, ...args], {
          env: { ...process.env, NODE_OPTIONS: '' },
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
        });
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
        });
        child.stdin.end(input);
        child.once('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}: ${err}`)),
        );
      });
    const identifier = 'native@example.com';
    const { challengeId } = (await app(['start', identifier])) as { challengeId: string };
    const signedIn = await app(['complete'], `${challengeId} ${tessera.lastCode(identifier)}\n`);
    assert.equal(typeof signedIn.token, 'string');
    const restarted = await app(['restart']);
    assert.equal(restarted.token, signedIn.token, 'the session came back from the secure store');
    assert.equal((restarted.user as { identifier: string }).identifier, identifier);
  });

  /** Serves a page with a bundled snippet on localhost, and /api/me checking the Bearer token. */
  async function servePage(script: string, port: number, apiKeyId: string): Promise<Server> {
    const verifier = createVerifier({ issuer: tessera.url, apiKeyId });
    const server = createServer(async (req, res) => {
      if (req.url === '/api/me') {
        try {
          const claims = await verifier.verifyAuthorization(req.headers.authorization);
          res
            .writeHead(200, { 'Content-Type': 'application/json' })
            .end(JSON.stringify({ user: claims.sub }));
        } catch {
          res.writeHead(401).end();
        }
        return;
      }
      if (req.url === '/page.js') {
        res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(script);
        return;
      }
      res
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(
          '<!doctype html><title>snippet</title><div id="root"></div><script type="module" src="/page.js"></script>',
        );
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return server;
  }

  async function bundleForBrowser(name: 'spa' | 'react', v: Values): Promise<string> {
    const file = join(work, name === 'react' ? 'react.tsx' : 'spa.ts');
    writeFileSync(file, substitute(snippets.get(name)!, v));
    let entry = file;
    if (name === 'spa') {
      entry = join(work, 'spa-entry.ts');
      writeFileSync(
        entry,
        "import * as spa from './spa.ts';\n(globalThis as { spa?: unknown }).spa = spa;\n",
      );
    }
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      jsx: 'automatic',
      conditions: ['tessera-source'],
      define: { 'process.env.NODE_ENV': '"production"' },
      write: false,
      logLevel: 'silent',
    });
    return result.outputFiles[0]!.text;
  }

  async function project(name: string, port: number): Promise<string> {
    const origin = `http://localhost:${port}`;
    return (await tessera.ctx.projects.create({ name, origins: [origin], rpId: 'localhost' })).api_key_id;
  }

  async function newPage() {
    browser ??= await launchChromium();
    return (await browser.newContext()).newPage();
  }

  test('spa: signs in by code in Chromium and calls an API with the Bearer token', {
    skip: noChromium,
  }, async () => {
    const port = await freePort();
    const apiKeyId = await project('snippet-spa', port);
    const origin = `http://localhost:${port}`;
    const script = await bundleForBrowser('spa', { issuer: tessera.url, apiKeyId, port, api: origin });
    const server = await servePage(script, port, apiKeyId);
    try {
      const page = await newPage();
      const identifier = 'spa@example.com';
      await page.exposeFunction('askForCode', () => tessera.lastCode(identifier));
      await page.goto(origin);
      await page.waitForFunction(() => 'spa' in globalThis);
      const profile = await page.evaluate(async (email) => {
        type Spa = {
          signIn(e: string, ask: () => Promise<string>): Promise<void>;
          loadProfile(): Promise<unknown>;
        };
        const g = globalThis as unknown as { spa: Spa; askForCode(): Promise<string> };
        await g.spa.signIn(email, () => g.askForCode());
        return g.spa.loadProfile();
      }, identifier);
      assert.equal(typeof (profile as { user: unknown }).user, 'string');
      await page.waitForFunction((email) => document.body.dataset.user === email, identifier);
    } finally {
      server.close();
    }
  });

  test('react: the sign-in form signs in by code, shows the user, signs out', {
    skip: noChromium,
  }, async () => {
    const port = await freePort();
    const apiKeyId = await project('snippet-react', port);
    const script = await bundleForBrowser('react', { issuer: tessera.url, apiKeyId, port });
    const server = await servePage(script, port, apiKeyId);
    try {
      const page = await newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`http://localhost:${port}`);
      const identifier = 'react-snippet@example.com';
      await page.getByLabel('E-mail').fill(identifier);
      await page.getByRole('button', { name: 'Send me a code' }).click();
      // The code field shows once the code was sent; only then is it in the outbox.
      const code = page.getByLabel('Code');
      await code.waitFor();
      await code.fill(tessera.lastCode(identifier));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: `Sign out ${identifier}` }).click();
      await page.getByLabel('E-mail').waitFor();
      assert.deepEqual(problems, []);
    } finally {
      server.close();
    }
  });

  test('ssr-express: a protected page sends to the sign-in form; signing in by code shows the user', {
    skip: noChromium,
  }, async () => {
    const port = await freePort();
    const apiKeyId = await project('snippet-ssr', port);
    const url = await runProcess('ssr-express', { issuer: tessera.url, apiKeyId, port });
    const page = await newPage();
    await page.goto(url);
    assert.match(new URL(page.url()).pathname, /^\/signin$/);
    const identifier = 'ssr-snippet@example.com';
    await page.getByLabel('E-mail').fill(identifier);
    await page.getByRole('button', { name: 'Continue' }).click();
    // The code page shows once the code was sent; only then is it in the outbox.
    await page.getByLabel('Code').waitFor();
    await page.getByLabel('Code').fill(tessera.lastCode(identifier));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText(`Hello ${identifier}`).waitFor();
  });
});
