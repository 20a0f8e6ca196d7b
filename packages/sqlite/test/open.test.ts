import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Kysely, sql } from 'kysely';
import { openSqlite } from '../src/index.js';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

test('a new database is private: directories 0700, the file and its -wal and -shm 0600, whatever the umask', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tessera-open-'));
  const previous = process.umask(0o000);
  try {
    const file = join(root, 'data', 'nested', 'app.db');
    const db = new Kysely({ dialect: openSqlite(file) });
    await sql`create table t (id integer primary key)`.execute(db);
    await sql`insert into t default values`.execute(db);
    assert.equal(mode(join(root, 'data')), '700');
    assert.equal(mode(join(root, 'data', 'nested')), '700');
    assert.equal(mode(file), '600');
    assert.equal(mode(`${file}-wal`), '600');
    assert.equal(mode(`${file}-shm`), '600');
    await db.destroy();
  } finally {
    process.umask(previous);
    rmSync(root, { recursive: true, force: true });
  }
});

test('an existing directory keeps its mode; the database runs in WAL mode with synchronous=NORMAL', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tessera-open-'));
  try {
    const dir = join(root, 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const file = join(dir, 'app.db');
    const db = new Kysely({ dialect: openSqlite(file) });
    const pragma = async (name: string) =>
      Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0];
    assert.equal(await pragma('journal_mode'), 'wal');
    assert.equal(await pragma('synchronous'), 1); // NORMAL
    assert.equal(await pragma('foreign_keys'), 1);
    assert.equal(await pragma('busy_timeout'), 0); // the driver waits itself
    assert.equal(mode(dir), '755');
    assert.equal(mode(file), '600');
    await db.destroy();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the page cache is what cacheSizeKiB says (better-sqlite3 builds SQLite with 16,000 KiB); a bad size is refused', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tessera-open-'));
  try {
    const cacheSize = async (db: Kysely<unknown>) =>
      Object.values((await sql.raw('pragma cache_size').execute(db)).rows[0] as object)[0];
    const sized = new Kysely({ dialect: openSqlite(join(root, 'sized.db'), { cacheSizeKiB: 4096 }) });
    assert.equal(await cacheSize(sized), -4096);
    await sized.destroy();
    const unsized = new Kysely({ dialect: openSqlite(join(root, 'unsized.db')) });
    assert.equal(await cacheSize(unsized), -16000);
    await unsized.destroy();
    for (const bad of [0, -1, 1.5, Number.NaN])
      assert.throws(() => openSqlite(join(root, 'bad.db'), { cacheSizeKiB: bad }), /cacheSizeKiB/);
    assert.equal(existsSync(join(root, 'bad.db')), false, 'a refused option creates no file');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
