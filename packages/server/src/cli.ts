#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { rotationDelayArg, UsageError, workersArg } from './cli/args.js';
import { backupCommands } from './cli/backup.js';
import { clientCommands } from './cli/clients.js';
import { consoleCommands } from './cli/console.js';
import { projectCommands } from './cli/projects.js';
import { auditLog, cliConfig, cliLogger, withRuntime } from './cli/runtime.js';
import { ConfigError } from './config/index.js';
import { recordKeyRotation } from './context.js';
import { connect, migrate, SchemaTooNewError } from './db/connect.js';
import { TesseraError } from './errors.js';
import { rotateKeys } from './keys/rotation.js';
import { serve, waitForDatabase, warnNewerSchema, warnUnknownVariables } from './main.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';

/**
 * Exit statuses, one convention for every command (README, "The tessera command"):
 * 0 done; 2 the command cannot be carried out as given — an unknown command or option, an
 * invalid argument, a project that does not exist, a configuration variable to fix, a database
 * migrated by a newer release in a way this one cannot run against — so running
 * it again unchanged cannot help; 1 it failed while running (the database unreachable, a
 * migration failing, anything unexpected), which a retry may fix.
 */
function exitStatus(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
  if (error instanceof ConfigError || error instanceof UsageError) return 2;
  // A release older than the database's schema: starting again unchanged cannot help.
  if (error instanceof SchemaTooNewError) return 2;
  if (error instanceof TesseraError && error.statusCode < 500) return 2;
  return 1;
}

/** One line: the error's message, and its cause's for a runtime failure (never a stack). */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause =
    error.cause instanceof Error && !(error instanceof TesseraError) ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`.replace(/\s*\n\s*/g, ' ');
}

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command('tessera')
  .description('Tessera authentication token service')
  .version(version, '-V, --version', 'print the version')
  // Errors are thrown to the handler below (exit status 2) and printed on one line.
  .exitOverride()
  .configureOutput({
    // One line, suggestions ("Did you mean --json?") included.
    outputError: (message, write) =>
      write(
        `tessera: ${message
          .replace(/^error: /, '')
          .trim()
          .replace(/\s*\n\s*/g, ' ')}\n`,
      ),
  });

program
  .command('serve')
  .description('run the HTTP service')
  .option(
    '--workers <n>',
    'processes serving one port (default: TESSERA_WORKERS, else the number of cores in production and 1 otherwise)',
    workersArg,
  )
  .action(async (opts: { workers?: number }) => {
    const { config, unknown } = cliConfig();
    await serve(config, { workers: opts.workers, unknown });
  });

program
  .command('migrate')
  .description('apply pending database migrations (waiting for the database up to TESSERA_DATABASE_WAIT)')
  .action(async () => {
    const { config, unknown } = cliConfig();
    const logger = cliLogger(config);
    warnUnknownVariables(logger, unknown);
    const db = await connect(config.databaseUrl, { timeouts: config.databaseTimeouts, logger });
    try {
      await waitForDatabase(db, config.databaseWaitMs, logger);
      const applied = await migrate(db, { onNewerSchema: (newer) => warnNewerSchema(logger, newer) });
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    } finally {
      await db.close();
    }
  });

projectCommands(program);
clientCommands(program);
consoleCommands(program);
backupCommands(program);

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
  .option('--delay <seconds>', 'override the delay before the new key signs (0 to 2592000)', rotationDelayArg)
  .action(async (opts: { delay?: number }) => {
    await withRuntime(async (runtime, config) => {
      const store = runtime.keys;
      const kid = await rotateKeys(store, config, opts.delay);
      const projects = await new ProjectsService(new ProjectsRepository(store.db)).list();
      const audit = auditLog(runtime, config);
      await recordKeyRotation(audit.log, projects, kid, 'cli');
      await audit.settled();
      console.log(`key ${kid} published; it starts signing in ${opts.delay ?? config.keys.rotationDelay} s`);
    });
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  const status = exitStatus(error);
  // Commander has printed its own errors (and the help or version that ends with status 0).
  if (!(error instanceof CommanderError)) console.error(`tessera: ${describeError(error)}`);
  process.exit(status);
});
