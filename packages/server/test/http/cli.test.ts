import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect } from '../../src/db/connect.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { freePort } from '../helpers/harness.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI = ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts'];

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without any TESSERA_* or NODE_ENV, plus `extra`. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TESSERA_') && name !== 'NODE_ENV') env[name] = value;
  }
  return { ...env, ...extra };
}

function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...CLI, ...args], { cwd: root, env: cleanEnv(env), stdio: 'pipe' });
}

function finished(child: ChildProcess, output: { stdout: string; stderr: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, ...output }));
  });
}

function collect(child: ChildProcess) {
  const output = { stdout: '', stderr: '' };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk;
  });
  return output;
}

function run(args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawnCli(args, env);
  return finished(child, collect(child));
}

/** A single-line error on stderr with no stack trace. */
function assertOneLineError(result: Run, code: number, pattern: RegExp): void {
  assert.equal(result.code, code, `exit ${result.code}; stderr: ${result.stderr}`);
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `stderr is not one line: ${result.stderr}`);
  assert.match(lines[0]!, /^tessera: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(result.stderr, /^\s+at /m);
  assert.equal(result.stdout, '');
}

describe('tessera CLI', () => {
  let dir: string;
  let env: Record<string, string>;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-'));
    env = {
      TESSERA_DATA_DIR: dir,
      TESSERA_DATABASE_URL: `sqlite:${join(dir, 'tessera.db')}`,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
    };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs a command that must succeed and print JSON. */
  async function json(args: string[]) {
    const result = await run([...args, '--json'], env);
    assert.equal(result.code, 0, `tessera ${args.join(' ')} failed: ${result.stderr}`);
    assert.equal(result.stderr, '');
    return JSON.parse(result.stdout);
  }

  async function checkSecret(apiKeyId: string, secret: string): Promise<boolean> {
    const db = await connect(env.TESSERA_DATABASE_URL!);
    try {
      const service = new ProjectsService(new ProjectsRepository(db));
      const basic = `Basic ${Buffer.from(`${apiKeyId}:${secret}`).toString('base64')}`;
      return await service.authenticateBasic(basic).then(
        () => true,
        () => false,
      );
    } finally {
      await db.close();
    }
  }

  let created: { api_key_id: string; api_key_secret: string };

  test('projects create --json prints exactly {api_key_id, api_key_secret}', async () => {
    created = await json([
      'projects',
      'create',
      '--name',
      'acme',
      '--origin',
      'https://app.acme.example/',
      '--origin',
      'http://localhost:5173',
    ]);
    assert.deepEqual(Object.keys(created), ['api_key_id', 'api_key_secret']);
    assert.match(created.api_key_id, /^pk_[A-Za-z0-9_-]{16,}$/);
    assert.match(created.api_key_secret, /^sk_[A-Za-z0-9_-]{32,}$/);
    assert.equal(await checkSecret(created.api_key_id, created.api_key_secret), true);
  });

  test('projects create without --json says the secret is shown once', async () => {
    const result = await run(['projects', 'create', '--name', 'second'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /^project second created\n {2}API key id: {5}pk_\S+\n {2}API key secret: sk_\S+ {3}\(shown once\)\n$/,
    );
  });

  test('projects create refuses an origin with a path, in one line', async () => {
    const result = await run(
      ['projects', 'create', '--name', 'bad', '--origin', 'https://app.example/path'],
      env,
    );
    assertOneLineError(result, 1, /is not an origin/);
  });

  test('projects list --json lists the projects with their normalised origins', async () => {
    const list = await json(['projects', 'list']);
    assert.deepEqual(
      list.map((p: { name: string }) => p.name),
      ['acme', 'second'],
    );
    const acme = list[0];
    assert.equal(acme.api_key_id, created.api_key_id);
    assert.deepEqual(acme.origins, ['https://app.acme.example', 'http://localhost:5173']);
    assert.equal(acme.rp_id, 'app.acme.example');
    assert.ok(!Number.isNaN(Date.parse(acme.created_at)));
    assert.equal(JSON.stringify(list).includes('sk_'), false, 'the list shows a secret');
    assert.equal(JSON.stringify(list).includes('secret_hash'), false);
  });

  test('projects rotate-secret <api key id> --json gives a new secret; the old one stops working', async () => {
    const rotated = await json(['projects', 'rotate-secret', created.api_key_id]);
    assert.deepEqual(Object.keys(rotated), ['api_key_id', 'api_key_secret']);
    assert.equal(rotated.api_key_id, created.api_key_id);
    assert.notEqual(rotated.api_key_secret, created.api_key_secret);
    assert.match(rotated.api_key_secret, /^sk_/);
    assert.equal(await checkSecret(created.api_key_id, rotated.api_key_secret), true);
    assert.equal(await checkSecret(created.api_key_id, created.api_key_secret), false);
    // By name as well.
    const byName = await json(['projects', 'rotate-secret', 'acme']);
    assert.equal(byName.api_key_id, created.api_key_id);
    assert.equal(await checkSecret(created.api_key_id, rotated.api_key_secret), false);
    assert.equal(await checkSecret(created.api_key_id, byName.api_key_secret), true);
  });

  test('projects rotate-secret of an unknown project exits 2 in one line', async () => {
    assertOneLineError(await run(['projects', 'rotate-secret', 'nobody'], env), 2, /no project named nobody/);
  });

  test('keys list --json, keys rotate --delay 0: the new key is active, the old one retiring', async () => {
    const before = await json(['keys', 'list']);
    assert.equal(before.length, 1);
    assert.equal(before[0].status, 'active');
    assert.equal(before[0].retire_at, null);
    assert.ok(!Number.isNaN(Date.parse(before[0].activated_at)));
    assert.deepEqual(Object.keys(before[0]).sort(), ['activated_at', 'kid', 'retire_at', 'status']);

    const rotation = await run(['keys', 'rotate', '--delay', '0'], env);
    assert.equal(rotation.code, 0, rotation.stderr);
    const match = /^key (\S+) published; it starts signing in 0 s\n$/.exec(rotation.stdout);
    assert.ok(match, rotation.stdout);
    const newKid = match[1]!;
    assert.notEqual(newKid, before[0].kid);

    const after = await json(['keys', 'list']);
    const byKid = new Map(after.map((k: { kid: string }) => [k.kid, k]));
    assert.equal(after.length, 2);
    assert.equal((byKid.get(newKid) as { status: string }).status, 'active');
    const old = byKid.get(before[0].kid) as { status: string; retire_at: string | null };
    assert.equal(old.status, 'retiring');
    assert.ok(old.retire_at && Date.parse(old.retire_at) > Date.now(), 'the old key retires later');
  });

  test('a bad configuration value exits 2 with one line and no stack trace', async () => {
    assertOneLineError(
      await run(['projects', 'list'], { ...env, TESSERA_PORT: 'abc' }),
      2,
      /^tessera: TESSERA_PORT must be a whole number, got "abc"$/,
    );
    assertOneLineError(await run(['serve'], { ...env, TESSERA_PORT: 'abc' }), 2, /TESSERA_PORT/);
    assertOneLineError(await run(['keys', 'list'], { ...env, TESSERA_ENV: 'staging' }), 2, /TESSERA_ENV/);
    // Regression: an unknown log level used to surface as pino's own error, exit 1.
    assertOneLineError(
      await run(['projects', 'list'], { ...env, TESSERA_LOG_LEVEL: 'verbose' }),
      2,
      /TESSERA_LOG_LEVEL/,
    );
    assertOneLineError(
      await run(['projects', 'list'], { ...env, TESSERA_MASTER_KEY: 'short' }),
      2,
      /TESSERA_MASTER_KEY/,
    );
    assertOneLineError(
      await run(['serve'], { ...env, TESSERA_ENV: 'production', TESSERA_ISSUER: 'https://auth.example.com' }),
      2,
      /TESSERA_DELIVERY/,
    );
  });

  test('serve prints the demo project, answers /healthz and /readyz, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const serveEnv = { ...env, TESSERA_PORT: String(port), TESSERA_DEMO: 'true', TESSERA_LOG_LEVEL: 'info' };
    const child = spawnCli(['serve'], serveEnv);
    const output = collect(child);
    const done = finished(child, output);
    try {
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (output.stdout.includes('Server listening at')) resolve();
        };
        child.stdout?.on('data', check);
        child.once('close', (code) =>
          reject(new Error(`serve exited ${code}: ${output.stderr}${output.stdout}`)),
        );
      });
      assert.match(output.stdout, /Tessera is running in development mode\./);
      assert.ok(output.stdout.includes(`Issuer:         http://localhost:${port}`), output.stdout);
      const apiKeyId = /API key id: +(pk_\S+)/.exec(output.stdout)?.[1];
      assert.ok(apiKeyId, output.stdout);
      assert.match(output.stdout, /API key secret: sk_\S+ {3}\(shown once; store it now\)/);

      const base = `http://127.0.0.1:${port}`;
      const health = await fetch(`${base}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready' });

      // The printed demo project works for sign-in.
      const started = await fetch(`${base}/v1/auth/otp/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', api_key_id: apiKeyId },
        body: JSON.stringify({ identifier: 'demo@example.com' }),
      });
      assert.equal(started.status, 200, await started.clone().text());
      const outbox = (await (await fetch(`${base}/dev/outbox`)).json()) as { to: string }[];
      assert.equal(outbox[0]?.to, 'demo@example.com');
      // The code is not in the process output.
      const code = (outbox[0] as unknown as { code: string }).code;
      assert.ok(!output.stdout.includes(code) && !output.stderr.includes(code), 'a code reached the log');
    } finally {
      child.kill('SIGTERM');
    }
    const result = await done;
    assert.equal(result.signal, null, `serve was killed by ${result.signal}`);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /"msg":"stopped"/);

    // The demo project was created once.
    const projects = await json(['projects', 'list']);
    assert.equal(projects.filter((p: { name: string }) => p.name === 'demo').length, 1);
  });
});
