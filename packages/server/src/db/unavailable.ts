/**
 * Recognises the errors that mean "the database is away or not answering in time", as opposed to
 * a bug or a constraint violation: they become `503` with `Retry-After`, never `500`.
 */

/**
 * How long in-memory caches that /verify relies on (revocations, projects) stay trusted past
 * their usual freshness while the database is unavailable; after that, requests that need them
 * fail closed with 503.
 */
export const OUTAGE_GRACE_MS = 30_000;

/**
 * How long a request waits for the re-read of an in-memory cache that has gone stale (the
 * revocation list, a project) before it answers from memory, when the cache may still be trusted
 * (within OUTAGE_GRACE_MS). A healthy database answers well within it, so nothing changes then;
 * a database that stops answering is noticed by the read only at its statement timeout, and
 * /verify must not wait that long for what it knew a second ago.
 */
export const STALE_READ_PATIENCE_MS = 100;

/**
 * Waits for `work` at most `ms`: true when it settled (fulfilled or rejected) in time. Its
 * rejection is left to whoever awaits it (and never goes unhandled here).
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * PostgreSQL SQLSTATEs: the server shutting down or starting (57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now), a statement cancelled by `statement_timeout`
 * (57014), a lock not granted within `lock_timeout` (55P03), no connection slot left (53300),
 * and a write sent to a server that became a read-only standby in a failover (25006). Class 08
 * (connection exceptions) is matched by prefix.
 */
const POSTGRES_CODES = new Set(['57P01', '57P02', '57P03', '57014', '55P03', '53300', '25006']);

/** Socket errors while connecting to or talking with the database. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * The driver's own messages (node-postgres and its pool give these errors no code): a connection
 * that died, a connect or pool-acquire timeout, the client-side query timeout, a pool closed at
 * shutdown.
 */
const DRIVER_MESSAGES = new Set([
  'Connection terminated',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
]);

/**
 * True when `error` says the database cannot be reached or did not answer within its bounds:
 * PostgreSQL connection loss, restart, failover or timeouts, pool exhaustion past the acquire
 * timeout, and SQLite's `SQLITE_BUSY` once the dialect's own wait for the write lock has run out.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (POSTGRES_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
    if (SOCKET_CODES.has(code) || code.startsWith('SQLITE_BUSY')) return true;
    if (isStorageFailing(error)) return true;
  }
  if (typeof message === 'string' && DRIVER_MESSAGES.has(message)) return true;
  // Connecting to a name with several addresses fails with an AggregateError of socket errors.
  return Array.isArray(errors) && errors.length > 0 && errors.every(isDatabaseUnavailable);
}

/**
 * SQLite could not write: the disk (or `max_page_count`) is full (`SQLITE_FULL`), or the file
 * system failed an I/O (`SQLITE_IOERR` and its extended codes). Nothing of the statement was
 * written; it may work again once space is freed.
 */
export function isStorageFailing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR'));
}

/**
 * PostgreSQL refused a write because the transaction is read-only (`25006`): the server is a
 * standby (a demoted primary) or has `default_transaction_read_only` on.
 */
export function isReadOnly(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '25006' || error instanceof DatabaseReadOnlyError;
}

/** The readiness probe found the database read-only (PostgreSQL `transaction_read_only`). */
export class DatabaseReadOnlyError extends Error {
  override name = 'DatabaseReadOnlyError';
  readonly code = '25006';
  constructor(reason: string) {
    super(reason);
  }
}

/** What kind of unavailability `error` is (isDatabaseUnavailable is true of it). */
export type OutageKind = 'storage-full' | 'read-only' | 'unreachable';

export function outageKind(error: unknown): OutageKind {
  if (isStorageFailing(error)) return 'storage-full';
  if (isReadOnly(error)) return 'read-only';
  return 'unreachable';
}

/**
 * True when the connection that produced `error` must not be reused: the client-side query
 * timeout fired (the server may still be running the statement, or may never answer), or the
 * server turned read-only in a failover (a new connection reaches the new primary).
 */
export function isConnectionPoisoned(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === '25006' || message === 'Query read timeout';
}

/** A one-line description of a database error for the log: its code and message, nothing else. */
export function describeDatabaseError(error: unknown): { code: string | undefined; reason: string } {
  if (typeof error !== 'object' || error === null) return { code: undefined, reason: String(error) };
  const { code, message } = error as { code?: unknown; message?: unknown };
  return {
    code: typeof code === 'string' ? code : undefined,
    reason: typeof message === 'string' ? message : 'unknown error',
  };
}
