import type SQLite from 'better-sqlite3';
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult } from 'kysely';
import { SelectQueryNode } from 'kysely';
import { Checkpointer } from './checkpointer.js';
import { SqliteBusyError, SqliteClosedError } from './errors.js';
import type { DriverOptions, SqliteStats } from './options.js';
import { Statements } from './statements.js';

/** Commits after which the WAL is checkpointed on another thread (short-lived processes never start it). */
const CHECKPOINTER_AFTER_COMMITS = 200;
/** The main connection's own automatic checkpoint once that thread runs: 10,000 pages, 40 MB. */
const BACKSTOP_CHECKPOINT_PAGES = 10_000;
const SAVEPOINT = 'kysely_trx';

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

/**
 * The driver behind `GroupCommitDialect` (see the package README for the contract).
 *
 * Writes share one batch transaction (`BEGIN IMMEDIATE`) that commits at the next turn of the
 * event loop; a statement of the batch, and a read made while it is open, is answered after that
 * commit. `db.transaction()` runs as a savepoint inside the batch, one at a time.
 */
export class GroupCommitDriver implements Driver {
  readonly #database: SQLite.Database;
  readonly #options: DriverOptions;
  readonly #statements: Statements;
  /** The handle whose transaction is running, if any; other handles wait for it. */
  #owner: Handle | undefined;
  /** When the owner took the database, and where (only with `onSlowTransaction`). */
  #ownedSince = 0;
  #ownerStack: string | undefined;
  readonly #queue: Array<() => void> = [];
  /** A batch transaction is open. */
  #open = false;
  /** Statements answered when the batch commits. */
  #waiting: Waiter[] = [];
  #flushScheduled = false;
  #opening: Promise<void> | undefined;
  /** Statements and transaction starts issued and not yet answered. */
  #running = 0;
  #state: 'open' | 'closing' | 'closed' = 'open';
  /** Wakes `destroy()` once nothing runs. */
  #onIdle: (() => void) | undefined;
  #commits = 0;
  #checkpointer: Checkpointer | undefined;

  constructor(database: SQLite.Database, options: DriverOptions) {
    this.#database = database;
    this.#options = options;
    this.#statements = new Statements(database);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#state === 'closed') throw new SqliteClosedError();
    return new Handle(this);
  }

  async releaseConnection(): Promise<void> {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const handle = connection as Handle;
    if (this.#state === 'closed') throw new SqliteClosedError();
    this.#running++;
    try {
      for (let wait = this.#blocker(handle, true); wait; wait = this.#blocker(handle, true)) await wait;
      // Nothing yields between the last check and taking the turn: no other waiter slips in.
      this.#owner = handle;
      if (this.#options.onSlowTransaction) {
        this.#ownedSince = performance.now();
        this.#ownerStack = new Error('transaction began').stack;
      }
      try {
        this.#statements.run(`savepoint ${SAVEPOINT}`);
      } catch (error) {
        this.#endTransaction();
        throw error;
      }
    } finally {
      this.#running--;
      this.#checkIdle();
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#owner !== connection) throw new Error('commit outside the transaction');
    this.#statements.run(`release ${SAVEPOINT}`);
    this.#endTransaction();
    this.#running++;
    try {
      await this.#afterCommit();
    } finally {
      this.#running--;
      this.#checkIdle();
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // Kysely also rolls back when the commit failed: the savepoint is released by then and the
    // batch's failure is already the caller's error.
    if (this.#owner !== connection) return;
    try {
      // The whole batch may be gone already (an error that ends the transaction in SQLite).
      if (this.#database.inTransaction) {
        this.#statements.run(`rollback to ${SAVEPOINT}`);
        this.#statements.run(`release ${SAVEPOINT}`);
      }
    } finally {
      this.#endTransaction();
    }
  }

  /**
   * Closes once nothing runs: statements already issued, the running transaction (with the
   * statements it still issues) and the open batch finish first; Kysely hands out no connection
   * once it is destroying, and once closed every statement is refused with `SqliteClosedError`.
   */
  async destroy(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'closing';
    while (!this.#idle()) {
      await new Promise<void>((resolve) => {
        this.#onIdle = resolve;
      });
    }
    this.#state = 'closed';
    this.#statements.clear();
    await this.#checkpointer?.close();
    this.#database.close();
  }

  stats(): SqliteStats {
    return { waitingTransactions: this.#queue.length, running: this.#running, commits: this.#commits };
  }

  /** `select 1` on the connection, for readiness probes. */
  ping(): void {
    if (this.#state === 'closed') throw new SqliteClosedError();
    this.#statements.prepare('select 1').get();
  }

  async execute<R>(handle: Handle, compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#state === 'closed') throw new SqliteClosedError();
    this.#running++;
    try {
      const statement = this.#statements.prepare(compiledQuery.sql);
      const writes = !statement.readonly;
      for (let wait = this.#blocker(handle, writes); wait; wait = this.#blocker(handle, writes)) await wait;
      // From the last check on nothing yields until the statement has run.
      // A read with no batch open sees only committed data: it is answered at once.
      if (!this.#open) return this.#statements.step<R>(statement, compiledQuery);
      let result: QueryResult<R>;
      try {
        result = this.#statements.step<R>(statement, compiledQuery);
      } catch (error) {
        this.#checkBatch(error);
        throw error;
      }
      if (this.#owner !== handle) await this.#afterCommit();
      return result;
    } finally {
      this.#running--;
      this.#checkIdle();
    }
  }

  /**
   * What the handle must wait for before it runs: another handle's transaction, or — when it
   * writes — the batch to open. Undefined when it may run now; the caller must then go on
   * without yielding, so that both still hold.
   */
  #blocker(handle: Handle, writes: boolean): Promise<void> | undefined {
    if (this.#owner !== undefined && this.#owner !== handle) return this.#nextTurn();
    if (writes && !this.#open) {
      if (this.#opening) return this.#opening;
      if (this.#tryBegin()) return undefined;
      this.#opening = this.#waitForLock().finally(() => {
        this.#opening = undefined;
      });
      return this.#opening;
    }
    return undefined;
  }

  /** Opens the batch (`BEGIN IMMEDIATE`) if no other connection holds the write lock. */
  #tryBegin(): boolean {
    try {
      this.#statements.run('begin immediate');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return false;
      throw error;
    }
    this.#open = true;
    this.#scheduleFlush();
    return true;
  }

  /**
   * Another connection holds the write lock — another process, or another connection of this
   * one (tests) that can only let go when this thread runs — so it is waited for here, with a
   * growing delay, not in SQLite's busy handler that sleeps on the thread.
   */
  async #waitForLock(): Promise<void> {
    const { busyTimeoutMs } = this.#options;
    const deadline = Date.now() + busyTimeoutMs;
    for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new SqliteBusyError(busyTimeoutMs);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
      if (this.#tryBegin()) return;
    }
  }

  /** Resolves when the running transaction ends. */
  #nextTurn(): Promise<void> {
    return new Promise<void>((resolve) => this.#queue.push(resolve));
  }

  #endTransaction(): void {
    this.#reportSlowTransaction();
    this.#owner = undefined;
    // Wake the waiters in order; each checks again, and the first to begin a transaction takes
    // the next turn (the others then wait for that one).
    const woken = this.#queue.splice(0);
    for (const wake of woken) wake();
    this.#scheduleFlush();
    this.#checkIdle();
  }

  /** While a transaction owns the connection every other statement waits: say when that lasts. */
  #reportSlowTransaction(): void {
    const report = this.#options.onSlowTransaction;
    if (!report) return;
    const heldMs = performance.now() - this.#ownedSince;
    const thresholdMs = this.#options.slowTransactionMs;
    if (heldMs <= thresholdMs) return;
    try {
      report({ heldMs: Math.round(heldMs), thresholdMs, stack: this.#ownerStack });
    } catch {
      // A failing report must not fail the transaction it reports on.
    }
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
      this.#statements.run('commit');
    } catch (error) {
      // Runs in a setImmediate callback: nothing may escape, or the process would crash.
      try {
        if (this.#database.inTransaction) this.#statements.run('rollback');
      } catch {
        // The connection is broken; every waiter gets the commit's error.
      }
      for (const w of waiting) w.reject(error);
      this.#checkIdle();
      return;
    }
    for (const w of waiting) w.resolve();
    if (++this.#commits === CHECKPOINTER_AFTER_COMMITS) this.#startCheckpointer();
    this.#reportCommit(waiting.length);
    this.#checkIdle();
  }

  #reportCommit(operations: number): void {
    try {
      this.#options.onCommit?.(operations);
    } catch {
      // Runs in a setImmediate callback: a failing report must not crash the process.
    }
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

  #idle(): boolean {
    return this.#running === 0 && this.#owner === undefined && !this.#open;
  }

  #checkIdle(): void {
    if (this.#onIdle && this.#idle()) {
      const wake = this.#onIdle;
      this.#onIdle = undefined;
      wake();
    }
  }
}
