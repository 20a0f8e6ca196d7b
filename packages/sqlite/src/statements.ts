import type SQLite from 'better-sqlite3';
import type { CompiledQuery, QueryResult } from 'kysely';

const CACHE_SIZE = 1000;

/**
 * Statements prepared once per SQL text (a bounded cache): Kysely's own SQLite driver prepares on
 * every execution, which costs about as much as one point query.
 */
export class Statements {
  readonly #database: SQLite.Database;
  readonly #cache = new Map<string, SQLite.Statement>();

  constructor(database: SQLite.Database) {
    this.#database = database;
  }

  prepare(sql: string): SQLite.Statement {
    let statement = this.#cache.get(sql);
    if (!statement) {
      if (this.#cache.size >= CACHE_SIZE) this.#cache.clear();
      statement = this.#database.prepare(sql);
      this.#cache.set(sql, statement);
    }
    return statement;
  }

  run(sql: string): void {
    this.prepare(sql).run();
  }

  step<R>(statement: SQLite.Statement, compiledQuery: CompiledQuery): QueryResult<R> {
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  clear(): void {
    this.#cache.clear();
  }
}
