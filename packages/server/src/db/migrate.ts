import { readFileSync } from 'node:fs';
import { type Kysely, Migrator, sql } from 'kysely';
import { type MigrationSet, migrations as releaseMigrations } from '../migrations/index.js';
import type { Database } from './schema.js';

/** What migrating needs of a connection (connect.ts's Db; not imported: connect re-exports this). */
interface Db {
  kysely: Kysely<Database>;
  dialect: 'sqlite' | 'postgres';
  withoutTimeouts?<T>(fn: (kysely: Kysely<Database>) => Promise<T>): Promise<T>;
}

/**
 * Where each applied migration's `additive` flag is recorded, by the release that ran it, so that
 * an older release (which lacks the newer migration files) can tell whether it may run against
 * the schema. Kept beside Kysely's own `kysely_migration` table and created by this code, not by a
 * migration: it describes the migrations themselves.
 */
export const MIGRATION_FLAGS_TABLE = 'tessera_migrations';

/**
 * The database has migrations this release does not know and cannot run against (a migration
 * that is not additive, or one no release recorded as additive). Exit status 2: starting again
 * unchanged cannot help; run the newer release, or restore the backup taken before it migrated.
 */
export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

export interface MigrateOptions {
  /** The migrations of this release (tests pass a shorter or longer list to play other releases). */
  migrations?: MigrationSet;
  /** Told when the schema is newer than this release by additive migrations only. */
  onNewerSchema?: (unknown: string[]) => void;
}

const RELEASE = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * Runs every pending migration; throws with the failing migration's name. A database migrated by
 * a newer release is accepted when every migration this release does not know was recorded as
 * additive (it then runs none; `onNewerSchema` is told), and refused with SchemaTooNewError
 * otherwise.
 */
export async function migrate(db: Db, options: MigrateOptions = {}): Promise<string[]> {
  // A migration may build an index over a large table: PostgreSQL migrates without the pool's
  // statement timeouts.
  if (db.withoutTimeouts) return db.withoutTimeouts((kysely) => migrateWith({ ...db, kysely }, options));
  return migrateWith(db, options);
}

interface Place {
  kysely: Kysely<unknown>;
  dialect: Db['dialect'];
  /** PostgreSQL: the schema that holds the migration tables. */
  schema: string | undefined;
}

async function migrateWith(db: Pick<Db, 'kysely' | 'dialect'>, options: MigrateOptions): Promise<string[]> {
  const known = options.migrations ?? releaseMigrations;
  // Kysely looks for its migration tables in every schema unless told which: with another
  // schema of the same database already migrated, it would skip creating them in ours.
  const schema =
    db.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely)).rows[0]?.schema
      : undefined;
  const place: Place = { kysely: db.kysely as Kysely<unknown>, dialect: db.dialect, schema };
  await createFlagsTable(place);
  const newer = await newerMigrations(place, known);
  if (newer.length > 0) {
    options.onNewerSchema?.(newer);
    await recordFlags(place, known);
    return [];
  }
  const migrator = new Migrator({
    db: db.kysely,
    provider: { getMigrations: async () => ({ ...known }) },
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  let { error, results } = await migrator.migrateToLatest();
  // Before taking its lock, Kysely's migrator introspects the tables of every schema of the
  // database; a schema dropped or altered meanwhile (tests drop theirs) fails that query. No
  // migration has run then (no results), so it is safe to try again.
  for (
    let retry = 0;
    retry < 5 && error && !results && db.dialect === 'postgres' && isCatalogRace(error);
    retry++
  ) {
    ({ error, results } = await migrator.migrateToLatest());
  }
  if (error) {
    // A newer release migrated between the check above and Kysely's lock: check again.
    if (/corrupted migrations/.test(String((error as Error).message))) {
      const newerNow = await newerMigrations(place, known);
      if (newerNow.length > 0) {
        options.onNewerSchema?.(newerNow);
        return [];
      }
    }
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed`, { cause: error });
  }
  await recordFlags(place, known);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Where the database stands against this release's migrations, changing nothing (restore-check). */
export interface MigrationStatus {
  /** This release's migrations not applied yet (`serve` or `migrate` applies them). */
  pending: string[];
  /** Applied migrations this release does not know, all additive: it runs against them. */
  newer: string[];
  /** Why this release cannot run against the database (SchemaTooNewError's message), if it cannot. */
  refusal?: string;
}

export async function migrationStatus(
  db: Pick<Db, 'kysely' | 'dialect'>,
  known: MigrationSet = releaseMigrations,
): Promise<MigrationStatus> {
  const schema =
    db.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely)).rows[0]?.schema
      : undefined;
  const place: Place = { kysely: db.kysely as Kysely<unknown>, dialect: db.dialect, schema };
  const applied = await appliedMigrations(place);
  const pending = Object.keys(known).filter((name) => !applied.includes(name));
  try {
    return { pending, newer: await newerMigrations(place, known) };
  } catch (error) {
    if (!(error instanceof SchemaTooNewError)) throw error;
    return { pending, newer: [], refusal: error.message };
  }
}

function table(place: Place, name: string) {
  return sql.table(place.schema ? `${place.schema}.${name}` : name);
}

async function createFlagsTable(place: Place): Promise<void> {
  try {
    await sql`create table if not exists ${table(place, MIGRATION_FLAGS_TABLE)} (
      name text primary key,
      additive integer not null,
      release text not null,
      recorded_at bigint not null
    )`.execute(place.kysely);
  } catch (error) {
    // Two PostgreSQL instances creating it at once: one wins, the other sees a duplicate.
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== '23505' && code !== '42P07') throw error;
  }
}

/** Records the flag of every migration of this release that has run (once: flags are frozen). */
async function recordFlags(place: Place, known: MigrationSet): Promise<void> {
  const applied = new Set(await appliedMigrations(place));
  const now = Date.now();
  for (const [name, migration] of Object.entries(known)) {
    if (!applied.has(name)) continue;
    await sql`insert into ${table(place, MIGRATION_FLAGS_TABLE)} (name, additive, release, recorded_at)
      values (${name}, ${migration.additive ? 1 : 0}, ${RELEASE}, ${now})
      on conflict (name) do nothing`.execute(place.kysely);
  }
}

async function tableExists(place: Place, name: string): Promise<boolean> {
  const found =
    place.dialect === 'postgres'
      ? await sql`select 1 from information_schema.tables
          where table_schema = ${place.schema} and table_name = ${name}`.execute(place.kysely)
      : await sql`select 1 from sqlite_master where type = 'table' and name = ${name}`.execute(place.kysely);
  return found.rows.length > 0;
}

async function appliedMigrations(place: Place): Promise<string[]> {
  if (!(await tableExists(place, 'kysely_migration'))) return [];
  const rows = await sql<{ name: string }>`select name from ${table(place, 'kysely_migration')}`.execute(
    place.kysely,
  );
  return rows.rows.map((r) => r.name).sort();
}

/**
 * The applied migrations this release does not know, when it may run against them all; throws
 * SchemaTooNewError when it may not (one is not recorded as additive, or a migration of this
 * release is still pending under a newer schema, which Kysely cannot apply out of order).
 */
async function newerMigrations(place: Place, known: MigrationSet): Promise<string[]> {
  const applied = await appliedMigrations(place);
  const unknown = applied.filter((name) => !Object.hasOwn(known, name));
  if (unknown.length === 0) return [];
  const flags = (await tableExists(place, MIGRATION_FLAGS_TABLE))
    ? await sql<{ name: string; additive: number; release: string }>`
        select name, additive, release from ${table(place, MIGRATION_FLAGS_TABLE)}`.execute(place.kysely)
    : { rows: [] };
  const byName = new Map(flags.rows.map((r) => [r.name, r]));
  const refused = unknown.filter((name) => Number(byName.get(name)?.additive ?? 0) !== 1);
  if (refused.length > 0) {
    const list = refused
      .map((name) => {
        const flag = byName.get(name);
        return flag
          ? `${name} (not additive, applied by tessera ${flag.release})`
          : `${name} (not recorded as additive)`;
      })
      .join(', ');
    throw new SchemaTooNewError(
      `the database was migrated by a newer release, and this release (tessera ${RELEASE}) cannot run against ${list}. Run the release that applied it (or a newer one), or restore the backup taken before that upgrade; see docs/OPERATIONS.md, "Upgrade and rollback"`,
    );
  }
  const pending = Object.keys(known).filter((name) => !applied.includes(name));
  if (pending.length > 0) {
    throw new SchemaTooNewError(
      `the database has newer migrations (${unknown.join(', ')}) but not this release's ${pending.join(', ')}: run \`tessera migrate\` with the newest release first; see docs/OPERATIONS.md, "Upgrade and rollback"`,
    );
  }
  return unknown;
}

/** invalid_schema_name, undefined_table, undefined_column: a relation of another schema vanished. */
function isCatalogRace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '3F000' || code === '42P01' || code === '42703';
}
