import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What to do with the rows of a statement that the database answered after the caller had given
 * up on it (the client-side deadline fired and the caller answered 503). Such a statement may
 * still have committed: a database that froze, a commit that waited for a synchronous standby or
 * for a disk. Only statements run inside `observeLate` are kept waiting for; the others are
 * abandoned as before (their connection is dropped).
 */
export type LateOutcome = (rows: readonly unknown[]) => void;

const handlers = new AsyncLocalStorage<LateOutcome>();

/**
 * Runs `run` so that a PostgreSQL statement it sends, if answered only after its deadline, has
 * its rows handed to `onLate` instead of being lost: the connection is kept (out of the pool)
 * until the database answers or `LATE_WAIT_MS` passes. The caller still gets its timeout error
 * at the deadline.
 */
export function observeLate<T>(onLate: LateOutcome, run: () => Promise<T>): Promise<T> {
  // The handler itself runs outside: its own statements are not observed again.
  return handlers.run((rows) => handlers.exit(() => onLate(rows)), run);
}

/** The `observeLate` handler of the current call, if any (db/postgres.ts reads it per statement). */
export function lateOutcomeHandler(): LateOutcome | undefined {
  return handlers.getStore();
}

/**
 * How long a connection waits for a statement past its deadline before it is dropped: long
 * enough for a frozen server or a stalled commit to come back, short enough that a dead peer's
 * connection is not held for ever (TCP keep-alive usually notices first).
 */
export const LATE_WAIT_MS = 10 * 60_000;
