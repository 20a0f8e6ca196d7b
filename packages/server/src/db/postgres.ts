import {
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from 'kysely';
import pg from 'pg';
import { LATE_WAIT_MS, type LateOutcome, lateOutcomeHandler } from './late-outcome.js';
import { type ListenerLogger, NoticeListener } from './notifications.js';
import { statementName } from './prepared.js';
import type { Database } from './schema.js';
import type { DbStats } from './stats.js';
import { DatabaseReadOnlyError, describeDatabaseError, isConnectionPoisoned } from './unavailable.js';

// int8 (bigint) columns hold millisecond timestamps, far below 2^53: read them as numbers.
pg.types.setTypeParser(20, (value) => Number(value));

/** How long the PostgreSQL pool waits, in milliseconds. */
export interface DatabaseTimeouts {
  /**
   * Opening a connection, or waiting for a free one when the pool is exhausted (node-postgres
   * bounds both with this one value).
   */
  connectMs: number;
  /**
   * One statement, enforced by the server (`statement_timeout`, which also ends lock waits); the
   * client gives up `CLIENT_MARGIN_MS` later, for a server that does not answer at all.
   */
  statementMs: number;
  /** An unused connection is closed after this long. */
  idleMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: Readonly<DatabaseTimeouts> = Object.freeze({
  connectMs: 5_000,
  statementMs: 5_000,
  idleMs: 30_000,
});

/** Past the server's statement timeout, when the client stops waiting for an answer. */
export const CLIENT_MARGIN_MS = 1_000;

/** Where the pool and the notice listener report lost connections; pino's logger fits. */
export type DatabaseLogger = ListenerLogger;

export interface PostgresOptions {
  /** The schema to use (tests create one each): becomes the search_path. */
  schema?: string | undefined;
  poolSize?: number | undefined;
  timeouts?: Partial<DatabaseTimeouts> | undefined;
  /** Names the connections in pg_stat_activity (default `tessera`; the URL's `application_name` wins). */
  applicationName?: string | undefined;
  logger?: DatabaseLogger | undefined;
}

export interface PostgresDb {
  kysely: Kysely<Database>;
  ping(): Promise<void>;
  stats(): DbStats;
  close(): Promise<void>;
  withoutTimeouts<T>(fn: (kysely: Kysely<Database>) => Promise<T>): Promise<T>;
  /**
   * A listener for other instances' change notices on a connection of its own, to `listenUrl`
   * when given (a direct connection past a transaction-pooling PgBouncer), else to the pool's
   * database; named `<application name>/listen` in pg_stat_activity. Not started.
   */
  listen(listenUrl?: string): NoticeListener;
}

/** One connection's settings: the pool's connections and the notice listener's. */
function clientConfig(url: string, options: PostgresOptions, applicationName = 'tessera'): pg.ClientConfig {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  return {
    connectionString: url,
    connectionTimeoutMillis: timeouts.connectMs,
    statement_timeout: timeouts.statementMs,
    query_timeout: timeouts.statementMs + CLIENT_MARGIN_MS,
    // A peer that vanished without closing (a failed-over host) is noticed by TCP keep-alive.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: applicationName,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
}

function poolConfig(url: string, options: PostgresOptions): pg.PoolConfig {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  return {
    ...clientConfig(url, options, options.applicationName),
    max: options.poolSize ?? 10,
    idleTimeoutMillis: timeouts.idleMs,
  };
}

/**
 * A pool client as Kysely sees it. A connection whose client-side query timeout fired (the server
 * may still answer later) or that reached a read-only standby is released with its error, so the
 * pool drops it; until then its further queries (a transaction's rollback) fail at once. A text
 * of a prepared query (db/prepared.ts) runs as a named prepared statement.
 *
 * A statement sent inside `observeLate` (db/late-outcome.ts) gets the same deadline, but the
 * connection is kept, out of the pool, until the database answers: its rows then go to the
 * handler (a refresh rotation that committed after its answer was lost), and only then is the
 * connection released.
 */
class GuardedClient {
  #poisoned: Error | undefined;
  /** A statement still running past its deadline: release waits for it. */
  #late: Promise<unknown> | undefined;

  constructor(
    readonly client: pg.PoolClient,
    private readonly deadlineMs: number,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    if (this.#poisoned) return Promise.reject(this.#poisoned);
    const onLate = lateOutcomeHandler();
    if (onLate) return this.#observed<R>(sql, parameters, onLate);
    return this.#send<R>(sql, parameters).catch((error: Error) => {
      if (isConnectionPoisoned(error)) this.#poisoned = error;
      throw error;
    });
  }

  release(): void {
    if (this.#late) {
      const late = this.#late;
      this.#late = undefined;
      void late.then(
        () => this.client.release(this.#poisoned),
        () => this.client.release(this.#poisoned),
      );
      return;
    }
    this.client.release(this.#poisoned);
  }

  #send<R>(sql: string, parameters: ReadonlyArray<unknown>, timeoutMs?: number) {
    const name = statementName(sql);
    const values = parameters as unknown[];
    const config: pg.QueryConfig = { text: sql, values, ...(name ? { name } : {}) };
    if (timeoutMs !== undefined) (config as { query_timeout?: number }).query_timeout = timeoutMs;
    return this.client.query(config) as unknown as Promise<PostgresQueryResult<R>>;
  }

  /** The statement with our own deadline, its answer observed however late it comes. */
  #observed<R>(sql: string, parameters: ReadonlyArray<unknown>, onLate: LateOutcome) {
    const sent = this.#send<R>(sql, parameters, LATE_WAIT_MS);
    return new Promise<PostgresQueryResult<R>>((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        // The same error node-postgres gives at its own deadline (a 503 for the caller).
        reject(new Error('Query read timeout'));
        this.#late = sent.then(
          (result) => onLate(result.rows),
          (error: Error) => {
            this.#poisoned = error;
          },
        );
      }, this.deadlineMs);
      sent.then(
        (result) => {
          if (late) return;
          clearTimeout(timer);
          resolve(result);
        },
        (error: Error) => {
          if (late) return;
          clearTimeout(timer);
          if (isConnectionPoisoned(error)) this.#poisoned = error;
          reject(error);
        },
      );
    });
  }
}

/**
 * The pool Kysely uses: node-postgres's, with each client wrapped once (Kysely keeps per-client
 * state keyed by the client object).
 */
function guarded(pool: pg.Pool, deadlineMs: number): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, GuardedClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = new GuardedClient(client, deadlineMs);
        wrappers.set(client, wrapper);
      }
      // Kysely calls only query(sql, parameters) (no cursor is configured) and release().
      return wrapper as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

/**
 * A pool that survives the database going away: every connection has an `'error'` listener (an
 * unhandled one kills the process when PostgreSQL terminates a backend, restarts or fails over),
 * connecting, waiting for a connection and each statement are bounded in time, and a dead
 * connection is replaced on next use, so the service resumes by itself when the database returns.
 */
export function openPostgres(url: string, options: PostgresOptions = {}): PostgresDb {
  const config = poolConfig(url, options);
  const pool = new pg.Pool(config);
  const logger = options.logger;
  // A connection fails while checked out (the query in flight gets the error as well) or while idle
  // in the pool (which then also emits 'error' on the pool): log once, from the connection, for
  // its first error (a terminated backend sends 57P01, then its socket closes: a second error).
  const lost = (client: pg.PoolClient) => {
    let reported = false;
    client.on('error', (error: unknown) => {
      if (reported) return;
      reported = true;
      logger?.warn(describeDatabaseError(error), 'database connection lost; it will be replaced');
    });
  };
  pool.on('connect', lost);
  pool.on('error', () => {});
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: guarded(pool, config.query_timeout ?? 0) }),
  });
  return {
    kysely,
    // A round trip that also sees a server that cannot take writes: a standby (a demoted primary)
    // or `default_transaction_read_only` on; readiness must not send writes there.
    ping: async () => {
      const { rows } = await pool.query<{ ro: string }>(
        "select current_setting('transaction_read_only') as ro",
      );
      if (rows[0]?.ro === 'on')
        throw new DatabaseReadOnlyError(
          'the database is read-only (transaction_read_only is on: a standby, or default_transaction_read_only)',
        );
    },
    stats: () => ({
      max: config.max ?? 10,
      waiting: pool.waitingCount,
      total: pool.totalCount,
      idle: pool.idleCount,
    }),
    close: () => kysely.destroy(),
    async withoutTimeouts(fn) {
      const single = new pg.Pool({ ...config, max: 1, statement_timeout: 0, query_timeout: undefined });
      single.on('connect', lost);
      single.on('error', () => {});
      const unbounded = new Kysely<Database>({ dialect: new PostgresDialect({ pool: single }) });
      try {
        return await fn(unbounded);
      } finally {
        await unbounded.destroy();
      }
    },
    listen: (listenUrl) =>
      new NoticeListener(
        clientConfig(listenUrl ?? url, options, `${options.applicationName ?? 'tessera'}/listen`),
        { logger },
      ),
  };
}

/** Creates `schema` if missing, over a short-lived connection. */
export async function createSchema(url: string, schema: string, timeouts?: Partial<DatabaseTimeouts>) {
  const admin = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeouts?.connectMs ?? DEFAULT_DATABASE_TIMEOUTS.connectMs,
  });
  admin.on('error', () => {});
  await admin.connect();
  try {
    await admin.query(`create schema if not exists ${schema}`);
  } finally {
    await admin.end();
  }
}
