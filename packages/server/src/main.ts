import cluster from 'node:cluster';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { runPrimary, shareDevOutbox } from './cluster.js';
import type { Config, UnknownVariable } from './config/index.js';
import { loadMasterKey } from './crypto/master-key.js';
import { connect, type Db, migrate } from './db/connect.js';
import { describeDatabaseError, isDatabaseUnavailable } from './db/unavailable.js';
import { DATABASE_RETRY_AFTER_SECONDS } from './errors.js';
import { KeyStore } from './keys/key-store.js';
import { advanceKeys } from './keys/rotation.js';
import { createLogger } from './logger.js';
import { createDelivery, DevOutbox } from './modules/otp/delivery/index.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';

export interface Runtime {
  db: Db;
  keys: KeyStore;
  logger: Logger;
  masterKey: ReturnType<typeof loadMasterKey>['key'];
}

/** Logs, in one line, the `TESSERA_*` variables nothing reads, each with the closest known name. */
export function warnUnknownVariables(logger: Logger, unknown: readonly UnknownVariable[]): void {
  if (unknown.length === 0) return;
  const list = unknown
    .map((v) => (v.suggestion ? `${v.name} (did you mean ${v.suggestion}?)` : v.name))
    .join(', ');
  logger.warn({ variables: unknown.map((v) => v.name) }, `unknown TESSERA_* variables ignored: ${list}`);
}

/** A rollback, or an old instance during a rolling upgrade: it runs, and says so. */
export function warnNewerSchema(logger: Pick<Logger, 'warn'>, newer: string[]): void {
  logger.warn(
    { migrations: newer },
    `the database was migrated by a newer release (${newer.join(', ')}); every one is additive, so this release runs against it`,
  );
}

/**
 * The shortest refresh grace that covers a retry of a grant whose answer was lost on PostgreSQL:
 * the longest the server takes to answer it (pool wait up to the connect timeout, the statement
 * timeout, and the client-side second past it) plus the Retry-After of its 503. A shorter window
 * revokes, as reuse, the session of a client that retried as told.
 */
export function refreshGraceNeeded(config: Readonly<Config>): number {
  const { connectMs, statementMs } = config.databaseTimeouts;
  return Math.ceil((connectMs + statementMs + 1000) / 1000) + DATABASE_RETRY_AFTER_SECONDS;
}

/** Warns when TESSERA_REFRESH_GRACE is on but shorter than refreshGraceNeeded (PostgreSQL). */
export function warnShortRefreshGrace(logger: Logger, config: Readonly<Config>): void {
  if (!/^postgres(ql)?:/.test(config.databaseUrl) || config.refreshGrace === 0) return;
  const needed = refreshGraceNeeded(config);
  if (config.refreshGrace >= needed) return;
  logger.warn(
    { refreshGrace: config.refreshGrace, needed },
    `TESSERA_REFRESH_GRACE (${config.refreshGrace} s) is shorter than a refresh can take to answer on this database plus the Retry-After of its 503 (${needed} s): a client that retries a refresh whose answer was lost may have its session revoked as reuse`,
  );
}

/** Start-up gave up waiting for the database (TESSERA_DATABASE_WAIT). */
export class DatabaseWaitError extends Error {
  override name = 'DatabaseWaitError';
}

/** The first retry's delay; each later one doubles, up to MAX_DATABASE_RETRY_MS. */
export const DATABASE_RETRY_MS = 500;
const MAX_DATABASE_RETRY_MS = 5_000;

/**
 * Waits until the database answers, for up to `waitMs`: a database started beside the service
 * (compose, Kubernetes) may come up after it. Retries only while the error says the database is
 * unreachable or starting (db/unavailable.ts) — a wrong password or database name fails at
 * once — after 0.5, 1, 2, 4, then every 5 s, logging each failure.
 */
export async function waitForDatabase(
  db: Pick<Db, 'ping'>,
  waitMs: number,
  logger: Pick<Logger, 'warn' | 'info'>,
  clock: { now(): number; sleep(ms: number): Promise<unknown> } = { now: Date.now, sleep },
): Promise<void> {
  const deadline = clock.now() + waitMs;
  for (
    let attempt = 1, delay = DATABASE_RETRY_MS;
    ;
    attempt++, delay = Math.min(delay * 2, MAX_DATABASE_RETRY_MS)
  ) {
    try {
      await db.ping();
      if (attempt > 1) logger.info({ attempts: attempt }, 'database reachable');
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      const { code, reason } = describeDatabaseError(error);
      const left = deadline - clock.now();
      if (left <= 0) {
        throw new DatabaseWaitError(
          `the database did not answer within ${waitMs / 1000} s (TESSERA_DATABASE_WAIT): ${code ?? reason}`,
        );
      }
      const retryInMs = Math.min(delay, left);
      logger.warn({ code, reason, attempt, retryInMs }, 'database not reachable yet; retrying');
      await clock.sleep(retryInMs);
    }
  }
}

/**
 * Opens storage, runs migrations (unless `migrations: false`: the workers of a cluster, whose
 * primary ran them) and loads (or creates) the signing keys. With `waitForDatabase`, a database
 * that is not up yet is waited for (TESSERA_DATABASE_WAIT). With `serving` (a server process in
 * development), a SQLite transaction that holds the database too long is logged: there it stalls
 * every request. A CLI command has no other request to stall, and its output stays clean.
 */
export async function openRuntime(
  config: Readonly<Config>,
  logger = createLogger(config.logLevel, undefined, config.logFormat),
  options: { migrations?: boolean; waitForDatabase?: boolean; serving?: boolean } = {},
): Promise<Runtime> {
  const master = loadMasterKey(config.masterKey, config.dataDir);
  if (master.file) {
    logger.warn(
      { file: master.file },
      `DEVELOPMENT MASTER KEY ${master.created ? 'CREATED' : 'IN USE'}: signing keys are encrypted with a key kept in a file beside the data. Set TESSERA_MASTER_KEY (openssl rand -base64 32) before any real use; production mode refuses to start without it.`,
    );
  }
  // Migrations and key set-up may hold the database as long as they need; request-time
  // transactions may not.
  let serving = false;
  const db = await connect(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    timeouts: config.databaseTimeouts,
    sqliteCacheKiB: config.sqliteCacheKiB,
    logger,
    // SQLite runs one transaction at a time: one that awaits anything else stalls every request.
    ...(config.env === 'development' && options.serving
      ? {
          onSlowTransaction: ({ heldMs, stack }) => {
            if (serving)
              logger.warn({ heldMs, stack }, 'a SQLite transaction held the database for more than 50 ms');
          },
        }
      : {}),
  });
  try {
    if (options.waitForDatabase) await waitForDatabase(db, config.databaseWaitMs, logger);
    if (options.migrations !== false) {
      const applied = await migrate(db, { onNewerSchema: (newer) => warnNewerSchema(logger, newer) });
      if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    }
    const keys = new KeyStore(db, master.key.derive('signing-key-encryption'));
    await keys.init();
    if (await advanceKeys(db, config)) await keys.reload();
    serving = true;
    return { db, keys, logger, masterKey: master.key };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/**
 * Creates the `demo` project on first start and says how to use it; the pages named exist in
 * this mode only (the demo page and the code outbox are served with development delivery).
 */
async function ensureDemoProject(config: Readonly<Config>, runtime: Runtime): Promise<void> {
  const projects = new ProjectsService(new ProjectsRepository(runtime.db));
  const existing = await projects.findByName('demo');
  const lines: string[] = [];
  if (existing) {
    lines.push(`  API key id:     ${existing.api_key_id}`);
    lines.push(
      '  API key secret: shown at first start only (new one: npm run tessera -- projects rotate-secret demo)',
    );
  } else {
    const origin = new URL(config.issuer).origin;
    const created = await projects.create({
      name: 'demo',
      origins: [origin, `http://127.0.0.1:${config.port}`],
    });
    lines.push(`  API key id:     ${created.api_key_id}`);
    lines.push(`  API key secret: ${created.api_key_secret}   (shown once; store it now)`);
  }
  const devDelivery = config.delivery.mode === 'dev';
  process.stdout.write(
    [
      '',
      `Tessera is running in ${config.env} mode.`,
      `  Issuer:         ${config.issuer}`,
      ...(devDelivery
        ? [`  Demo page:      ${config.issuer}/demo/`, `  Sign-in codes:  ${config.issuer}/dev/outbox`]
        : ['  Sign-in codes:  sent by e-mail and SMS (live delivery)']),
      ...(config.console
        ? [`  Console:        ${config.issuer}/console (first: tessera console grant <your e-mail> operator)`]
        : []),
      'Demo project:',
      ...lines,
      '',
    ].join('\n'),
  );
}

/**
 * `tessera serve`: with one worker, this process serves (serveOne); with more, it becomes the
 * primary of a cluster — it waits for the database, migrates, creates the demo project, then
 * forks the workers (runPrimary) — and each worker serves with migrations left out. Resolves once
 * this process listens, or, in a primary, once the cluster has stopped (its exit status then set
 * on `process.exitCode`).
 */
export async function serve(
  config: Readonly<Config>,
  options: { workers?: number; unknown?: readonly UnknownVariable[] } = {},
): Promise<void> {
  if (cluster.isWorker) {
    const logger = createLogger(config.logLevel, undefined, config.logFormat).child({
      worker: cluster.worker?.id,
      pid: process.pid,
    });
    await serveOne(config, logger, { worker: true });
    return;
  }
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  warnUnknownVariables(logger, options.unknown ?? []);
  warnShortRefreshGrace(logger, config);
  const workers = options.workers ?? config.workers;
  if (workers <= 1) {
    await serveOne(config, logger, { worker: false });
    return;
  }
  const runtime = await openRuntime(config, logger, { waitForDatabase: true });
  try {
    if (config.demo) await ensureDemoProject(config, runtime);
  } finally {
    await runtime.db.close();
  }
  process.exitCode = await runPrimary({ workers, shutdownTimeoutMs: config.shutdownTimeoutMs, logger });
}

/**
 * Serves in this process until SIGTERM/SIGINT, then drains in-flight requests and closes storage,
 * exiting with status 1 if that takes longer than TESSERA_SHUTDOWN_TIMEOUT. Resolves once the
 * drain is over. A cluster worker leaves migrations and the demo project to its primary, and
 * disconnects from it once drained.
 */
async function serveOne(
  config: Readonly<Config>,
  logger: Logger,
  { worker }: { worker: boolean },
): Promise<FastifyInstance> {
  const runtime = await openRuntime(config, logger, {
    migrations: !worker,
    waitForDatabase: true,
    serving: true,
  });
  const delivery = createDelivery(config.delivery, logger);
  if (worker && delivery instanceof DevOutbox) shareDevOutbox(delivery);
  const { app } = await buildApp(config, { ...runtime, delivery });
  if (config.demo && !worker) await ensureDemoProject(config, runtime);
  await app.listen({ host: config.host, port: config.port });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'draining in-flight requests');
    const force = setTimeout(() => {
      logger.error(`shutdown took more than ${config.shutdownTimeoutMs / 1000} s; exiting`);
      process.exit(1);
    }, config.shutdownTimeoutMs);
    force.unref();
    try {
      await app.close();
      await runtime.db.close();
      logger.info('stopped');
    } finally {
      clearTimeout(force);
      // A worker's channel to the primary would keep it alive.
      if (worker) cluster.worker?.disconnect();
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return app;
}
