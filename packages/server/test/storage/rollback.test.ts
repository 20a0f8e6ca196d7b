import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import { migrate, SchemaTooNewError } from '../../src/db/connect.js';
import { type MigrationModule, type MigrationSet, migrations } from '../../src/migrations/index.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  createStorage,
  eachDialect,
  startServer,
  type TestServer,
  type TestStorage,
} from '../helpers/harness.js';

// docs/OPERATIONS.md, "Upgrade and rollback": a release runs against a schema that is newer only
// by additive migrations it does not know, and refuses (exit status 2) any other.

/** A release newer than this one: an additive migration (a new table, a new nullable column). */
const additiveProbe: Record<string, MigrationModule> = {
  '2999-01-01-900-rollback-probe': {
    additive: true,
    // biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('rollback_probe')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .execute();
      await db.schema.alterTable('sessions').addColumn('probe_note', 'text').execute();
    },
  },
};

/** A release newer still: a migration an older release cannot run against. */
const breakingProbe: Record<string, MigrationModule> = {
  '2999-01-01-901-breaking-probe': {
    additive: false,
    // biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable('breaking_probe')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .execute();
    },
  },
};

const oldRelease: MigrationSet = migrations;
const newRelease: MigrationSet = { ...migrations, ...additiveProbe };
const newestRelease: MigrationSet = { ...newRelease, ...breakingProbe };

/** A refresh grant for a session of `project`, through any server on the shared database. */
async function refresh(server: TestServer, project: ProjectCredentials, refreshToken: string) {
  const response = await server.request('POST', '/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: project.api_key_id },
  });
  assert.equal(response.status, 200, `refresh answered ${response.status}: ${response.text}`);
  return response.body as { access_token: string; refresh_token: string };
}

/** The access token verifies against this server's published keys. */
async function assertVerifies(server: TestServer, accessToken: string): Promise<void> {
  const jwks = await server.request('GET', '/.well-known/jwks.json');
  // Each test server has its own issuer (its port): the signature is what carries over.
  await jwtVerify(accessToken, createLocalJWKSet(jwks.body));
}

eachDialect('upgrade and rollback', (dialect) => {
  /** Starts a server (a release whose migrations have just run) on the shared database. */
  async function release(storage: TestStorage, masterKey: string) {
    return startServer(dialect, { storage, masterKey });
  }

  test('old release -> new release (additive migration) -> old release again: tokens and sessions work in each', async () => {
    const storage = await createStorage(dialect);
    const masterKey = Buffer.alloc(32, 7).toString('base64');
    const servers: TestServer[] = [];
    try {
      // The old release (this one's migrations, already applied by createStorage).
      assert.deepEqual(await migrate(storage.db, { migrations: oldRelease }), []);
      const old = await release(storage, masterKey);
      servers.push(old);
      const first = await old.signIn('rollback-one@example.com');
      await assertVerifies(old, first.access_token);

      // The new release migrates (an additive migration) and serves the old release's sessions.
      assert.deepEqual(await migrate(storage.db, { migrations: newRelease }), Object.keys(additiveProbe));
      const upgraded = await release(storage, masterKey);
      servers.push(upgraded);
      await assertVerifies(upgraded, first.access_token);
      const firstAgain = await refresh(upgraded, old.project, first.refresh_token);
      await assertVerifies(upgraded, firstAgain.access_token);
      const second = await upgraded.signIn('rollback-two@example.com');

      // Rolled back: the old release starts on the newer schema (today: "corrupted migrations").
      const told: string[][] = [];
      assert.deepEqual(
        await migrate(storage.db, { migrations: oldRelease, onNewerSchema: (newer) => told.push(newer) }),
        [],
      );
      assert.deepEqual(told, [Object.keys(additiveProbe)]);
      const rolledBack = await release(storage, masterKey);
      servers.push(rolledBack);
      await assertVerifies(rolledBack, firstAgain.access_token);
      await assertVerifies(rolledBack, second.access_token);
      const firstThird = await refresh(rolledBack, old.project, firstAgain.refresh_token);
      await refresh(rolledBack, upgraded.project, second.refresh_token);
      const third = await rolledBack.signIn('rollback-three@example.com');
      await assertVerifies(rolledBack, third.access_token);

      // Forward again: the new release still serves what the old one issued.
      assert.deepEqual(await migrate(storage.db, { migrations: newRelease }), []);
      await refresh(upgraded, old.project, firstThird.refresh_token);
      await refresh(upgraded, rolledBack.project, third.refresh_token);
    } finally {
      for (const server of servers) await server.close();
      await storage.cleanup();
    }
  });

  test('a migration that is not additive is refused by a release that does not know it, naming it and what to do', async () => {
    const storage = await createStorage(dialect);
    try {
      assert.deepEqual(
        await migrate(storage.db, { migrations: newestRelease }),
        Object.keys({ ...additiveProbe, ...breakingProbe }),
      );
      for (const release of [oldRelease, newRelease]) {
        await assert.rejects(migrate(storage.db, { migrations: release }), (error: Error) => {
          assert.ok(error instanceof SchemaTooNewError, String(error));
          assert.match(error.message, /2999-01-01-901-breaking-probe \(not additive, applied by tessera /);
          assert.doesNotMatch(error.message, /900-rollback-probe/);
          assert.match(error.message, /restore the backup taken before that upgrade/);
          assert.match(error.message, /docs\/OPERATIONS\.md, "Upgrade and rollback"/);
          return true;
        });
      }
      assert.deepEqual(await migrate(storage.db, { migrations: newestRelease }), []);
    } finally {
      await storage.cleanup();
    }
  });

  test("this release's own trailing additive migrations: a release without them runs on the migrated schema", async () => {
    const storage = await createStorage(dialect);
    try {
      const names = Object.keys(migrations);
      // The newest run of additive migrations, as a release a few days older would lack them.
      let cut = names.length;
      while (cut > 0 && migrations[names[cut - 1]!]!.additive) cut--;
      assert.ok(cut < names.length, 'the newest migration is additive');
      const older = Object.fromEntries(names.slice(0, cut).map((name) => [name, migrations[name]!]));
      const told: string[][] = [];
      assert.deepEqual(
        await migrate(storage.db, { migrations: older, onNewerSchema: (n) => told.push(n) }),
        [],
      );
      assert.deepEqual(told, [names.slice(cut)]);
    } finally {
      await storage.cleanup();
    }
  });

  test('an applied migration no release recorded as additive is refused', async () => {
    const storage = await createStorage(dialect);
    try {
      // A release from before the flags were recorded ran a migration this one does not know.
      await storage.db.kysely
        // biome-ignore lint/suspicious/noExplicitAny: Kysely's own table is not in the schema type
        .insertInto('kysely_migration' as any)
        .values({ name: '2999-01-01-902-unrecorded', timestamp: new Date().toISOString() })
        .execute();
      await assert.rejects(migrate(storage.db), /2999-01-01-902-unrecorded \(not recorded as additive\)/);
    } finally {
      await storage.cleanup();
    }
  });
});
