import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { MasterKey } from '../../src/crypto/master-key.js';
import { connect } from '../../src/db/connect.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import {
  assertOneLineError,
  collect,
  finished,
  logLines,
  outputMatches,
  root,
  run,
  spawnCli,
} from '../helpers/cli.js';
import { freePort, RELAXED_LIMITS, startServer } from '../helpers/harness.js';

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
    assertOneLineError(result, 2, /is not an origin/);
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
      // The console is on in development, and the banner says how to get in.
      assert.ok(
        output.stdout.includes(
          `Console:        http://localhost:${port}/console (first: tessera console grant <your e-mail> operator)`,
        ),
        output.stdout,
      );
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

  test('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'packages/server/package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const result = await run([flag], env);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `${version}\n`);
      assert.equal(result.stderr, '');
    }
  });

  test('usage errors exit 2 with one line: unknown commands and options, invalid values', async () => {
    assertOneLineError(await run(['bogus'], env), 2, /unknown command 'bogus'/);
    assertOneLineError(
      await run(['projects', 'list', '--jsn'], env),
      2,
      /^tessera: unknown option '--jsn' \(Did you mean --json\?\)$/,
    );
    assertOneLineError(await run(['projects', 'show'], env), 2, /missing required argument 'project'/);
    assertOneLineError(
      await run(['projects', 'create'], env),
      2,
      /required option '--name <name>' not specified/,
    );
    assertOneLineError(
      await run(['projects', 'create', '--name', '  '], env),
      2,
      /a project name of 1 to 100/,
    );
    assertOneLineError(
      await run(['projects', 'create', '--name', 'x', '--rp-id', 'bad id!'], env),
      2,
      /argument 'bad id!' is invalid\. the relying-party id is not a host name/,
    );
    assertOneLineError(
      await run(['projects', 'create', '--name', 'x', '--rp-id', '10.1.2.3'], env),
      2,
      /relying-party id/,
    );
    assertOneLineError(
      await run(
        ['projects', 'create', '--name', 'x', '--origin', 'https://x.example', '--rp-id', 'y.example'],
        env,
      ),
      2,
      /not the host \(or a parent domain\) of any of the project's origins/,
    );
    assertOneLineError(
      await run(['serve', '--workers', '0'], env),
      2,
      /the number of workers must be a whole number from 1 to 256/,
    );
    assertOneLineError(
      await run(['projects', 'create', '--name', 'acme'], env),
      2,
      /a project named "acme" exists already/,
    );
    // Nothing was created by the refused commands (`serve` made the console project, on by default
    // outside production, before the demo one).
    const names = (await json(['projects', 'list'])).map((p: { name: string }) => p.name);
    assert.deepEqual(names, ['acme', 'second', 'console', 'demo']);
  });

  test('regression: keys rotate --delay refuses anything but whole seconds up to 30 days, and publishes no key', async () => {
    const before = await json(['keys', 'list']);
    for (const delay of ['abc', '-1', '1e3', '2592001']) {
      assertOneLineError(
        await run(['keys', 'rotate', '--delay', delay], env),
        2,
        /--delay <seconds>.*whole number from 0 to 2592000/,
      );
    }
    assert.deepEqual(await json(['keys', 'list']), before);
    const rotation = await run(['keys', 'rotate', '--delay', '2592000'], env);
    assert.equal(rotation.code, 0, rotation.stderr);
    assert.match(rotation.stdout, /starts signing in 2592000 s\n$/);
    const next = (await json(['keys', 'list'])).find((k: { status: string }) => k.status === 'next');
    assert.ok(next, 'no next key');
  });

  test('projects show, update and delete, by name or API key id', async () => {
    const shown = await json(['projects', 'show', 'acme']);
    assert.equal(shown.api_key_id, created.api_key_id);
    assert.deepEqual(await json(['projects', 'show', created.api_key_id]), shown);
    assert.ok(!JSON.stringify(shown).includes('secret_hash') && !JSON.stringify(shown).includes('sk_'));
    const text = await run(['projects', 'show', 'acme'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^project acme\n {2}API key id: +pk_\S+\n/);
    assert.match(text.stdout, /relying-party id: +app\.acme\.example\n/);

    const updated = await json([
      'projects',
      'update',
      'acme',
      '--name',
      'acme-shop',
      '--add-origin',
      'https://shop.acme.example',
      '--remove-origin',
      'http://localhost:5173',
      '--rp-id',
      'acme.example',
      '--numeric-auth-time',
    ]);
    assert.deepEqual(
      [updated.name, updated.origins, updated.rp_id, updated.numeric_auth_time, updated.device_requires_pin],
      ['acme-shop', ['https://app.acme.example', 'https://shop.acme.example'], 'acme.example', true, false],
    );
    const back = await json([
      'projects',
      'update',
      created.api_key_id,
      '--no-numeric-auth-time',
      '--origin',
      'https://acme.example',
    ]);
    assert.deepEqual([back.numeric_auth_time, back.origins], [false, ['https://acme.example']]);
    assertOneLineError(await run(['projects', 'update', 'acme-shop'], env), 2, /nothing to change/);
    // An origin no browser could be on is refused, but one an earlier version stored is removable.
    assertOneLineError(
      await run(['projects', 'update', 'acme-shop', '--add-origin', 'https://a..b'], env),
      2,
      /does not name a host/,
    );
    const db = await connect(env.TESSERA_DATABASE_URL!);
    try {
      await db.kysely
        .updateTable('projects')
        .set({ origins: JSON.stringify(['https://acme.example', 'https://a..b']) })
        .where('api_key_id', '=', created.api_key_id)
        .execute();
    } finally {
      await db.close();
    }
    const cleaned = await json(['projects', 'update', 'acme-shop', '--remove-origin', 'https://a..b']);
    assert.deepEqual(cleaned.origins, ['https://acme.example']);
    assertOneLineError(
      await run(['projects', 'update', 'acme-shop', '--remove-origin', 'https://nope.example'], env),
      2,
      /"https:\/\/nope\.example" is not one of the project's origins/,
    );
    assertOneLineError(
      await run(['projects', 'update', 'acme-shop', '--name', 'second'], env),
      2,
      /exists already/,
    );
    assertOneLineError(await run(['projects', 'update', 'acme'], env), 2, /no project named acme$/);

    assertOneLineError(
      await run(['projects', 'delete', 'acme-shop'], env),
      2,
      /deleting project acme-shop \(pk_\S+\) removes its users, sessions and credentials for good; add --yes to confirm/,
    );
    assert.equal((await json(['projects', 'show', 'acme-shop'])).api_key_id, created.api_key_id);
    const deleted = await json(['projects', 'delete', 'acme-shop', '--yes']);
    assert.deepEqual(deleted, { api_key_id: created.api_key_id, name: 'acme-shop', users_deleted: 0 });
    assertOneLineError(
      await run(['projects', 'show', created.api_key_id], env),
      2,
      /no project has the API key id/,
    );
  });

  test('an unknown TESSERA_* variable is warned about in one line naming the closest known one', async () => {
    const result = await run(['projects', 'list', '--json'], {
      ...env,
      TESSERA_DATABSE_URL: 'postgres://elsewhere',
    });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    const warning = JSON.parse(lines[0]!);
    assert.equal(warning.level, 40);
    assert.equal(
      warning.msg,
      'unknown TESSERA_* variables ignored: TESSERA_DATABSE_URL (did you mean TESSERA_DATABASE_URL?)',
    );
    assert.ok(!lines[0]!.includes('postgres://elsewhere'), 'the value was logged');
  });

  test('serve honours PORT; with live delivery the banner advertises no development pages', async () => {
    const port = await freePort();
    const serveEnv = {
      ...env,
      PORT: String(port),
      TESSERA_DEMO: 'true',
      TESSERA_LOG_LEVEL: 'info',
      // Live delivery; nothing is sent in this test, so the server need not exist.
      TESSERA_SMTP_URL: 'smtp://127.0.0.1:9',
    };
    const child = spawnCli(['serve'], serveEnv);
    const output = collect(child);
    const done = finished(child, output);
    try {
      await outputMatches(
        child,
        output,
        (o) => o.stdout.includes('Server listening at'),
        'the server to listen',
      );
      assert.match(output.stdout, /Tessera is running in development mode\./);
      assert.match(output.stdout, /Sign-in codes: +sent by e-mail and SMS \(live delivery\)/);
      assert.doesNotMatch(output.stdout, /\/demo\/|\/dev\/outbox/);
      const base = `http://127.0.0.1:${port}`;
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/dev/outbox`)).status, 404);
      assert.equal((await fetch(`${base}/demo/`)).status, 404);
      assert.ok(
        logLines(output.stdout).some((l) => String(l.msg).includes(`:${port}`)),
        'not listening on PORT',
      );
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal((await done).code, 0);
  });

  test('serve and migrate wait for an unreachable database up to TESSERA_DATABASE_WAIT, logging, then exit 1', async () => {
    const closed = await freePort();
    const down = {
      ...env,
      TESSERA_DATABASE_URL: `postgres://tessera@127.0.0.1:${closed}/tessera`,
      TESSERA_DATABASE_WAIT: '2',
      TESSERA_LOG_LEVEL: 'info',
    };
    for (const command of ['serve', 'migrate']) {
      const started = Date.now();
      const result = await run([command], down);
      const waited = Date.now() - started;
      assert.equal(result.code, 1, `${command}: ${result.stderr}`);
      assert.equal(
        result.stderr.trimEnd().split('\n').at(-1),
        'tessera: the database did not answer within 2 s (TESSERA_DATABASE_WAIT): ECONNREFUSED',
      );
      const log = command === 'serve' ? result.stdout : result.stderr;
      const retries = logLines(log).filter((l) => l.msg === 'database not reachable yet; retrying');
      assert.ok(retries.length >= 2, `${command} retried ${retries.length} times: ${log}`);
      assert.deepEqual(
        retries.slice(0, 2).map((l) => [l.code, l.retryInMs]),
        [
          ['ECONNREFUSED', 500],
          ['ECONNREFUSED', 1000],
        ],
      );
      assert.ok(waited >= 2000, `${command} gave up after ${waited} ms`);
    }
  });
});

describe('tessera on a database migrated by a newer release (docs/OPERATIONS.md, "Upgrade and rollback")', () => {
  let dir: string;
  let env: Record<string, string>;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-rollback-'));
    env = {
      TESSERA_DATA_DIR: dir,
      TESSERA_DATABASE_URL: `sqlite:${join(dir, 'tessera.db')}`,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
    };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** What a newer release leaves behind: its migration applied, and its additive flag recorded. */
  async function newerMigration(name: string, additive: boolean): Promise<void> {
    const db = await connect(env.TESSERA_DATABASE_URL!);
    try {
      await sql`create table if not exists tessera_migrations (name text primary key, additive integer not null, release text not null, recorded_at bigint not null)`.execute(
        db.kysely,
      );
      await sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(
        db.kysely,
      );
      await sql`insert into tessera_migrations (name, additive, release, recorded_at) values (${name}, ${additive ? 1 : 0}, '9.9.9', ${Date.now()})`.execute(
        db.kysely,
      );
    } finally {
      await db.close();
    }
  }

  test('starts (exit 0, with a warning) past additive migrations it does not know, and refuses others with exit status 2', async () => {
    assert.equal((await run(['migrate'], env)).code, 0);
    await newerMigration('2999-01-01-900-additive', true);
    const migrated = await run(['migrate'], env);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(
      migrated.stderr,
      /migrated by a newer release \(2999-01-01-900-additive\); every one is additive/,
    );
    assert.equal((await run(['keys', 'list'], env)).code, 0);

    await newerMigration('2999-01-01-901-breaking', false);
    for (const command of [['migrate'], ['keys', 'list'], ['serve']]) {
      const refused = await run(command, env);
      assertOneLineError(
        refused,
        2,
        /cannot run against 2999-01-01-901-breaking \(not additive, applied by tessera 9\.9\.9\)\. Run the release that applied it .*"Upgrade and rollback"$/,
      );
    }
  });
});

test('a multi-host TESSERA_DATABASE_URL is refused at once with exit status 2, naming the variable and how to fail over', async () => {
  const base = { TESSERA_MASTER_KEY: randomBytes(32).toString('base64'), TESSERA_DATABASE_WAIT: '1' };
  for (const url of [
    'postgres://tessera:s3cret@db1:5432,db2:5432/tessera?target_session_attrs=read-write',
    'postgres://db1,db2/tessera',
  ]) {
    for (const name of ['TESSERA_DATABASE_URL', 'TESSERA_DATABASE_LISTEN_URL']) {
      const env = { ...base, TESSERA_DATABASE_URL: 'postgres://tessera@127.0.0.1:1/tessera', [name]: url };
      const result = await run(['migrate'], env);
      assertOneLineError(
        result,
        2,
        new RegExp(`^tessera: ${name} names several hosts \\(db1(:5432)?,db2(:5432)?\\).*"Failing over"\\)$`),
      );
      assert.doesNotMatch(result.stderr, /s3cret/);
    }
  }
  const broken = await run(['migrate'], {
    ...base,
    TESSERA_DATABASE_URL: 'postgres://tessera@db1:99999/tessera',
  });
  assertOneLineError(broken, 2, /^tessera: TESSERA_DATABASE_URL is not a valid URL/);
});

test('restore drill (docs/OPERATIONS.md, "Backup and restore"): back up a live SQLite database under writes, restore it, restore-check passes, a token signed before still verifies', async () => {
  const server = await startServer('sqlite', { env: RELAXED_LIMITS });
  const dir = mkdtempSync(join(tmpdir(), 'tessera-drill-'));
  try {
    const before = await server.signIn('drill-before@example.com');
    const env = {
      TESSERA_DATA_DIR: dir,
      TESSERA_DATABASE_URL: server.storage.url,
      TESSERA_MASTER_KEY: server.masterKey,
    };
    // Sign-ins keep writing (sessions, refresh tokens, audit events) while the backup runs.
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        await server.signIn(`drill-${writes}@example.com`);
        writes++;
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    const backupFile = join(dir, 'backup.db');
    const backedUp = await run(['backup', backupFile], env);
    writing = false;
    await writer;
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.match(backedUp.stdout, /SQLite online backup/);
    assert.ok(writes > 0, 'no write ran during the backup');
    // A second backup to the same file is refused rather than overwriting it.
    assert.equal((await run(['backup', backupFile], env)).code, 1);

    // Restore: the backup file becomes the database.
    const restored = { ...env, TESSERA_DATABASE_URL: `sqlite:${backupFile}` };
    const checked = await run(['restore-check'], restored);
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(checked.stdout, /^migrations: ok; 0 pending/m);
    assert.match(checked.stdout, /^signing keys: 1 published, 1 open with this TESSERA_MASTER_KEY/m);
    assert.match(checked.stdout, /^projects: 1; users: \d+; open sessions: \d+; newest audit event: \d{4}-/m);
    assert.match(checked.stdout, /Re-apply what happened after the backup/);
    const db = await connect(restored.TESSERA_DATABASE_URL);
    try {
      assert.equal(
        (await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db.kysely)).rows[0]
          ?.integrity_check,
        'ok',
      );
      const keys = new KeyStore(db, MasterKey.parse(server.masterKey).derive('signing-key-encryption'));
      await keys.init();
      await jwtVerify(before.access_token, createLocalJWKSet(JSON.parse(keys.jwksJson())));
      const users = await db.kysely.selectFrom('users').select('identifier').execute();
      assert.ok(users.some((u) => u.identifier === 'drill-before@example.com'));
    } finally {
      await db.close();
    }

    // Another master key is reported clearly, with exit status 2.
    const wrongKey = await run(['restore-check'], {
      ...restored,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
    });
    assert.equal(wrongKey.code, 2, wrongKey.stderr);
    assert.match(wrongKey.stdout, /^signing keys: 1 published, 0 open with this TESSERA_MASTER_KEY/m);
    assert.match(
      wrongKey.stderr,
      /^tessera: restore check failed: signing keys \S+ do not decrypt with this TESSERA_MASTER_KEY: set the master key in use when the backup was taken\n$/,
    );
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
