// The packages as a user gets them: packed by `npm run pack` (every publishable workspace package),
// installed from the tarballs into a fresh app outside the monorepo with the `npm install` lines
// the command prints, checked by @arethetypeswrong/cli, then used from an ESM and a CommonJS Express
// app against a real Tessera server, type-checked as TypeScript (ESM, and CommonJS with TypeScript
// 5.0 and the current release), and bundled with esbuild for a page that signs in from Chromium.
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
import { CHROMIUM, launchChromium } from '../../packages/server/test/helpers/chromium.js';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';
import { publishable } from '../../scripts/lib/workspaces.mjs';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Every workspace package not marked private: what `npm run pack` must pack. */
const PACKAGES = publishable().map((w) => w.manifest.name);
/** What the apps below use: installed with the `npm install` lines `npm run pack` prints. */
const APP_PACKAGES = [
  '@tessera/verify',
  '@tessera/client',
  '@tessera/react',
  '@tessera/ssr',
  '@tessera/sqlite',
  '@tessera/admin',
];
/** The oldest TypeScript a CommonJS consumer is checked with (from the npm registry or its cache). */
const OLD_TYPESCRIPT = 'typescript@5.0.4';
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
interface PackOutput {
  out: string;
  packed: Packed[];
  /** For each package, the tarballs its `npm install` line names. */
  install: Record<string, string[]>;
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
  '@tessera/verify/fastify', '@tessera/verify/hono', '@tessera/react', '@tessera/ssr', '@tessera/ssr/express',
  '@tessera/admin'];
console.log(JSON.stringify(Object.fromEntries(entries.map((e) => [e, Object.keys(require(e)).sort()]))));
`;

const TS_ESM = `import { createTesseraAdmin, type TesseraAdminError, type User } from '@tessera/admin';
import { createTesseraClient } from '@tessera/client';
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
const admin = createTesseraAdmin({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1', apiKeySecret: 's' });
export async function identifierOf(id: string): Promise<string | TesseraAdminError['code']> {
  const user: User = await admin.users.get(id);
  for await (const event of admin.audit.list({ user_id: user.user_id })) return event.type;
  return user.identifier;
}
export const used: unknown[] = [app, client, TesseraVerifyError];
`;
/** A CommonJS TypeScript file that uses @tessera/verify/express and requires every other entry. */
function cjsConsumer(entries: string[]): string {
  const requires = entries.map((entry, i) => `import entry${i} = require('${entry}');`).join('\n');
  return `import express = require('express');
import verify = require('@tessera/verify/express');
${requires}

const app = express();
app.get('/me', verify.tesseraAuth({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1' }), (req, res) => {
  const sub: string | undefined = req.tessera?.sub;
  res.json({ sub });
});
export = [app, ${entries.map((_, i) => `entry${i}`).join(', ')}];
`;
}
const TS_COMMON = {
  target: 'es2022',
  lib: ['es2023', 'dom'],
  strict: true,
  noEmit: true,
  skipLibCheck: false,
  esModuleInterop: true,
  jsx: 'react-jsx',
  types: [],
};
/** TypeScript settings a CommonJS consumer may have: node10 is the default of `module: commonjs`. */
const CJS_SETTINGS = {
  node10: { module: 'commonjs', moduleResolution: 'node10' },
  node16: { module: 'node16', moduleResolution: 'node16' },
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
} as const;
const TSCONFIG = {
  compilerOptions: { ...TS_COMMON, ...CJS_SETTINGS.nodenext },
  files: ['check.mts'],
};

/** @tessera/admin from Node, ESM and CommonJS: finds a user by identifier, sets claims, lists the audit log. */
const ADMIN_BODY = `
const admin = createTesseraAdmin({
  issuer: process.env.ISSUER,
  apiKeyId: process.env.API_KEY_ID,
  apiKeySecret: process.env.API_KEY_SECRET,
});
async function main() {
  const user = await admin.users.find(process.env.IDENTIFIER);
  const claims = await admin.claims.set(user.user_id, { plan: 'pro' });
  const events = await admin.audit.list({ user_id: user.user_id }).toArray();
  const missing = await admin.users.get('no-such-user').catch((error) => error instanceof TesseraAdminError && error.code);
  console.log(JSON.stringify({ user: user.user_id, claims, events: events.map((e) => e.type), missing }));
}
main();
`;
const ADMIN_ESM = `import { createTesseraAdmin, TesseraAdminError } from '@tessera/admin';
${ADMIN_BODY}`;
const ADMIN_CJS = `'use strict';
const { createTesseraAdmin, TesseraAdminError } = require('@tessera/admin');
${ADMIN_BODY}`;

const PAGE_ENTRY = `import { createTesseraClient } from '@tessera/client';
globalThis.packTest = { createTesseraClient };
`;

describe('packed packages', { timeout: 1_200_000 }, () => {
  let work: string;
  let appDir: string;
  let pack: PackOutput;
  let packed: Packed[];
  let tscOld: string;
  let tessera: TestServer;
  const children: ChildProcess[] = [];

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'tessera-pack-'));
    appDir = join(work, 'app');
    // The one command of the README, into a folder that does not exist yet: it builds and packs.
    const { stdout } = await run(
      'npm',
      ['run', '--silent', 'pack', '--', '--json', '--out', join(work, 'new', 'dir')],
      { cwd: ROOT, env: CHILD_ENV, maxBuffer: 1 << 26 },
    );
    pack = JSON.parse(stdout) as PackOutput;
    packed = pack.packed;
    mkdirSync(appDir);
    writeFileSync(join(appDir, 'package.json'), JSON.stringify({ name: 'pack-test-app', private: true }));
    // One install: the lines `npm run pack` printed for the packages an app uses, and what the apps
    // use from the registry (or the npm cache).
    const tarballs = new Set(APP_PACKAGES.flatMap((name) => pack.install[name] ?? []));
    const oldTypescript = join(work, 'ts-old');
    mkdirSync(oldTypescript);
    await Promise.all([
      npm(
        [
          'install',
          '--prefer-offline',
          '--ignore-scripts',
          ...tarballs,
          'express@^5.1.0',
          '@types/express@^5.0.5',
          'fastify@^5.6.2',
          'hono@^4.10.6',
          'react@^19.3.1',
          '@types/react@^19.3.0',
          '@types/better-sqlite3@^7.6.13',
        ],
        appDir,
      ),
      npm(['install', '--prefer-offline', '--ignore-scripts', '--no-save', OLD_TYPESCRIPT], oldTypescript),
    ]);
    tscOld = join(oldTypescript, 'node_modules', 'typescript', 'bin', 'tsc');
    writeFileSync(join(appDir, 'esm.mjs'), ESM_APP);
    writeFileSync(join(appDir, 'cjs.cjs'), CJS_APP);
    writeFileSync(join(appDir, 'require-all.cjs'), REQUIRE_ALL);
    writeFileSync(join(appDir, 'admin.mjs'), ADMIN_ESM);
    writeFileSync(join(appDir, 'admin.cjs'), ADMIN_CJS);
    writeFileSync(join(appDir, 'check.mts'), TS_ESM);
    writeFileSync(join(appDir, 'check.cts'), cjsConsumer(entriesOf(appDir)));
    writeFileSync(join(appDir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    for (const [name, settings] of Object.entries(CJS_SETTINGS)) {
      const config = { compilerOptions: { ...TS_COMMON, ...settings }, files: ['check.cts'] };
      writeFileSync(join(appDir, `tsconfig.cjs-${name}.json`), JSON.stringify(config));
      // TypeScript 5.0 cannot read today's @types/node (Disposable, IteratorObject): it skips the
      // checking of declaration files; an entry whose types do not resolve still fails check.cts
      // (TS2307, TS1479), and attw checks the resolution inside our declaration files.
      const old = { compilerOptions: { ...config.compilerOptions, skipLibCheck: true }, files: config.files };
      writeFileSync(join(appDir, `tsconfig.cjs-${name}-5.0.json`), JSON.stringify(old));
    }
    writeFileSync(join(appDir, 'page.mjs'), PAGE_ENTRY);
    tessera = await startServer('sqlite', { env: RELAXED_LIMITS });
  });

  after(async () => {
    for (const child of children) child.kill();
    await tessera?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('each tarball holds only dist, bin, README, LICENSE and package.json', () => {
    assert.deepEqual(packed.map((p) => p.name).sort(), [...PACKAGES].sort());
    for (const pkg of packed) {
      const paths = pkg.files.map((f) => f.path);
      for (const must of ['LICENSE', 'README.md', 'package.json'])
        assert.ok(paths.includes(must), `${pkg.name}: ${must}`);
      const stray = paths.filter(
        (p) =>
          !/^(LICENSE|README\.md|package\.json|dist\/[\w./-]+\.(js|d\.ts)|dist\/cjs\/package\.json|bin\/tessera\.js)$/.test(
            p,
          ),
      );
      assert.deepEqual(stray, [], `${pkg.name} ships only what users need`);
    }
  });

  it('npm run pack prints, for each package, an install line with the @tessera packages it needs', () => {
    assert.ok(existsSync(pack.out), 'the folder is created');
    for (const { name, filename } of packed) {
      assert.ok(existsSync(join(pack.out, filename)), filename);
      const line = pack.install[name]!;
      assert.equal(line.at(-1), join(pack.out, filename), `${name}: its own tarball`);
      const manifest = packedManifest(name) as Record<string, Record<string, string> | undefined>;
      const internal = Object.keys({
        ...manifest.dependencies,
        ...manifest.optionalDependencies,
        ...manifest.peerDependencies,
      }).filter((dep) => PACKAGES.includes(dep));
      for (const dep of internal) {
        const tarball = join(pack.out, packed.find((p) => p.name === dep)!.filename);
        assert.ok(line.includes(tarball), `${name}'s line installs ${dep}`);
      }
    }
  });

  it('installed packages point every export at a file that exists, with types for import and require', () => {
    for (const name of APP_PACKAGES.concat('@tessera/core')) {
      const dir = join(appDir, 'node_modules', name);
      const manifest = installedManifest(name)!;
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
        assert.ok(manifest[field] !== undefined, `${name}: ${field}`);
      }
      assert.equal((manifest['publishConfig'] as { access?: string })?.access, 'public');
      for (const [subpath, target] of Object.entries(manifest['exports'] as Record<string, unknown>)) {
        if (typeof target === 'string') continue;
        for (const condition of ['import', 'require']) {
          const files = (target as Record<string, Record<string, string>>)[condition]!;
          assert.ok(files, `${name} ${subpath}: ${condition}`);
          assert.ok(existsSync(join(dir, files['types']!)), `${name} ${subpath} ${condition} types`);
          assert.ok(existsSync(join(dir, files['default']!)), `${name} ${subpath} ${condition} default`);
        }
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

  it('every package.json has the dual exports scripts/build-cjs.mjs derives from its entries', async () => {
    const result = await run(process.execPath, ['scripts/build-cjs.mjs', '--check'], {
      cwd: ROOT,
      env: CHILD_ENV,
    }).then(
      () => '',
      (err: { stderr?: string }) => err.stderr || String(err),
    );
    assert.equal(result, '');
  });

  it('@arethetypeswrong/cli finds no problem in any entry of any package', async () => {
    const attw = join(ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');
    const checked: string[] = [];
    for (const { name, filename } of packed) {
      const exported = Object.keys((packedManifest(name)['exports'] ?? {}) as object);
      if (exported.length === 0) continue; // the server: a CLI, nothing to import
      checked.push(name);
      const output = await run(
        process.execPath,
        [attw, '--pack', join(pack.out, filename), '--format', 'json'],
        {
          cwd: ROOT,
          env: CHILD_ENV,
          maxBuffer: 1 << 26,
        },
      ).then(
        (r) => r.stdout,
        (err: { stdout?: string }) => err.stdout ?? String(err),
      );
      const { analysis, problems } = JSON.parse(output) as {
        analysis: { entrypoints: Record<string, unknown> };
        problems: unknown;
      };
      assert.deepEqual(Object.keys(analysis.entrypoints).sort(), exported.sort(), `${name}: every entry`);
      assert.equal(Object.keys(problems ?? {}).length, 0, `${name}: ${JSON.stringify(problems)}`);
    }
    assert.deepEqual(
      checked.sort(),
      PACKAGES.filter((n) => Object.keys(packedManifest(n)['exports'] ?? {}).length > 0).sort(),
    );
  });

  it('a CommonJS .cts file requiring every entry type-checks with TypeScript 5.0 and the current one', async () => {
    const current = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const runs = Object.keys(CJS_SETTINGS).flatMap((setting) => [
      [`TypeScript 5.0, ${setting}`, tscOld, `tsconfig.cjs-${setting}-5.0.json`],
      [`current TypeScript, ${setting}`, current, `tsconfig.cjs-${setting}.json`],
    ]);
    // In parallel: each compiler run takes about a minute on a busy machine.
    const reports = await Promise.all(runs.map(([, tsc, config]) => tscErrors(tsc!, config!)));
    assert.deepEqual(
      Object.fromEntries(runs.map(([label], i) => [label, reports[i]])),
      Object.fromEntries(runs.map(([label]) => [label, ''])),
      'tsc reports no errors',
    );
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
    assert.ok(exported['@tessera/admin']!.includes('createTesseraAdmin'));
    assert.doesNotMatch(stderr, /Error/);
  });

  it('type-checks as TypeScript from an ESM file', async () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    assert.equal(await tscErrors(tsc, 'tsconfig.json'), '', 'tsc reports no errors');
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

  for (const [kind, file] of [
    ['ESM', 'admin.mjs'],
    ['CommonJS', 'admin.cjs'],
  ] as const) {
    it(`@tessera/admin from ${kind} finds a user, sets claims, reads the audit log`, async () => {
      const identifier = `pack-admin-${kind.toLowerCase()}@example.com`;
      const bundle = await tessera.signIn(identifier);
      const sub = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sub;
      const { stdout } = await run(process.execPath, [file], {
        cwd: appDir,
        env: {
          ...CHILD_ENV,
          ISSUER: tessera.url,
          API_KEY_ID: tessera.project.api_key_id,
          API_KEY_SECRET: tessera.project.api_key_secret,
          IDENTIFIER: identifier,
        },
      });
      const out = JSON.parse(stdout);
      assert.equal(out.user, sub);
      assert.deepEqual(out.claims, { plan: 'pro' });
      assert.ok(out.events.includes('signin.succeeded'), out.events.join());
      assert.equal(out.missing, 'user_not_found');
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
    const browser = await launchChromium();
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

  /** What a TypeScript compiler reports for a project of the app ('' when it reports nothing). */
  function tscErrors(tsc: string, config: string): Promise<string> {
    return run(process.execPath, [tsc, '-p', config], { cwd: appDir, env: CHILD_ENV }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout || String(err),
    );
  }

  /** The package.json of an installed package (undefined when the app did not install it). */
  function installedManifest(name: string): Record<string, unknown> | undefined {
    const file = join(appDir, 'node_modules', name, 'package.json');
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  }

  /** The package.json a package was packed from (the workspace's). */
  function packedManifest(name: string): Record<string, unknown> {
    return publishable().find((w) => w.manifest.name === name)!.manifest as Record<string, unknown>;
  }

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

/** Every entry point (package and subpath, not package.json) of the @tessera packages installed. */
function entriesOf(appDir: string): string[] {
  const scope = join(appDir, 'node_modules', '@tessera');
  return readdirSync(scope)
    .sort()
    .flatMap((dir) => {
      const manifest = JSON.parse(readFileSync(join(scope, dir, 'package.json'), 'utf8'));
      return Object.keys(manifest.exports ?? {})
        .filter((subpath) => subpath !== './package.json')
        .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`));
    });
}

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
