// The packages as a user gets them: built, packed with `npm pack`, installed from the tarballs into
// a fresh app outside the monorepo (one `npm install`), then used from an ESM and a CommonJS
// Express app against a real Tessera server, type-checked as TypeScript (ESM and CommonJS), and
// bundled with esbuild for a page that signs in from Chromium.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGES = ['core', 'sqlite', 'server', 'verify', 'client', 'ssr', 'react', 'ui'];
const CHROMIUM = process.env.TESSERA_CHROMIUM ?? '/usr/bin/chromium';
// Child processes run what a user runs: no tsx, no tessera-source condition.
const CHILD_ENV = { ...process.env, NODE_OPTIONS: '' };
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env: CHILD_ENV,
    maxBuffer: 1 << 24,
  });

interface Packed {
  name: string;
  filename: string;
  files: { path: string }[];
}

/** A tiny Express app protected by @tessera/verify/express; ESM and CommonJS spellings. */
const APP_BODY = `
const app = express();
const auth = tesseraAuth({ issuer: process.env.ISSUER, apiKeyId: process.env.API_KEY_ID });
app.get('/me', auth, (req, res) => res.json({ sub: req.tessera.sub, method: req.tessera.authentication_method }));
app.get('/admin', auth, tesseraGuard(requiredScopes('admin')), (_req, res) => res.json({ admin: true }));
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;
const ESM_APP = `import express from 'express';
import { requiredScopes, tesseraAuth, tesseraGuard } from '@tessera/verify/express';
${APP_BODY}`;
const CJS_APP = `'use strict';
const express = require('express');
const { requiredScopes, tesseraAuth, tesseraGuard } = require('@tessera/verify/express');
${APP_BODY}`;

// Every entry point loads with require() (fails with ERR_REQUIRE_ASYNC_MODULE on top-level await).
const REQUIRE_ALL = `'use strict';
const entries = ['@tessera/core', '@tessera/client', '@tessera/verify', '@tessera/verify/express',
  '@tessera/verify/fastify', '@tessera/verify/hono'];
console.log(JSON.stringify(Object.fromEntries(entries.map((e) => [e, Object.keys(require(e)).sort()]))));
`;

const TS_ESM = `import { createTesseraClient } from '@tessera/client';
import { type AccessTokenClaims, createVerifier, requiredScopes, TesseraVerifyError } from '@tessera/verify';
import { tesseraAuth } from '@tessera/verify/express';
import express from 'express';

const verifier = createVerifier({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1' });
const app = express();
app.get('/me', tesseraAuth(verifier, { optional: true, requirements: [requiredScopes('a')] }), (req, res) => {
  const claims: AccessTokenClaims | undefined = req.tessera;
  res.json({ sub: claims?.sub });
});
const client = createTesseraClient({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1' });
export const used: unknown[] = [app, client, TesseraVerifyError];
`;
const TS_CJS = `import express = require('express');
import verify = require('@tessera/verify/express');
import core = require('@tessera/core');

const app = express();
app.get('/me', verify.tesseraAuth({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1' }), (req, res) => {
  const sub: string | undefined = req.tessera?.sub;
  res.json({ sub });
});
export = [app, core];
`;
const TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2023', 'dom'],
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: [],
  },
  files: ['check.mts', 'check.cts'],
};

const PAGE_ENTRY = `import { createTesseraClient } from '@tessera/client';
globalThis.packTest = { createTesseraClient };
`;

describe('packed packages', { timeout: 600_000 }, () => {
  let work: string;
  let appDir: string;
  let packed: Packed[];
  let tessera: TestServer;
  const children: ChildProcess[] = [];

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'tessera-pack-'));
    appDir = join(work, 'app');
    await npm(['run', 'build'], ROOT);
    const { stdout } = await npm(
      ['pack', '--json', '--pack-destination', work, ...PACKAGES.flatMap((p) => ['-w', `packages/${p}`])],
      ROOT,
    );
    packed = JSON.parse(stdout) as Packed[];
    const tarball = (name: string) => join(work, packed.find((p) => p.name === name)!.filename);
    mkdirSync(appDir);
    writeFileSync(join(appDir, 'package.json'), JSON.stringify({ name: 'pack-test-app', private: true }));
    // One install: the tarballs, and what the apps use from the registry (or the npm cache).
    await npm(
      [
        'install',
        '--prefer-offline',
        '--ignore-scripts',
        tarball('@tessera/core'),
        tarball('@tessera/verify'),
        tarball('@tessera/client'),
        'express@^5.1.0',
        '@types/express@^5.0.5',
      ],
      appDir,
    );
    writeFileSync(join(appDir, 'esm.mjs'), ESM_APP);
    writeFileSync(join(appDir, 'cjs.cjs'), CJS_APP);
    writeFileSync(join(appDir, 'require-all.cjs'), REQUIRE_ALL);
    writeFileSync(join(appDir, 'check.mts'), TS_ESM);
    writeFileSync(join(appDir, 'check.cts'), TS_CJS);
    writeFileSync(join(appDir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    writeFileSync(join(appDir, 'page.mjs'), PAGE_ENTRY);
    tessera = await startServer('sqlite', { env: RELAXED_LIMITS });
  });

  after(async () => {
    for (const child of children) child.kill();
    await tessera?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('each tarball holds only dist, bin, README, LICENSE and package.json', () => {
    assert.deepEqual(packed.map((p) => p.name).sort(), PACKAGES.map((p) => `@tessera/${p}`).sort());
    for (const pkg of packed) {
      const paths = pkg.files.map((f) => f.path);
      for (const must of ['LICENSE', 'README.md', 'package.json'])
        assert.ok(paths.includes(must), `${pkg.name}: ${must}`);
      const stray = paths.filter(
        (p) => !/^(LICENSE|README\.md|package\.json|dist\/[\w./-]+\.(js|d\.ts)|bin\/tessera\.js)$/.test(p),
      );
      assert.deepEqual(stray, [], `${pkg.name} ships only what users need`);
    }
  });

  it('installed packages point every export at a file that exists, with types and a require-able default', () => {
    for (const name of ['core', 'verify', 'client']) {
      const dir = join(appDir, 'node_modules', '@tessera', name);
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      for (const field of [
        'repository',
        'homepage',
        'bugs',
        'license',
        'engines',
        'keywords',
        'sideEffects',
        'files',
      ]) {
        assert.ok(manifest[field] !== undefined, `@tessera/${name}: ${field}`);
      }
      assert.equal(manifest.publishConfig?.access, 'public');
      for (const [subpath, target] of Object.entries(manifest.exports as Record<string, unknown>)) {
        if (typeof target === 'string') continue;
        const conditions = target as Record<string, string>;
        assert.ok(existsSync(join(dir, conditions['types']!)), `${name} ${subpath} types`);
        assert.ok(existsSync(join(dir, conditions['default']!)), `${name} ${subpath} default`);
      }
      const js = readdirSync(join(dir, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) =>
        f.endsWith('.js'),
      );
      for (const file of js) {
        assert.ok(
          !readFileSync(join(dir, 'dist', file), 'utf8').includes('sourceMappingURL'),
          `${name}/${file}`,
        );
      }
    }
  });

  it('CommonJS require() loads every entry point', async () => {
    const { stdout, stderr } = await run(process.execPath, ['require-all.cjs'], {
      cwd: appDir,
      env: CHILD_ENV,
    });
    const exported = JSON.parse(stdout) as Record<string, string[]>;
    assert.ok(exported['@tessera/verify/express']!.includes('tesseraAuth'));
    assert.ok(exported['@tessera/verify']!.includes('createVerifier'));
    assert.ok(exported['@tessera/client']!.includes('createTesseraClient'));
    assert.ok(exported['@tessera/core']!.length > 0);
    assert.doesNotMatch(stderr, /Error/);
  });

  it('type-checks as TypeScript from ESM and CommonJS files', async () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: appDir,
      env: CHILD_ENV,
    }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout || String(err),
    );
    assert.equal(result, '', 'tsc reports no errors');
  });

  for (const [kind, file] of [
    ['ESM', 'esm.mjs'],
    ['CommonJS', 'cjs.cjs'],
  ] as const) {
    it(`the ${kind} Express app protects a route with @tessera/verify/express`, async () => {
      const url = await startApp(file);
      const bundle = await tessera.signIn(`pack-${kind.toLowerCase()}@example.com`);
      const me = await fetch(`${url}/me`, { headers: { Authorization: `Bearer ${bundle.access_token}` } });
      assert.equal(me.status, 200);
      const claims = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString());
      assert.deepEqual(await me.json(), { sub: claims.sub, method: 'OTP' });
      const none = await fetch(`${url}/me`);
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="tessera"');
      const bad = await fetch(`${url}/me`, { headers: { Authorization: 'Bearer not.a.token' } });
      assert.equal(bad.status, 401);
      const admin = await fetch(`${url}/admin`, {
        headers: { Authorization: `Bearer ${bundle.access_token}` },
      });
      assert.equal(admin.status, 403);
    });
  }

  it('a page bundled with esbuild signs in with @tessera/client in Chromium', {
    skip: !existsSync(CHROMIUM) && `${CHROMIUM} not found`,
  }, async () => {
    const result = await build({
      entryPoints: [join(appDir, 'page.mjs')],
      absWorkingDir: appDir,
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    const script = Buffer.from(result.outputFiles[0]!.contents);
    const page = await servePage(script);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    });
    try {
      const origin = page.url.replace('127.0.0.1', 'localhost');
      const project = await tessera.ctx.projects.create({
        name: 'pack',
        origins: [origin],
        rpId: 'localhost',
      });
      const tab = await browser.newPage();
      await tab.goto(`${origin}/`);
      await tab.waitForFunction(() => 'packTest' in globalThis);
      const identifier = 'pack-browser@example.com';
      const challengeId = await tab.evaluate(
        async ({ issuer, apiKeyId, identifier }) => {
          type Client = { otp: { start(i: string): Promise<{ challengeId: string }> } };
          const g = globalThis as unknown as {
            packTest: { createTesseraClient(o: object): Client };
            client: Client;
          };
          g.client = g.packTest.createTesseraClient({ issuer, apiKeyId });
          return (await g.client.otp.start(identifier)).challengeId;
        },
        { issuer: tessera.url, apiKeyId: project.api_key_id, identifier },
      );
      const accessToken = await tab.evaluate(
        async ({ challengeId, code }) => {
          type Client = {
            otp: { complete(id: string, code: string): Promise<unknown> };
            getAccessToken(): Promise<string | null>;
          };
          const { client } = globalThis as unknown as { client: Client };
          await client.otp.complete(challengeId, code);
          return client.getAccessToken();
        },
        { challengeId, code: tessera.lastCode(identifier) },
      );
      assert.equal(typeof accessToken, 'string');
      const verified = await tessera.request('POST', '/verify', {
        body: { oauth_token: { access_token: accessToken } },
        headers: { api_key_id: project.api_key_id },
      });
      assert.deepEqual(verified.body, { success: true });
    } finally {
      await browser.close();
      await page.close();
    }
  });

  /** Starts one of the apps (a child process) and returns its URL. */
  async function startApp(file: string): Promise<string> {
    const child = spawn(process.execPath, [file], {
      cwd: appDir,
      env: { ...CHILD_ENV, ISSUER: tessera.url, API_KEY_ID: tessera.project.api_key_id },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n')) resolve((JSON.parse(line!) as { port: number }).port);
      });
      child.once('exit', (code) => reject(new Error(`${file} exited with ${code}: ${errors}`)));
    });
    return `http://127.0.0.1:${port}`;
  }
});

/** Serves the bundled page on 127.0.0.1: / and /page.js. */
async function servePage(script: Buffer): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/page.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(script);
      return;
    }
    res
      .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>pack test</title><script type="module" src="/page.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
