import { resolve } from 'node:path';
import type { Command } from 'commander';
import { loadMasterKey, open } from '../crypto/master-key.js';
import { connect, type Db } from '../db/connect.js';
import { migrationStatus } from '../db/migrate.js';
import { warnUnknownVariables } from '../main.js';
import { UsageError } from './args.js';
import { cliConfig, cliLogger } from './runtime.js';

/** What to do after a restore (docs/OPERATIONS.md, "After a restore"), printed by restore-check. */
export const AFTER_RESTORE = [
  'After a restore (docs/OPERATIONS.md, "After a restore"):',
  '  1. Start Tessera with the same TESSERA_MASTER_KEY as when the backup was taken.',
  '  2. Re-apply what happened after the backup: sessions revoked, users deleted, API secrets rotated,',
  '     signing keys rotated (the audit log or your SIEM since the backup time has them); they are undone.',
  '  3. Expect forced sign-ins: refresh tokens rotated after the backup fail, and their sessions end.',
  '  4. Rotate the signing key (tessera keys rotate) if the backup is older than an access token lifetime',
  '     and you cannot tell which tokens were issued since.',
];

/** `tessera backup <file>` and `tessera restore-check`. */
export function backupCommands(program: Command): void {
  program
    .command('backup')
    .description(
      'SQLite: copy the live database to <file> with the online backup API; PostgreSQL: print the pg_dump command',
    )
    .argument('<file>', 'the backup file to write (must not exist)')
    .action(async (file: string) => {
      const { config } = cliConfig();
      if (!config.databaseUrl.startsWith('sqlite:')) {
        console.log(
          [
            'PostgreSQL: back up with pg_dump (a consistent snapshot while Tessera runs), e.g.',
            `  pg_dump --format=custom --file=${file} "$TESSERA_DATABASE_URL"`,
            'or continuous archiving for point-in-time recovery (docs/OPERATIONS.md, "Backup and restore").',
            'Keep TESSERA_MASTER_KEY apart from the backup, and with it.',
          ].join('\n'),
        );
        return;
      }
      const path = config.databaseUrl.slice('sqlite:'.length);
      if (!path || path === ':memory:') throw new UsageError('TESSERA_DATABASE_URL names no database file');
      const { backupSqlite } = await import('@tessera/sqlite');
      const { pages } = await backupSqlite(path, resolve(file));
      console.log(
        `backed up ${path} to ${resolve(file)} (${pages} pages, SQLite online backup); keep TESSERA_MASTER_KEY apart from it`,
      );
    });

  program
    .command('restore-check')
    .description(
      'check a restored database against this release and TESSERA_MASTER_KEY, changing nothing, and print the steps after a restore',
    )
    .action(async () => {
      const { config, unknown } = cliConfig();
      const logger = cliLogger(config);
      warnUnknownVariables(logger, unknown);
      const db = await connect(config.databaseUrl, { timeouts: config.databaseTimeouts, logger });
      try {
        const problems = await restoreCheck(db, config);
        console.log(AFTER_RESTORE.join('\n'));
        if (problems.length > 0) throw new UsageError(`restore check failed: ${problems.join('; ')}`);
      } finally {
        await db.close();
      }
    });
}

/** Prints what the database holds; returns what stops Tessera from serving it as it is. */
async function restoreCheck(db: Db, config: ReturnType<typeof cliConfig>['config']): Promise<string[]> {
  const problems: string[] = [];
  const status = await migrationStatus(db);
  if (status.refusal) problems.push(status.refusal);
  console.log(
    `migrations: ${status.refusal ? 'REFUSED' : 'ok'}; ${status.pending.length} pending (applied at start)${status.newer.length ? `; newer additive: ${status.newer.join(', ')}` : ''}`,
  );

  const encryptionKey = loadMasterKey(config.masterKey, config.dataDir).key.derive('signing-key-encryption');
  const keys = await db.kysely
    .selectFrom('signing_keys')
    .select(['kid', 'status', 'private_enc'])
    .where('status', '!=', 'retired')
    .execute();
  const sealedElsewhere = keys.filter((k) => {
    try {
      open(encryptionKey, k.private_enc, k.kid);
      return false;
    } catch {
      return true;
    }
  });
  console.log(
    `signing keys: ${keys.length} published, ${keys.length - sealedElsewhere.length} open with this TESSERA_MASTER_KEY`,
  );
  if (sealedElsewhere.length > 0)
    problems.push(
      `signing keys ${sealedElsewhere.map((k) => k.kid).join(', ')} do not decrypt with this TESSERA_MASTER_KEY: set the master key in use when the backup was taken`,
    );

  const now = Date.now();
  const count = async (query: Promise<{ n: number | string | bigint } | undefined>) =>
    Number((await query)?.n ?? 0);
  const projects = await count(
    db.kysely
      .selectFrom('projects')
      .select((e) => e.fn.countAll().as('n'))
      .executeTakeFirst(),
  );
  const users = await count(
    db.kysely
      .selectFrom('users')
      .select((e) => e.fn.countAll().as('n'))
      .executeTakeFirst(),
  );
  const sessions = await count(
    db.kysely
      .selectFrom('sessions')
      .select((e) => e.fn.countAll().as('n'))
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst(),
  );
  const newest = await db.kysely
    .selectFrom('audit_events')
    .select((e) => e.fn.max('created_at').as('at'))
    .executeTakeFirst();
  const newestAt = newest?.at == null ? '-' : new Date(Number(newest.at)).toISOString();
  console.log(
    `projects: ${projects}; users: ${users}; open sessions: ${sessions}; newest audit event: ${newestAt} (the backup's age)`,
  );
  return problems;
}
