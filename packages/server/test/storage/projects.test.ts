import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import { migrations } from '../../src/migrations/index.js';
import { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { createStorage, type Dialect, eachDialect, postgresUrl } from '../helpers/harness.js';

/** A new database migrated up to (and including) `last` only. */
async function databaseAt(dialect: Dialect, last: string): Promise<{ db: Db; cleanup(): Promise<void> }> {
  let db: Db;
  let drop: () => Promise<void>;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-projects-'));
    db = await connect(`sqlite:${join(dir, 'old.db')}`);
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
    db = await connect(postgresUrl!, { schema });
    drop = async () => {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    };
  }
  // Through migrate() (not a bare Kysely Migrator): it retries the catalog race with other tests'
  // schemas being dropped meanwhile, which failed this test once.
  const upTo = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= last));
  await migrate(db, { migrations: upTo });
  return {
    db,
    cleanup: async () => {
      await db.close().catch(() => {});
      await drop();
    },
  };
}

eachDialect('projects storage', (dialect) => {
  test('migration 010 keeps the oldest name, renames later duplicates "<name> (<api key id>)", then names are unique', async () => {
    const old = await databaseAt(dialect, '2026-11-23-007-device-pin-policy');
    try {
      const row = (id: string, name: string, created: number) => ({
        id,
        name,
        api_key_id: `pk_${id}`,
        secret_hash: 'x',
        origins: '[]',
        numeric_auth_time: 0,
        device_requires_pin: 0,
        created_at: created,
      });
      await old.db.kysely
        .insertInto('projects')
        .values([row('b', 'shop', 2), row('a', 'shop', 1), row('c', 'shop', 3), row('d', 'blog', 1)])
        .execute();
      assert.deepEqual((await migrate(old.db))[0], '2026-11-23-010-unique-project-names');
      const names = await old.db.kysely.selectFrom('projects').select(['id', 'name']).orderBy('id').execute();
      assert.deepEqual(names, [
        { id: 'a', name: 'shop' },
        { id: 'b', name: 'shop (pk_b)' },
        { id: 'c', name: 'shop (pk_c)' },
        { id: 'd', name: 'blog' },
      ]);
      await assert.rejects(
        old.db.kysely
          .insertInto('projects')
          .values(row('e', 'blog', 5))
          .execute(),
        (error: { code?: string }) => error.code === '23505' || error.code === 'SQLITE_CONSTRAINT_UNIQUE',
      );
    } finally {
      await old.cleanup();
    }
  });

  test('names are unique through the service too: create and rename to a taken name are 409 conflict', async () => {
    const storage = await createStorage(dialect);
    try {
      const projects = new ProjectsService(new ProjectsRepository(storage.db));
      const first = await projects.create({ name: 'shop' });
      const second = await projects.create({ name: 'blog' });
      await assert.rejects(projects.create({ name: ' shop ' }), { statusCode: 409, code: 'conflict' });
      await assert.rejects(projects.update(second.api_key_id, { name: 'shop' }), {
        statusCode: 409,
        code: 'conflict',
      });
      // Two creations racing past the service's own check: the index decides, still a 409.
      const results = await Promise.allSettled([
        projects.create({ name: 'race' }),
        projects.create({ name: 'race' }),
      ]);
      assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
      assert.equal(
        (
          (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as {
            statusCode: number;
          }
        ).statusCode,
        409,
      );
      // Renaming a project to its own name is no conflict.
      assert.equal((await projects.update(first.api_key_id, { name: 'shop' })).name, 'shop');
    } finally {
      await storage.cleanup();
    }
  });

  test('update: origins replaced, added and removed; the RP id must serve an origin; nothing to change is a 400', async () => {
    const storage = await createStorage(dialect);
    try {
      const projects = new ProjectsService(new ProjectsRepository(storage.db));
      const { api_key_id: id } = await projects.create({ name: 'app', origins: ['https://app.example.com'] });
      let project = await projects.update(id, {
        addOrigins: ['http://localhost:5173/', 'https://app.example.com'],
      });
      assert.deepEqual(project.origins, ['https://app.example.com', 'http://localhost:5173']);
      project = await projects.update(id, { removeOrigins: ['http://localhost:5173'] });
      assert.deepEqual(project.origins, ['https://app.example.com']);
      await assert.rejects(projects.update(id, { removeOrigins: ['https://other.example'] }), {
        statusCode: 400,
        message: /"https:\/\/other\.example" is not one of the project's origins/,
      });
      await assert.rejects(projects.update(id, { origins: [], addOrigins: ['https://a.example'] }), {
        statusCode: 400,
      });
      // The RP id stays app.example.com: origins it cannot serve are refused with it…
      await assert.rejects(projects.update(id, { origins: ['https://new.example'] }), {
        statusCode: 400,
        message: /relying-party id "app\.example\.com"/,
      });
      // …and accepted when the RP id moves with them.
      project = await projects.update(id, { origins: ['https://login.new.example'], rpId: 'New.Example' });
      assert.deepEqual([project.origins, project.rp_id], [['https://login.new.example'], 'new.example']);
      await assert.rejects(projects.update(id, { rpId: 'bad id!' }), { statusCode: 400 });
      await assert.rejects(projects.update(id, {}), { statusCode: 400, message: /nothing to change/ });
      project = await projects.update(id, { numericAuthTime: true, deviceRequiresPin: true });
      assert.deepEqual([project.numeric_auth_time, project.device_requires_pin], [1, 1]);
      // What the update returned is what is stored.
      assert.deepEqual(await projects.get(id), project);
      await assert.rejects(projects.update('pk_nobody', { name: 'x' }), { statusCode: 404 });
    } finally {
      await storage.cleanup();
    }
  });

  test('a deleted project is forgotten at once where it was deleted and within the cache time elsewhere', async () => {
    const storage = await createStorage(dialect);
    try {
      let now = 1_000_000;
      const clock = () => now;
      const here = new ProjectsService(new ProjectsRepository(storage.db), clock);
      const elsewhere = new ProjectsService(new ProjectsRepository(await storage.reopen()), clock);
      const created = await here.create({ name: 'short-lived', origins: ['https://gone.example'] });
      for (const service of [here, elsewhere]) {
        assert.ok(await service.byApiKeyId(created.api_key_id));
        assert.ok(await service.byId(created.project_id));
        assert.equal(await service.isKnownOrigin('https://gone.example'), true);
      }
      assert.equal((await here.delete(created.api_key_id)).users, 0);

      assert.equal(here.cached(created.api_key_id), null);
      assert.equal(await here.byApiKeyId(created.api_key_id), undefined);
      assert.equal(await here.byId(created.project_id), undefined);
      assert.equal(await here.isKnownOrigin('https://gone.example'), false);

      // Another instance answers from its cache until the entry expires (ProjectsService's CACHE_MS, 5 s)…
      now += 4_999;
      assert.ok(await elsewhere.byApiKeyId(created.api_key_id));
      // …and not a millisecond longer.
      now += 1;
      assert.equal(elsewhere.cached(created.api_key_id), null);
      assert.equal(await elsewhere.byApiKeyId(created.api_key_id), undefined);
      assert.equal(await elsewhere.byId(created.project_id), undefined);
      assert.equal(await elsewhere.isKnownOrigin('https://gone.example'), false);
      await assert.rejects(here.delete(created.api_key_id), { statusCode: 404 });
    } finally {
      await storage.cleanup();
    }
  });
});
