import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config/index.js';
import { loadMasterKey } from './crypto/master-key.js';
import { connect, type Db, migrate } from './db/connect.js';
import { KeyStore } from './keys/key-store.js';
import { advanceKeys } from './keys/rotation.js';
import { createLogger } from './logger.js';
import { createDelivery } from './modules/otp/delivery/index.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';

export interface Runtime {
  db: Db;
  keys: KeyStore;
  logger: Logger;
  masterKey: ReturnType<typeof loadMasterKey>['key'];
}

/** Opens storage, runs migrations and loads (or creates) the signing keys. */
export async function openRuntime(
  config: Readonly<Config>,
  logger = createLogger(config.logLevel),
): Promise<Runtime> {
  const master = loadMasterKey(config.masterKey, config.dataDir);
  if (master.file) {
    logger.warn(
      { file: master.file },
      `DEVELOPMENT MASTER KEY ${master.created ? 'CREATED' : 'IN USE'}: signing keys are encrypted with a key kept in a file beside the data. Set TESSERA_MASTER_KEY (openssl rand -base64 32) before any real use; production mode refuses to start without it.`,
    );
  }
  const db = await connect(config.databaseUrl, { poolSize: config.databasePoolSize });
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    const keys = new KeyStore(db, master.key.derive('signing-key-encryption'));
    await keys.init();
    if (await advanceKeys(db, config)) await keys.reload();
    return { db, keys, logger, masterKey: master.key };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** Creates the `demo` project on first start and says how to use it. */
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
  process.stdout.write(
    [
      '',
      'Tessera is running in development mode.',
      `  Issuer:         ${config.issuer}`,
      `  Demo page:      ${config.issuer}/demo/`,
      `  Sign-in codes:  ${config.issuer}/dev/outbox`,
      'Demo project:',
      ...lines,
      '',
    ].join('\n'),
  );
}

/** `tessera serve`: listen until SIGTERM/SIGINT, then drain in-flight requests and close storage. */
export async function serve(config: Readonly<Config>): Promise<FastifyInstance> {
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger);
  const delivery = createDelivery(config.delivery, logger);
  const { app } = await buildApp(config, { ...runtime, delivery });
  if (config.demo) await ensureDemoProject(config, runtime);
  await app.listen({ host: config.host, port: config.port });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'draining in-flight requests');
    const force = setTimeout(() => {
      logger.error('shutdown took more than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    try {
      await app.close();
      await runtime.db.close();
      logger.info('stopped');
    } finally {
      clearTimeout(force);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return app;
}
