import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { migrationProvider } from '../migrations/index.js';
import type { Database } from './schema.js';
import { FastSqliteDialect } from './sqlite-dialect.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** Cheap round trip for readiness probes. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

// int8 (bigint) columns hold millisecond timestamps, far below 2^53: read them as numbers.
pg.types.setTypeParser(20, (value) => Number(value));

export interface ConnectOptions {
  /** PostgreSQL only: the schema to use (tests create one each); created if missing. */
  schema?: string;
  poolSize?: number;
}

/** Opens `sqlite:<path>` (WAL, foreign keys on) or `postgres://…`. */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Db> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || ':memory:';
    if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
    const database = new SQLite(path);
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.pragma('foreign_keys = ON');
    // The driver waits for another connection's write lock itself, without blocking the thread.
    database.pragma('busy_timeout = 0');
    const dialect = new FastSqliteDialect(database);
    const kysely = new Kysely<Database>({ dialect });
    return {
      kysely,
      dialect: 'sqlite',
      ping: async () => {
        database.prepare('select 1').get();
      },
      close: async () => {
        await dialect.quiet();
        await kysely.destroy();
      },
    };
  }
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema))
    throw new Error('schema name must be a plain identifier');
  if (schema) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`create schema if not exists ${schema}`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    dialect: 'postgres',
    ping: async () => {
      await pool.query('select 1');
    },
    close: () => kysely.destroy(),
  };
}

/** Runs every pending migration; throws with the failing migration's name. */
export async function migrate(db: Db): Promise<string[]> {
  // Kysely looks for its migration tables in every schema unless told which: with another
  // schema of the same database already migrated, it would skip creating them in ours.
  const migrationTableSchema =
    db.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db: db.kysely,
    provider: migrationProvider,
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
  let { error, results } = await migrator.migrateToLatest();
  // Before taking its lock, Kysely's migrator introspects the tables of every schema of the
  // database; a schema dropped or altered meanwhile (tests drop theirs) fails that query. No
  // migration has run then (no results), so it is safe to try again.
  for (
    let retry = 0;
    retry < 5 && error && !results && db.dialect === 'postgres' && isCatalogRace(error);
    retry++
  ) {
    ({ error, results } = await migrator.migrateToLatest());
  }
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** invalid_schema_name, undefined_table, undefined_column: a relation of another schema vanished. */
function isCatalogRace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '3F000' || code === '42P01' || code === '42703';
}
