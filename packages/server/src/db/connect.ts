import type { SlowTransaction } from '@tessera/sqlite';
import { Kysely } from 'kysely';
import type { NoticeListener } from './notifications.js';
import type { PostgresOptions } from './postgres.js';
import type { Database } from './schema.js';
import type { DbStats } from './stats.js';

export { migrate, SchemaTooNewError } from './migrate.js';
export type { DbStats };

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** Cheap round trip for readiness probes. */
  ping(): Promise<void>;
  /** The pool's connections and waiters now (no round trip). */
  stats(): DbStats;
  /** SQLite: called after each group commit with the operations it answered. */
  onBatchCommit?(listener: (operations: number) => void): void;
  close(): Promise<void>;
  /** PostgreSQL: runs `fn` on a connection of its own without statement timeouts (migrations). */
  withoutTimeouts?<T>(fn: (kysely: Kysely<Database>) => Promise<T>): Promise<T>;
  /** PostgreSQL: a listener for other instances' change notices (see PostgresDb.listen). */
  listen?(listenUrl?: string): NoticeListener;
}

/** PostgreSQL options (see PostgresOptions: `schema` is created if missing), and SQLite's. */
export interface ConnectOptions extends PostgresOptions {
  /**
   * SQLite only: called when a transaction held the database longer than 50 ms. Pass it in
   * development: on SQLite every request waits while a transaction runs, so one that awaits
   * anything but the database stalls them all.
   */
  onSlowTransaction?: (transaction: SlowTransaction) => void;
  /** SQLite only: the connection's page cache in KiB (TESSERA_SQLITE_CACHE_MB). */
  sqliteCacheKiB?: number;
}

/** Opens `sqlite:<path>` (WAL, foreign keys on; see @tessera/sqlite) or `postgres://…`. */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Db> {
  if (url.startsWith('sqlite:')) return connectSqlite(url.slice('sqlite:'.length) || ':memory:', options);
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema))
    throw new Error('schema name must be a plain identifier');
  // Imported on first use, as SQLite's engine is below: a SQLite process never loads node-postgres.
  const { createSchema, openPostgres } = await import('./postgres.js');
  if (schema) await createSchema(url, schema, options.timeouts);
  return {
    ...openPostgres(url, { applicationName: schema ? `tessera/${schema}` : undefined, ...options }),
    dialect: 'postgres',
  };
}

/**
 * The SQLite engine is imported here, on first use, so that a PostgreSQL deployment never loads
 * the native better-sqlite3 module (nor needs it installed).
 */
async function connectSqlite(path: string, options: ConnectOptions): Promise<Db> {
  const { openSqlite } = await import('@tessera/sqlite').catch((error: unknown) => {
    throw new Error(
      'TESSERA_DATABASE_URL names a SQLite database, but @tessera/sqlite (better-sqlite3) could not be loaded; install it or use PostgreSQL',
      { cause: error },
    );
  });
  const commitListeners: Array<(operations: number) => void> = [];
  const dialect = openSqlite(path, {
    onSlowTransaction: options.onSlowTransaction,
    cacheSizeKiB: options.sqliteCacheKiB,
    onCommit: (operations) => {
      for (const listener of commitListeners) listener(operations);
    },
  });
  const kysely = new Kysely<Database>({ dialect });
  return {
    kysely,
    dialect: 'sqlite',
    ping: () => dialect.ping(),
    stats: () => ({ max: 1, waiting: dialect.stats().waitingTransactions }),
    onBatchCommit: (listener) => {
      commitListeners.push(listener);
    },
    // Waits for statements already issued; the HTTP app drains its handlers before this.
    close: () => kysely.destroy(),
  };
}
