import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { type GroupCommitDialect, openSqlite, type SqliteOptions } from '../src/index.js';

export interface TestDatabase {
  file: string;
  dialect: GroupCommitDialect;
  /** Through the group-commit driver. */
  db: Kysely<unknown>;
  /** A second, plain connection to the same file: sees only what is committed. */
  other: SQLite.Database;
  /** Rows of `t` as the other connection sees them (committed data only). */
  committed(): string[];
  cleanup(): Promise<void>;
}

/** A fresh database file with a table `t (id, name)`. */
export async function openTestDatabase(options: SqliteOptions = {}): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-sqlite-'));
  const file = join(dir, 'test.db');
  const dialect = openSqlite(file, options);
  const db = new Kysely<unknown>({ dialect });
  await sql`create table t (id integer primary key, name text not null)`.execute(db);
  const other = new SQLite(file);
  other.pragma('busy_timeout = 0');
  const committedRows = other.prepare('select name from t order by id').pluck();
  return {
    file,
    dialect,
    db,
    other,
    committed: () => committedRows.all() as string[],
    cleanup: async () => {
      other.close();
      await db.destroy().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const insert = (db: Kysely<unknown>, name: string) =>
  sql`insert into t (name) values (${name})`.execute(db);
