import type SQLite from 'better-sqlite3';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteDialect,
} from 'kysely';
import { Checkpointer } from './checkpointer.js';

/**
 * Kysely's SQLite dialect with a driver made for better-sqlite3, whose calls are synchronous.
 *
 * **Group commit.** A write transaction in WAL mode costs far more at its commit than its
 * statements do (measured: an autocommit upsert about 8× a point select). So writes issued while
 * other requests are in flight share one transaction: the first write opens it (`BEGIN IMMEDIATE`),
 * every statement until the next turn of the event loop runs inside it, and it commits then. A
 * statement of the batch — and every read made while the batch holds writes, which could have
 * seen them — is answered only after the commit succeeded, so nothing is reported done before it
 * is durable, and a failed commit fails every statement of the batch.
 *
 * **Transactions** (`db.transaction()`) run one at a time, as a savepoint inside the batch: their
 * statements are answered at once (the caller awaits each), other statements wait until the
 * transaction ends, a rollback undoes only its own work, and the commit is answered after the
 * batch commits. Taking the write lock up front (IMMEDIATE) makes another process's writer wait
 * for it (busy_timeout) instead of failing with SQLITE_BUSY halfway.
 *
 * **The WAL is checkpointed on another thread** once the database keeps writing (`Checkpointer`).
 *
 * **Statements are prepared once** per SQL text (Kysely's own driver prepares on every call,
 * which costs about as much as one of our point queries); the cache is bounded.
 */
export class FastSqliteDialect extends SqliteDialect {
  readonly #database: SQLite.Database;

  constructor(database: SQLite.Database) {
    super({ database });
    this.#database = database;
  }

  #driver: GroupCommitDriver | undefined;

  override createDriver(): Driver {
    this.#driver = new GroupCommitDriver(this.#database);
    return this.#driver;
  }

  /**
   * Resolves once no statement has run for `quietMs` (or after `limitMs`): before closing, so that
   * a request still finishing — its client gone, the server already closed — is not cut off
   * between two statements.
   */
  async quiet(quietMs = 50, limitMs = 5000): Promise<void> {
    const deadline = performance.now() + limitMs;
    for (;;) {
      const idleFor = performance.now() - (this.#driver?.lastActivity ?? 0);
      if (idleFor >= quietMs || performance.now() >= deadline) return;
      await new Promise((resolve) => setTimeout(resolve, quietMs - idleFor));
    }
  }
}

const STATEMENT_CACHE_SIZE = 1000;
/** Commits after which the WAL is checkpointed on another thread (short-lived processes never start it). */
const CHECKPOINTER_AFTER_COMMITS = 200;
/** The main connection's own automatic checkpoint once that thread runs: 10,000 pages, 40 MB. */
const BACKSTOP_CHECKPOINT_PAGES = 10_000;
const SAVEPOINT = 'kysely_trx';
/** How long a write waits for another connection's write lock (SQLite's own busy_timeout is 0). */
const BUSY_TIMEOUT_MS = 5000;

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** One handle per acquisition; they all share the driver's single database connection. */
class Handle implements DatabaseConnection {
  constructor(private readonly driver: GroupCommitDriver) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute(this, compiledQuery);
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('SQLite streams select queries only');
    const { rows } = await this.driver.execute<R>(this, compiledQuery);
    for (const row of rows) yield { rows: [row] };
  }
}

class GroupCommitDriver implements Driver {
  readonly #database: SQLite.Database;
  readonly #statements = new Map<string, SQLite.Statement>();
  /** The handle whose transaction is running, if any; other handles wait for it. */
  #owner: Handle | undefined;
  readonly #queue: Array<() => void> = [];
  /** A batch transaction is open. */
  #open = false;
  /** Statements answered when the batch commits. */
  #waiting: Waiter[] = [];
  #flushScheduled = false;
  /** When a statement last started (performance.now()). */
  lastActivity = 0;
  #commits = 0;
  #checkpointer: Checkpointer | undefined;
  #opening: Promise<void> | undefined;

  constructor(database: SQLite.Database) {
    this.#database = database;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Handle(this);
  }

  async releaseConnection(): Promise<void> {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const handle = connection as Handle;
    for (let wait = this.#blocker(handle, true); wait; wait = this.#blocker(handle, true)) await wait;
    // Nothing yields between the last check and taking the turn: no other waiter slips in.
    this.#owner = handle;
    this.#run(`savepoint ${SAVEPOINT}`);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#owner !== connection) throw new Error('commit outside the transaction');
    this.#run(`release ${SAVEPOINT}`);
    this.#endTransaction();
    await this.#afterCommit();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#owner !== connection) throw new Error('rollback outside the transaction');
    try {
      // The whole batch may be gone already (an error that ends the transaction in SQLite).
      if (this.#database.inTransaction) {
        this.#run(`rollback to ${SAVEPOINT}`);
        this.#run(`release ${SAVEPOINT}`);
      }
    } finally {
      this.#endTransaction();
    }
  }

  async destroy(): Promise<void> {
    while (this.#owner || this.#open) await new Promise<void>((resolve) => setImmediate(resolve));
    await this.#checkpointer?.close();
    this.#database.close();
  }

  async execute<R>(handle: Handle, compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    this.lastActivity = performance.now();
    const statement = this.#prepare(compiledQuery.sql);
    const writes = !statement.readonly;
    for (let wait = this.#blocker(handle, writes); wait; wait = this.#blocker(handle, writes)) await wait;
    // From the last check on nothing yields until the statement has run.
    const inTransaction = this.#owner === handle;
    // A read with no batch open sees only committed data: it is answered at once.
    if (!this.#open) return this.#step<R>(statement, compiledQuery);
    let result: QueryResult<R>;
    try {
      result = this.#step<R>(statement, compiledQuery);
    } catch (error) {
      this.#checkBatch(error);
      throw error;
    }
    if (!inTransaction) await this.#afterCommit();
    return result;
  }

  /**
   * What the handle must wait for before it runs: another handle's transaction, or — when it
   * writes — the batch to open. Undefined when it may run now; the caller must then go on
   * without yielding, so that both still hold.
   */
  #blocker(handle: Handle, writes: boolean): Promise<void> | undefined {
    if (this.#owner !== undefined && this.#owner !== handle) return this.#nextTurn();
    if (writes && !this.#open) {
      this.#opening ??= this.#begin().finally(() => {
        this.#opening = undefined;
      });
      return this.#opening;
    }
    return undefined;
  }

  /**
   * Opens the batch. The write lock may be held by another connection — another process, or
   * another connection of this one (tests) that can only let go when this thread runs — so a busy
   * database is waited for here, asynchronously, not in SQLite's sleeping busy handler.
   */
  async #begin(): Promise<void> {
    const deadline = Date.now() + BUSY_TIMEOUT_MS;
    for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
      try {
        this.#run('begin immediate');
        this.#open = true;
        this.#scheduleFlush();
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** Resolves when the running transaction ends. */
  #nextTurn(): Promise<void> {
    return new Promise<void>((resolve) => this.#queue.push(resolve));
  }

  #endTransaction(): void {
    this.#owner = undefined;
    // Wake the waiters in order; each checks again, and the first to begin a transaction takes
    // the next turn (the others then wait for that one).
    const woken = this.#queue.splice(0);
    for (const wake of woken) wake();
    this.#scheduleFlush();
  }

  #afterCommit(): Promise<void> {
    return new Promise<void>((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || !this.#open) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  /** Commits the batch unless a transaction is running (its end schedules the flush again). */
  #flush(): void {
    if (!this.#open || this.#owner) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.#open = false;
    try {
      this.#run('commit');
    } catch (error) {
      // Runs in a setImmediate callback: nothing may escape, or the process would crash.
      try {
        if (this.#database.inTransaction) this.#run('rollback');
      } catch {
        // The connection is broken; every waiter gets the commit's error.
      }
      for (const w of waiting) w.reject(error);
      return;
    }
    for (const w of waiting) w.resolve();
    if (++this.#commits === CHECKPOINTER_AFTER_COMMITS) this.#startCheckpointer();
  }

  /** A database that keeps writing gets its WAL checkpointed on another thread (file databases). */
  #startCheckpointer(): void {
    if (this.#database.memory) return;
    this.#checkpointer = new Checkpointer(this.#database.name);
    this.#database.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  }

  /** After a failed statement: if SQLite ended the whole transaction, the batch has failed. */
  #checkBatch(error: unknown): void {
    if (!this.#open || this.#database.inTransaction) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.#open = false;
    for (const w of waiting) w.reject(error);
  }

  #step<R>(statement: SQLite.Statement, compiledQuery: CompiledQuery): QueryResult<R> {
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  #run(sql: string): void {
    this.#prepare(sql).run();
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
}
