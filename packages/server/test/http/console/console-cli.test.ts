import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertOneLineError, run } from '../../helpers/cli.js';

/** `tessera console grant | revoke | list` (issue 33) against a SQLite file. */
describe('tessera console', () => {
  let dir: string;
  let env: Record<string, string>;
  let acme: { api_key_id: string; api_key_secret: string };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-console-cli-'));
    env = {
      TESSERA_DATA_DIR: dir,
      TESSERA_DATABASE_URL: `sqlite:${join(dir, 'tessera.db')}`,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
    };
    const created = await run(
      ['projects', 'create', '--name', 'acme', '--origin', 'https://acme.test', '--json'],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    acme = JSON.parse(created.stdout);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const list = async () => {
    const result = await run(['console', 'list', '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Array<Record<string, unknown>>;
  };

  test('grant: operator, and roles of a project by name or API key id; identifiers normalized', async () => {
    const op = await run(['console', 'grant', 'Ops@Example.COM', 'operator'], env);
    assert.equal(op.code, 0, op.stderr);
    assert.match(op.stdout, /ops@example\.com is now operator \(every project\)/);
    const again = await run(['console', 'grant', 'ops@example.com', 'operator'], env);
    assert.match(again.stdout, /already is operator/);
    const admin = await run(['console', 'grant', 'ada@example.com', 'admin', '--project', 'acme'], env);
    assert.equal(admin.code, 0, admin.stderr);
    assert.match(admin.stdout, /ada@example\.com is now admin of project acme/);
    const viewer = await run(
      ['console', 'grant', 'ada@example.com', 'viewer', '--project', acme.api_key_id],
      env,
    );
    assert.equal(viewer.code, 0, viewer.stderr);
    const rows = await list();
    assert.deepEqual(
      rows.map((r) => [r.identifier, r.role, r.project, r.api_key_id, r.user_id]),
      [
        ['ada@example.com', 'admin', 'acme', acme.api_key_id, null],
        ['ada@example.com', 'viewer', 'acme', acme.api_key_id, null],
        ['ops@example.com', 'operator', null, null, null],
      ],
    );
    const text = await run(['console', 'list'], env);
    assert.match(text.stdout, /ops@example\.com {2}operator {2}\(every project\) {2}not signed in yet/);
  });

  test('usage errors: exit status 2 and one line', async () => {
    assertOneLineError(
      await run(['console', 'grant', 'x@example.com', 'owner'], env),
      2,
      /unknown role owner/,
    );
    assertOneLineError(await run(['console', 'grant', 'x@example.com', 'admin'], env), 2, /--project/);
    assertOneLineError(
      await run(['console', 'grant', 'x@example.com', 'operator', '--project', 'acme'], env),
      2,
      /every project/,
    );
    assertOneLineError(
      await run(['console', 'grant', 'x@example.com', 'support', '--project', 'nope'], env),
      2,
      /no project/,
    );
    assertOneLineError(
      await run(['console', 'grant', 'not an address', 'operator'], env),
      2,
      /identifier|e-mail|phone/i,
    );
  });

  test('revoke: one role of a project, operator, everything of an identifier', async () => {
    const one = await run(['console', 'revoke', 'ada@example.com', 'viewer', '--project', 'acme'], env);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /1 console role taken back/);
    assert.deepEqual(
      (await list()).map((r) => [r.identifier, r.role]),
      [
        ['ada@example.com', 'admin'],
        ['ops@example.com', 'operator'],
      ],
    );
    const none = await run(['console', 'revoke', 'ada@example.com', 'viewer', '--project', 'acme'], env);
    assert.equal(none.code, 1);
    assert.match(none.stdout, /0 console roles taken back/);
    const all = await run(['console', 'revoke', 'ada@example.com'], env);
    assert.match(all.stdout, /1 console role taken back/);
    const op = await run(['console', 'revoke', 'ops@example.com', 'operator'], env);
    assert.equal(op.code, 0, op.stderr);
    assert.deepEqual(await list(), []);
  });
});
