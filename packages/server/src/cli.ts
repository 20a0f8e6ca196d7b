#!/usr/bin/env node
import { Command, Option } from 'commander';
import pino from 'pino';
import { recordKeyRotation } from './app.js';
import { type Config, ConfigError, loadConfig } from './config/index.js';
import { connect, migrate } from './db/connect.js';
import { rotateKeys } from './keys/rotation.js';
import { createLogger } from './logger.js';
import { openRuntime, type Runtime, serve } from './main.js';
import { AuditLog } from './modules/audit/audit.service.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';

/**
 * The CLI's audit log. Its events are queued for the projects' webhooks as well (a running
 * server's worker sends them); `settled()` waits for the queueing before the database closes.
 */
function auditLog(runtime: Runtime, cfg: Readonly<Config>): { log: AuditLog; settled(): Promise<unknown> } {
  const webhooks = new WebhooksService(
    runtime.db,
    runtime.masterKey.derive('webhook-secret'),
    { ...cfg.webhooks, allowHttp: cfg.env !== 'production' },
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

function config(): Readonly<Config> {
  return loadConfig(process.env);
}

/** Runs fn against migrated storage with a quiet logger, then closes it. */
async function withRuntime<T>(
  fn: (runtime: Awaited<ReturnType<typeof openRuntime>>, cfg: Readonly<Config>) => Promise<T>,
): Promise<T> {
  const cfg = config();
  const runtime = await openRuntime(
    cfg,
    createLogger(process.env.TESSERA_LOG_LEVEL || 'warn', pino.destination(2)),
  );
  try {
    return await fn(runtime, cfg);
  } finally {
    await runtime.db.close();
  }
}

const program = new Command('tessera')
  .description('Tessera authentication token service')
  .showHelpAfterError();

program
  .command('serve')
  .description('run the HTTP service')
  .action(async () => {
    await serve(config());
  });

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(async () => {
    const db = await connect(config().databaseUrl);
    try {
      const applied = await migrate(db);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    } finally {
      await db.close();
    }
  });

const projects = program.command('projects').description('manage integrator projects');
projects
  .command('create')
  .description('create a project and print its API key id and secret (the secret is shown once)')
  .requiredOption('--name <name>', 'project name')
  .option('--origin <url...>', 'allowed browser origin (repeatable)')
  .option('--rp-id <id>', 'WebAuthn relying-party id (default: host of the first origin)')
  .option('--numeric-auth-time', 'emit auth_time as a number in ID tokens (strict OIDC clients)')
  .option('--json', 'print {"api_key_id","api_key_secret"} as JSON')
  .action(
    async (opts: {
      name: string;
      origin?: string[];
      rpId?: string;
      numericAuthTime?: boolean;
      json?: boolean;
    }) => {
      await withRuntime(async ({ db }) => {
        const service = new ProjectsService(new ProjectsRepository(db));
        const created = await service.create({
          name: opts.name,
          origins: opts.origin ?? [],
          rpId: opts.rpId,
          numericAuthTime: opts.numericAuthTime,
        });
        if (opts.json) {
          console.log(
            JSON.stringify({ api_key_id: created.api_key_id, api_key_secret: created.api_key_secret }),
          );
        } else {
          console.log(
            `project ${created.name} created\n  API key id:     ${created.api_key_id}\n  API key secret: ${created.api_key_secret}   (shown once)`,
          );
        }
      });
    },
  );
projects
  .command('list')
  .description('list projects')
  .option('--json', 'print JSON')
  .action(async (opts: { json?: boolean }) => {
    await withRuntime(async ({ db }) => {
      const rows = await new ProjectsService(new ProjectsRepository(db)).list();
      const list = rows.map((p) => ({
        name: p.name,
        api_key_id: p.api_key_id,
        origins: JSON.parse(p.origins) as string[],
        rp_id: p.rp_id,
        created_at: new Date(p.created_at).toISOString(),
      }));
      if (opts.json) console.log(JSON.stringify(list, null, 2));
      else for (const p of list) console.log(`${p.api_key_id}  ${p.name}  ${p.origins.join(' ')}`);
    });
  });
projects
  .command('rotate-secret')
  .description(
    'replace the API key secret of a project (by API key id or name); the old one stops working at once',
  )
  .argument('<project>', 'API key id or project name')
  .option('--json', 'print JSON')
  .action(async (ref: string, opts: { json?: boolean }) => {
    await withRuntime(async (runtime, cfg) => {
      const service = new ProjectsService(new ProjectsRepository(runtime.db));
      const apiKeyId = ref.startsWith('pk_') ? ref : (await service.findByName(ref))?.api_key_id;
      if (!apiKeyId) throw new ConfigError(`no project named ${ref}`);
      const rotated = await service.rotateSecret(apiKeyId);
      const audit = auditLog(runtime, cfg);
      await audit.log.record({
        projectId: rotated.project_id,
        type: 'project.secret_rotated',
        data: { by: 'cli' },
      });
      await audit.settled();
      if (opts.json)
        console.log(
          JSON.stringify({ api_key_id: rotated.api_key_id, api_key_secret: rotated.api_key_secret }),
        );
      else console.log(`new API key secret for ${rotated.name}: ${rotated.api_key_secret}   (shown once)`);
    });
  });

const keys = program.command('keys').description('manage signing keys');
keys
  .command('list')
  .description('list signing keys and their state')
  .option('--json', 'print JSON')
  .action(async (opts: { json?: boolean }) => {
    await withRuntime(async ({ keys: store }) => {
      const list = store.list().map((k) => ({
        kid: k.kid,
        status: k.status,
        activated_at: k.activatedAt ? new Date(k.activatedAt).toISOString() : null,
        retire_at: k.retireAt ? new Date(k.retireAt).toISOString() : null,
      }));
      if (opts.json) console.log(JSON.stringify(list, null, 2));
      else
        for (const k of list)
          console.log(
            `${k.kid}  ${k.status.padEnd(8)}  activated ${k.activated_at ?? '-'}  retire ${k.retire_at ?? '-'}`,
          );
    });
  });
keys
  .command('rotate')
  .description(
    'publish a new signing key now; it signs after TESSERA_KEY_ROTATION_DELAY (caches catch up first)',
  )
  .addOption(new Option('--delay <seconds>', 'override the delay before the new key signs').argParser(Number))
  .action(async (opts: { delay?: number }) => {
    await withRuntime(async (runtime, cfg) => {
      const store = runtime.keys;
      const kid = await rotateKeys(store, cfg, opts.delay);
      const projects = await new ProjectsService(new ProjectsRepository(store.db)).list();
      const audit = auditLog(runtime, cfg);
      await recordKeyRotation(audit.log, projects, kid, 'cli');
      await audit.settled();
      console.log(`key ${kid} published; it starts signing in ${opts.delay ?? cfg.keys.rotationDelay} s`);
    });
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`tessera: ${error.message}`);
    process.exit(2);
  }
  console.error(`tessera: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
