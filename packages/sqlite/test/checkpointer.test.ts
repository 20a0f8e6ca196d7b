import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { CHECKPOINTER_RESOURCE_LIMITS, Checkpointer } from '../src/checkpointer.js';
import { openSqlite } from '../src/index.js';

function tempFile(): { file: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-wal-'));
  return { file: join(dir, 'wal.db'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

test('the checkpointer thread copies the WAL into the database file while the writer goes on', async () => {
  const { file, cleanup } = tempFile();
  const db = new SQLite(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0'); // this connection never checkpoints by itself
    db.exec('create table t (id integer primary key, body text)');
    const insert = db.prepare('insert into t (body) values (?)');
    const body = 'x'.repeat(3000);
    for (let i = 0; i < 3000; i++) insert.run(body); // ~9 MB, all of it in the WAL
    const before = statSync(file).size;
    assert.ok(before < 1024 * 1024, `nothing is checkpointed yet (${before} bytes)`);
    const checkpointer = new Checkpointer(file, 20);
    try {
      let size = before;
      for (let waited = 0; waited < 5000 && size < 8 * 1024 * 1024; waited += 20) {
        insert.run(body); // the writer is not blocked meanwhile
        await sleep(20);
        size = statSync(file).size;
      }
      assert.ok(size >= 8 * 1024 * 1024, `the database file stayed at ${size} bytes`);
    } finally {
      await checkpointer.close();
    }
    await new Checkpointer(file).close(); // closing at once is fine too
  } finally {
    db.close();
    cleanup();
  }
});

test('the checkpointer truncates the WAL to zero bytes every truncateEveryMs (wal_checkpoint(TRUNCATE))', async () => {
  const { file, cleanup } = tempFile();
  const db = new SQLite(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0'); // this connection never checkpoints by itself
    db.exec('create table t (id integer primary key, body text)');
    const insert = db.prepare('insert into t (body) values (?)');
    for (let i = 0; i < 1000; i++) insert.run('x'.repeat(3000)); // ~3 MB in the WAL
    assert.ok(statSync(`${file}-wal`).size > 1024 * 1024);
    const checkpointer = new Checkpointer(file, 20, 100);
    try {
      let wal = statSync(`${file}-wal`).size;
      for (let waited = 0; waited < 5000 && wal > 0; waited += 20) {
        await sleep(20);
        wal = statSync(`${file}-wal`).size;
      }
      assert.equal(wal, 0, 'the WAL was never truncated');
    } finally {
      await checkpointer.close();
    }
  } finally {
    db.close();
    cleanup();
  }
});

test('a SQLite database closes its checkpointer first: the last connection removes the WAL', async () => {
  const { file, cleanup } = tempFile();
  try {
    const db = new Kysely({ dialect: openSqlite(file) });
    await sql`create table t (id integer primary key)`.execute(db);
    // Enough commits for the driver to start its checkpointer thread (it starts after 200).
    for (let i = 0; i < 300; i++) await sql`insert into t default values`.execute(db);
    await db.destroy();
    assert.equal(existsSync(`${file}-wal`), false);
  } finally {
    cleanup();
  }
});

test('the checkpointer thread runs with a small V8 heap, not the defaults of a whole process', async () => {
  const { file, cleanup } = tempFile();
  const db = new SQLite(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0'); // only the thread checkpoints
    const checkpointer = new Checkpointer(file, 20);
    try {
      assert.deepEqual(
        {
          young: checkpointer.resourceLimits.maxYoungGenerationSizeMb,
          old: checkpointer.resourceLimits.maxOldGenerationSizeMb,
        },
        {
          young: CHECKPOINTER_RESOURCE_LIMITS.maxYoungGenerationSizeMb,
          old: CHECKPOINTER_RESOURCE_LIMITS.maxOldGenerationSizeMb,
        },
      );
      assert.ok(CHECKPOINTER_RESOURCE_LIMITS.maxYoungGenerationSizeMb <= 2);
      // Within those limits it still checkpoints: the WAL is emptied into the file.
      db.exec('create table t (body text)');
      const insert = db.prepare('insert into t values (?)');
      for (let i = 0; i < 1000; i++) insert.run('x'.repeat(3000));
      let size = statSync(file).size;
      for (let waited = 0; waited < 5000 && size < 2 * 1024 * 1024; waited += 20) {
        await sleep(20);
        size = statSync(file).size;
      }
      assert.ok(size >= 2 * 1024 * 1024, `the database file stayed at ${size} bytes`);
    } finally {
      await checkpointer.close();
    }
  } finally {
    db.close();
    cleanup();
  }
});
