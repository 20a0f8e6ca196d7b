import pino from 'pino';
import { type Config, readConfig } from '../config/index.js';
import { createLogger } from '../logger.js';
import { openRuntime, type Runtime, warnUnknownVariables } from '../main.js';
import { AuditLog } from '../modules/audit/audit.service.js';
import { WebhooksService } from '../modules/webhooks/webhooks.service.js';

/** The configuration from the environment, and the unknown `TESSERA_*` variables in it. */
export function cliConfig(): ReturnType<typeof readConfig> {
  return readConfig(process.env);
}

/** The CLI's logger: standard error, `warn` unless TESSERA_LOG_LEVEL says otherwise. */
export function cliLogger(config: Readonly<Config>): pino.Logger {
  return createLogger(
    process.env.TESSERA_LOG_LEVEL ? config.logLevel : 'warn',
    pino.destination(2),
    config.logFormat,
  );
}

/**
 * Runs fn against migrated storage with a quiet logger, then closes it. The database is not waited
 * for: a command fails at once (exit status 1) when it is unreachable.
 */
export async function withRuntime<T>(
  fn: (runtime: Runtime, config: Readonly<Config>) => Promise<T>,
): Promise<T> {
  const { config, unknown } = cliConfig();
  const logger = cliLogger(config);
  warnUnknownVariables(logger, unknown);
  const runtime = await openRuntime(config, logger);
  try {
    return await fn(runtime, config);
  } finally {
    await runtime.db.close();
  }
}

/**
 * The CLI's audit log. Its events are queued for the projects' webhooks as well (a running
 * server's worker sends them); `settled()` waits for the queueing before the database closes.
 */
export function auditLog(
  runtime: Runtime,
  config: Readonly<Config>,
): { log: AuditLog; settled(): Promise<unknown> } {
  const webhooks = new WebhooksService(
    runtime.db,
    runtime.masterKey.derive('webhook-secret'),
    { ...config.webhooks, allowHttp: config.env !== 'production' },
    runtime.logger,
  );
  const log = new AuditLog(runtime.db, () =>
    // After a secret rotation the new secret must still be printed: a failure here only warns.
    console.error('tessera: warning: an audit event (and its webhook deliveries) was not recorded'),
  );
  // No worker here: the servers' workers send what is queued.
  log.setOutbox(webhooks);
  return { log, settled: () => log.drain() };
}
