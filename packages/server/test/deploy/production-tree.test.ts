import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describePostgres, freePort, postgresUrl } from '../helpers/harness.js';

// The production tree the Dockerfile builds (its deps and runtime stages), made the same way in a
// temporary directory: the workspace manifests, `npm ci --workspace @tessera/server --omit=dev
// --omit=optional` (a PostgreSQL-only image, without better-sqlite3), the compiled dist/ and bin/;
// then started with the Dockerfile's own CMD against PostgreSQL.

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

/** The runtime stage's `CMD ["node", …]`. */
function dockerCommand(): string[] {
  const cmd = [...dockerfile.matchAll(/^CMD (\[.*\])$/gm)].at(-1)?.[1];
  assert.ok(cmd, 'the Dockerfile has no CMD');
  return JSON.parse(cmd) as string[];
}

/** Every workspace manifest the Dockerfile copies before `npm ci`. */
function manifests(): string[] {
  const copied = [...dockerfile.matchAll(/^COPY (?:--from=build \/app\/)?(\S+\/package\.json) /gm)].map(
    (m) => m[1]!,
  );
  return [...new Set(['package.json', 'package-lock.json', ...copied])];
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, NODE_ENV: '' } });
  assert.equal(result.status, 0, `${command} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
}

async function waitFor(url: string, child: ChildProcess, output: () => string): Promise<Response> {
  for (let attempt = 0; attempt < 600; attempt++) {
    assert.equal(child.exitCode, null, `the server exited:\n${output()}`);
    try {
      return await fetch(url);
    } catch {
      await sleep(100);
    }
  }
  assert.fail(`${url} never answered:\n${output()}`);
}

function start(tree: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const [command, ...args] = dockerCommand();
  assert.equal(command, 'node');
  let output = '';
  const child = spawn(process.execPath, args, {
    cwd: tree,
    // What the runtime stage sets, and nothing of this checkout's environment but PATH.
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', TESSERA_WORKERS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  return { child, output: () => output };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describePostgres('the production tree of the Dockerfile [postgres]', () => {
  let tree = '';
  let database = '';
  let admin: pg.Client;

  before(async () => {
    tree = mkdtempSync(join(tmpdir(), 'tessera-prod-'));
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b'], root);
    for (const file of manifests()) {
      mkdirSync(dirname(join(tree, file)), { recursive: true });
      cpSync(join(root, file), join(tree, file));
    }
    run(
      'npm',
      [
        'ci',
        '--workspace',
        '@tessera/server',
        '--omit=dev',
        '--omit=optional',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ],
      tree,
    );
    for (const dir of ['core/dist', 'sqlite/dist', 'server/dist', 'server/bin'])
      cpSync(join(root, 'packages', dir), join(tree, 'packages', dir), { recursive: true });
    database = `tessera_deploy_${randomBytes(6).toString('hex')}`;
    admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`create database ${database}`);
  });

  after(async () => {
    if (admin) {
      await admin.query(`drop database if exists ${database} with (force)`).catch(() => {});
      await admin.end();
    }
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  test('holds no development tools and no better-sqlite3', () => {
    for (const absent of ['better-sqlite3', 'typescript', 'tsx', '@biomejs', 'pino-pretty', 'express'])
      assert.ok(!existsSync(join(tree, 'node_modules', absent)), `${absent} is installed`);
    assert.ok(existsSync(join(tree, 'node_modules/fastify')));
  });

  test('serves /healthz and /readyz on PostgreSQL, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const url = new URL(postgresUrl!);
    url.pathname = `/${database}`;
    const { child, output } = start(tree, {
      TESSERA_DATABASE_URL: url.href,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
      TESSERA_ISSUER: `http://127.0.0.1:${port}`,
      TESSERA_ALLOW_HTTP_ISSUER: 'true',
      TESSERA_SMTP_URL: 'smtp://127.0.0.1:1',
      TESSERA_HOST: '127.0.0.1',
      TESSERA_PORT: String(port),
    });
    try {
      const health = await waitFor(`http://127.0.0.1:${port}/healthz`, child, output);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 200, output());
      assert.deepEqual(await ready.json(), { status: 'ready' });
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited(child), 0, output());
    assert.match(output(), /"msg":"stopped"/);
  });

  test('refuses a SQLite database with a clear message when better-sqlite3 is not installed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tessera-prod-data-'));
    try {
      const { child, output } = start(tree, {
        TESSERA_DATABASE_URL: `sqlite:${join(dataDir, 'tessera.db')}`,
        TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
        TESSERA_ISSUER: 'http://127.0.0.1:1',
        TESSERA_ALLOW_HTTP_ISSUER: 'true',
        TESSERA_SMTP_URL: 'smtp://127.0.0.1:1',
        TESSERA_PORT: String(await freePort()),
      });
      assert.notEqual(await exited(child), 0);
      assert.match(output(), /better-sqlite3\) could not be loaded; install it or use PostgreSQL/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const dockerWorks = spawnSync('docker', ['info'], { encoding: 'utf8' }).status === 0;
if (!dockerWorks) console.log('# docker image test skipped: `docker info` fails (no Docker daemon here)');

describe('the container image', () => {
  test('builds with the Dockerfile', {
    skip: dockerWorks ? false : 'no Docker daemon (`docker info` fails)',
    timeout: 1_800_000,
  }, () => {
    const tag = `tessera-test:${randomBytes(4).toString('hex')}`;
    try {
      run('docker', ['build', '--build-arg', 'NPM_OMIT=dev optional', '-t', tag, '.'], root);
      const user = spawnSync('docker', ['image', 'inspect', '--format', '{{.Config.User}}', tag], {
        encoding: 'utf8',
      });
      assert.equal(user.stdout.trim(), 'node');
    } finally {
      spawnSync('docker', ['image', 'rm', '-f', tag]);
    }
  });
});
