import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect } from '../../src/db/connect.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';

// The tessera command: `projects create --sms-countries`, and `serve` refusing to show the
// development outbox on a non-loopback address (exit 2, naming the variables).
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI = ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts'];
const dir = mkdtempSync(join(tmpdir(), 'tessera-cli-sms-'));
const MASTER_KEY = randomBytes(32).toString('base64');
after(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], extra: Record<string, string>) {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TESSERA_') && name !== 'NODE_ENV') env[name] = value;
  }
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd: root,
    env: { ...env, TESSERA_DATA_DIR: dir, TESSERA_MASTER_KEY: MASTER_KEY, ...extra },
    stdio: 'pipe',
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('projects create --sms-countries stores the list; a bad code is refused', async () => {
  const created = await run(
    ['projects', 'create', '--name', 'na', '--sms-countries', 'us, ca', '--json'],
    {},
  );
  assert.equal(created.code, 0, created.stderr);
  const bad = await run(['projects', 'create', '--name', 'bad', '--sms-countries', 'USA'], {});
  // A bad argument is a usage error (exit 2), refused before the database opens.
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /not a two-letter country code/);
  const db = await connect(`sqlite:${join(dir, 'tessera.db')}`);
  try {
    const repository = new ProjectsRepository(db);
    assert.deepEqual((await repository.findByName('na'))?.sms_countries, ['US', 'CA']);
    assert.equal(await repository.findByName('bad'), undefined);
  } finally {
    await db.close();
  }
});

test('projects update sets the SMS countries and token lifetimes, and show prints them', async () => {
  const env = { TESSERA_ACCESS_TOKEN_TTL: '1800' };
  const created = await run(['projects', 'create', '--name', 'life', '--access-token-ttl', '600'], env);
  assert.equal(created.code, 0, created.stderr);
  const updated = await run(
    ['projects', 'update', 'life', '--sms-countries', 'gb,ie', '--id-token-ttl', '900', '--json'],
    env,
  );
  assert.equal(updated.code, 0, updated.stderr);
  const view = JSON.parse(updated.stdout);
  assert.deepEqual(view.sms_countries, ['GB', 'IE']);
  assert.equal(view.access_token_ttl, 600);
  assert.equal(view.id_token_ttl, 900);
  assert.equal(view.refresh_token_ttl, null);
  assert.equal(view.server.access_token_ttl, 1800);

  const shown = await run(['projects', 'show', 'life'], env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /SMS countries: +GB IE\n/);
  assert.match(shown.stdout, /access token: +600 s \(10 min\)\n/);
  assert.match(shown.stdout, /refresh token: +2592000 s \(30 d\), the server's/);

  // Past the server's lifetime: exit 2 naming the ceiling; nothing changed.
  const tooLong = await run(['projects', 'update', 'life', '--access-token-ttl', '1801'], env);
  assert.equal(tooLong.code, 2, tooLong.stderr);
  assert.match(tooLong.stderr, /access_token_ttl .* from 30 to 1800 .*TESSERA_ACCESS_TOKEN_TTL/);
  const both = await run(
    ['projects', 'update', 'life', '--sms-countries', 'US', '--server-sms-countries'],
    env,
  );
  assert.equal(both.code, 2);
  assert.match(both.stderr, /either --sms-countries or --server-sms-countries/);

  const reset = await run(
    ['projects', 'update', 'life', '--server-sms-countries', '--access-token-ttl', 'server', '--json'],
    env,
  );
  assert.equal(reset.code, 0, reset.stderr);
  assert.equal(JSON.parse(reset.stdout).sms_countries, null);
  assert.equal(JSON.parse(reset.stdout).access_token_ttl, null);
  assert.equal(JSON.parse(reset.stdout).id_token_ttl, 900);
});

test('regression: serve with the development outbox on 0.0.0.0 exits 2 naming the variables', async () => {
  const refused = await run(['serve'], { TESSERA_ENV: 'development', TESSERA_HOST: '0.0.0.0' });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(
    refused.stderr,
    /^tessera: TESSERA_HOST=0\.0\.0\.0 .*TESSERA_DELIVERY=dev.*TESSERA_DEV_OUTBOX_PUBLIC=true\n$/,
  );
});
