import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { Channels, notifyChange } from '../../src/db/channels.js';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import { NoticeListener } from '../../src/db/notifications.js';
import type { SessionRepository } from '../../src/modules/session/session.repository.js';
import { RevocationList } from '../../src/modules/verify/revocation-list.js';
import { createStorage } from '../helpers/harness.js';
import { dropSchema, FreezableProxy, newSchema, postgresOnly, terminateBackends } from './helpers.js';

async function until(limitMs: number, what: string, condition: () => boolean): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!condition()) {
    assert.ok(performance.now() < deadline, `${what}: not within ${limitMs} ms`);
    await sleep(10);
  }
}

test('notifyChange does nothing on SQLite (other processes on the file poll)', async () => {
  const storage = await createStorage('sqlite');
  try {
    await notifyChange(storage.db.kysely, Channels.revocations, { sessions: ['s1'] });
    await storage.db.kysely.transaction().execute((trx) => notifyChange(trx, Channels.keys));
  } finally {
    await storage.cleanup();
  }
});

test('TESSERA_DATABASE_LISTEN_URL: a PostgreSQL URL, refused with a SQLite database', () => {
  const listen = 'postgres://tessera@db-direct.internal:5432/tessera';
  const pgUrl = 'postgres://tessera@pgbouncer.internal:6432/tessera';
  assert.equal(loadConfig({ TESSERA_DATABASE_URL: pgUrl }).databaseListenUrl, undefined);
  assert.equal(
    loadConfig({ TESSERA_DATABASE_URL: pgUrl, TESSERA_DATABASE_LISTEN_URL: listen }).databaseListenUrl,
    listen,
  );
  assert.throws(
    () => loadConfig({ TESSERA_DATABASE_URL: 'sqlite:/tmp/x.db', TESSERA_DATABASE_LISTEN_URL: listen }),
    (error: unknown) => error instanceof ConfigError && /PostgreSQL only/.test(error.message),
  );
  assert.throws(
    () => loadConfig({ TESSERA_DATABASE_URL: pgUrl, TESSERA_DATABASE_LISTEN_URL: 'http://db' }),
    /TESSERA_DATABASE_LISTEN_URL must start with postgres:\/\/ or postgresql:\/\//,
  );
});

test('a re-read after a notice begins after it, even with a read already in flight', async () => {
  const reads: Array<(rows: Array<{ id: string; revoked_at: number }>) => void> = [];
  const sessions = {
    revokedSince: () => new Promise((resolve) => reads.push(resolve)),
  } as unknown as SessionRepository;
  const list = new RevocationList(sessions, 3_600_000);
  const polling = list.refresh();
  // The notice arrives while that read is in flight: it may have read before the change.
  const afterChange = list.refreshAfterChange();
  const again = list.refreshAfterChange();
  assert.equal(again, afterChange, 'notices meanwhile share the queued read');
  reads[0]!([]);
  await polling;
  await until(1_000, 'the second read', () => reads.length === 2);
  reads[1]!([{ id: 'revoked-elsewhere', revoked_at: Date.now() }]);
  await afterChange;
  assert.equal(list.has('revoked-elsewhere'), true);
  assert.equal(reads.length, 2);
});

postgresOnly('NoticeListener', (url) => {
  const schema = newSchema();
  let db: Db;
  let proxy: FreezableProxy;
  before(async () => {
    db = await connect(url, { schema });
    await migrate(db);
    proxy = await FreezableProxy.start(url);
  });
  after(async () => {
    await db?.close();
    await proxy?.close();
    await dropSchema(url, schema);
  });

  /** A listener of `schema` through the proxy, with short bounds, recording what it hears. */
  function listener(applicationName: string) {
    const proxied = new URL(proxy.urlFor(url));
    proxied.searchParams.set('options', `-c search_path=${schema}`);
    proxied.searchParams.set('application_name', applicationName);
    const heard: Array<Readonly<Record<string, unknown>>> = [];
    const state = { listened: 0 };
    const notices = new NoticeListener(
      { connectionString: proxied.toString(), connectionTimeoutMillis: 500, query_timeout: 500 },
      { heartbeatMs: 200, retryFirstMs: 50, retryMaxMs: 200 },
    );
    notices.on(Channels.revocations, (detail) => heard.push(detail));
    notices.onListening(() => state.listened++);
    return { notices, heard, state };
  }

  test('delivers committed notices of its schema only, and none of a rolled-back transaction', async () => {
    const { notices, heard, state } = listener(`${schema}_a`);
    notices.start();
    try {
      await until(3_000, 'listening', () => notices.listening);
      assert.equal(state.listened, 1);
      await db.kysely.transaction().execute(async (trx) => {
        await notifyChange(trx, Channels.revocations, { sessions: ['s1'] });
        await sleep(100);
        assert.equal(heard.length, 0, 'delivered before the commit');
      });
      await until(1_000, 'the committed notice', () => heard.length === 1);
      assert.deepEqual(heard[0], { schema, sessions: ['s1'] });

      await db.kysely
        .transaction()
        .execute(async (trx) => {
          await notifyChange(trx, Channels.revocations, { sessions: ['s2'] });
          throw new Error('roll back');
        })
        .catch(() => {});
      // Another deployment's schema on the same database: its notice is not ours.
      const otherSchema = newSchema();
      const other = await connect(url, { schema: otherSchema });
      try {
        await notifyChange(other.kysely, Channels.revocations, { sessions: ['s3'] });
      } finally {
        await other.close();
        await dropSchema(url, otherSchema);
      }
      // Too long for a notice: the detail is left out, and listeners re-read everything.
      const many = Array.from({ length: 1000 }, (_, i) => `session-${i}`);
      await notifyChange(db.kysely, Channels.revocations, { sessions: many });
      await until(1_000, 'the long notice', () => heard.length === 2);
      assert.deepEqual(heard[1], { schema });
    } finally {
      await notices.close();
    }
  });

  test('a terminated connection is reopened and listening begins again', async () => {
    const name = `${schema}_b`;
    const { notices, heard, state } = listener(name);
    notices.start();
    try {
      await until(3_000, 'listening', () => notices.listening);
      assert.ok((await terminateBackends(url, name)) >= 1);
      await until(1_000, 'the loss noticed', () => !notices.listening);
      await until(3_000, 'listening again', () => notices.listening);
      assert.equal(state.listened, 2);
      await notifyChange(db.kysely, Channels.revocations, { sessions: ['after'] });
      await until(1_000, 'a notice after the reconnection', () => heard.length === 1);
    } finally {
      await notices.close();
    }
  });

  test('a connection gone silent is noticed by the heartbeat and replaced once the database answers', async () => {
    const { notices, state } = listener(`${schema}_c`);
    notices.start();
    try {
      await until(3_000, 'listening', () => notices.listening);
      proxy.freeze();
      // Heartbeat every 200 ms, given up after 500 ms.
      await until(2_000, 'the silent connection noticed', () => !notices.listening);
      await sleep(700);
      assert.equal(notices.listening, false, 'listening while the database cannot answer');
      proxy.thaw();
      await until(3_000, 'listening again', () => notices.listening);
      assert.equal(state.listened, 2);
    } finally {
      proxy.thaw();
      await notices.close();
    }
  });

  test('close() stops it for good, even while it reconnects', async () => {
    const name = `${schema}_d`;
    const { notices } = listener(name);
    notices.start();
    await until(3_000, 'listening', () => notices.listening);
    proxy.freeze();
    await terminateBackends(url, name);
    await until(1_000, 'the loss noticed', () => !notices.listening);
    await notices.close();
    proxy.thaw();
    await sleep(500);
    assert.equal(notices.listening, false);
    assert.equal(await terminateBackends(url, name), 0, 'a connection of the closed listener is open');
  });
});
