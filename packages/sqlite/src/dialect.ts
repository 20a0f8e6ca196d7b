import type SQLite from 'better-sqlite3';
import { type Driver, SqliteDialect } from 'kysely';
import { GroupCommitDriver } from './driver.js';
import type { DriverOptions, SqliteStats } from './options.js';

/**
 * Kysely's SQLite dialect (its adapter, query compiler and introspector) with a driver made for
 * better-sqlite3, whose calls are synchronous: group commit, transactions as savepoints, a busy
 * wait that does not block the thread, statements prepared once. Get one from `openSqlite()`,
 * which also sets the pragmas it relies on. One dialect serves one `Kysely` instance; destroying
 * that instance closes the database.
 */
export class GroupCommitDialect extends SqliteDialect {
  readonly #driver: GroupCommitDriver;

  constructor(database: SQLite.Database, options: DriverOptions) {
    super({ database });
    this.#driver = new GroupCommitDriver(database, options);
  }

  override createDriver(): Driver {
    return this.#driver;
  }

  /** Waiting transactions, statements running and commits so far (metrics). */
  stats(): SqliteStats {
    return this.#driver.stats();
  }

  /** Runs `select 1` on the connection (readiness probes); rejects once the database is closed. */
  async ping(): Promise<void> {
    this.#driver.ping();
  }
}
