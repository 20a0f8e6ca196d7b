import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { GroupCommitDialect } from './dialect.js';
import type { SlowTransaction } from './options.js';

export interface SqliteOptions {
  /**
   * How long a write waits for another connection's write lock before it fails with
   * `SqliteBusyError` (SQLite's own busy handler, which sleeps on the thread, is off). Default 5000.
   */
  busyTimeoutMs?: number;
  /**
   * Development aid: called after a transaction held the database longer than `slowTransactionMs`.
   * Every other statement waits while a transaction runs, so one that awaits anything but the
   * database (an HTTP call, a timer, a slow hash) stalls every request. Leave it unset in
   * production: it captures a stack trace per transaction.
   */
  onSlowTransaction?: (transaction: SlowTransaction) => void;
  /** Threshold of `onSlowTransaction`, in milliseconds. Default 50. */
  slowTransactionMs?: number;
  /**
   * Called after each group commit with the number of statements and transactions it answered
   * (metrics: how well writes are batched). A throwing callback is ignored.
   */
  onCommit?: (operations: number) => void;
  /** `PRAGMA foreign_keys`. Default true. */
  foreignKeys?: boolean;
  /**
   * The connection's page cache, in KiB (`PRAGMA cache_size = -N`). Default: better-sqlite3's
   * build, 16,000 KiB, which a database that keeps growing fills and keeps. Pages it does not hold
   * are read from the operating system's file cache.
   */
  cacheSizeKiB?: number;
}

/**
 * Opens (creating if missing) a SQLite database file and returns the dialect to give Kysely:
 *
 * ```ts
 * const dialect = openSqlite('data/app.db');
 * const db = new Kysely<Database>({ dialect });
 * // …
 * await db.destroy(); // waits for statements in flight, then closes the file
 * ```
 *
 * A missing directory is created with mode 0700 and a missing file with mode 0600 (SQLite gives
 * the `-wal` and `-shm` files the mode of the database file); existing ones keep theirs. The
 * database runs in WAL mode with `synchronous=NORMAL`: a commit is answered once it is in the
 * WAL, before the WAL is fsynced — it survives the process being killed, not a power loss or an
 * operating-system crash (see the README). `':memory:'` opens a private in-memory database.
 */
export function openSqlite(path: string, options: SqliteOptions = {}): GroupCommitDialect {
  const { cacheSizeKiB } = options;
  // Checked before anything is created: a refused option leaves no file behind.
  if (cacheSizeKiB !== undefined && (!Number.isInteger(cacheSizeKiB) || cacheSizeKiB < 1))
    throw new RangeError('cacheSizeKiB must be a whole number of KiB, at least 1');
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') createPrivately(file);
  const database = new SQLite(file);
  try {
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.pragma(`foreign_keys = ${options.foreignKeys === false ? 'OFF' : 'ON'}`);
    // The driver waits for another connection's write lock itself, without blocking the thread.
    database.pragma('busy_timeout = 0');
    if (options.cacheSizeKiB !== undefined) database.pragma(`cache_size = -${options.cacheSizeKiB}`);
  } catch (error) {
    database.close();
    throw error;
  }
  return new GroupCommitDialect(database, {
    busyTimeoutMs: options.busyTimeoutMs ?? 5000,
    slowTransactionMs: options.slowTransactionMs ?? 50,
    onSlowTransaction: options.onSlowTransaction,
    onCommit: options.onCommit,
  });
}

/** The directory (0700) and an empty database file (0600), unless they exist. */
function createPrivately(file: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
  }
}
