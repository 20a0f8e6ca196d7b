/**
 * A statement refused because the database is closed — or closing, and the statement was not
 * already running (statements issued before `destroy()` still finish).
 */
export class SqliteClosedError extends Error {
  readonly code = 'ERR_SQLITE_CLOSED';

  constructor() {
    super('the SQLite database is closed');
    this.name = 'SqliteClosedError';
  }
}

/**
 * The busy wait gave up: another connection (another process, usually) held the write lock for
 * the whole `busyTimeoutMs`. Every write waiting for that batch fails with it. The code is
 * SQLite's own, so callers that already handle `SQLITE_BUSY` keep working.
 */
export class SqliteBusyError extends Error {
  readonly code = 'SQLITE_BUSY';

  constructor(waitedMs: number) {
    super(`the SQLite database stayed locked by another connection for ${waitedMs} ms (busyTimeoutMs)`);
    this.name = 'SqliteBusyError';
  }
}
