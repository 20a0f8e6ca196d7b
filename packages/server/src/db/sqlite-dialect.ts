import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteDialect,
} from 'kysely';

/**
 * Kysely's SQLite dialect with a leaner driver for better-sqlite3, whose calls are synchronous:
 *
 * - Each SQL text is prepared once. Kysely's own driver prepares on every execution, which costs
 *   about as much as running one of our point queries (measured: 17% of refresh-grant CPU). The
 *   cache is bounded: texts that vary (IN lists) cannot grow it forever.
 * - The one connection is handed out in FIFO order. Kysely's mutex wakes every waiter at each
 *   release and all but one go back to sleep, so under load (50 requests waiting on a transaction)
 *   each release cost a wake-up per waiter.
 * - Transactions begin IMMEDIATE: all of ours write, and taking the write lock up front makes
 *   another process's writer wait (busy_timeout) instead of failing at the first write with
 *   SQLITE_BUSY.
 */
export class FastSqliteDialect extends SqliteDialect {
  readonly #database: SQLite.Database;

  constructor(database: SQLite.Database) {
    super({ database });
    this.#database = database;
  }

  override createDriver(): Driver {
    return new SerialSqliteDriver(this.#database);
  }
}

const STATEMENT_CACHE_SIZE = 1000;

class SerialSqliteDriver implements Driver {
  readonly #connection: SqliteConnection;
  readonly #database: SQLite.Database;
  readonly #waiting: Array<() => void> = [];
  #busy = false;

  constructor(database: SQLite.Database) {
    this.#database = database;
    this.#connection = new SqliteConnection(database);
  }

  async init(): Promise<void> {}

  acquireConnection(): Promise<DatabaseConnection> {
    if (!this.#busy) {
      this.#busy = true;
      return Promise.resolve(this.#connection);
    }
    return new Promise((resolve) => this.#waiting.push(() => resolve(this.#connection)));
  }

  async releaseConnection(): Promise<void> {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    this.#database.close();
  }
}

class SqliteConnection implements DatabaseConnection {
  readonly #database: SQLite.Database;
  readonly #statements = new Map<string, SQLite.Statement>();

  constructor(database: SQLite.Database) {
    this.#database = database;
  }

  #prepare(sql: string): SQLite.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.clear();
      statement = this.#database.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const statement = this.#prepare(compiledQuery.sql);
      const parameters = compiledQuery.parameters as unknown[];
      if (statement.reader) return Promise.resolve({ rows: statement.all(parameters) as R[] });
      const { changes, lastInsertRowid } = statement.run(parameters);
      return Promise.resolve({
        numAffectedRows: BigInt(changes),
        insertId: BigInt(lastInsertRowid),
        rows: [],
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('SQLite streams select queries only');
    const statement = this.#prepare(compiledQuery.sql);
    for (const row of statement.iterate(compiledQuery.parameters as unknown[])) yield { rows: [row as R] };
  }
}
