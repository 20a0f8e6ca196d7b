import type { Kysely } from 'kysely';

// Frozen: the console (issue 33). projects.console: 1 = the built-in console project, whose users
// sign in to the console; set only when the server creates it, so renaming another project to
// `console` gives it nothing. console_members: who may use the console and with which role:
// `operator` (every project, project_id null) or `admin` / `support` / `viewer` of one project.
// `identifier` is normalized as OTP identifiers are; `user_id` is the console project's user once
// known (bound at their first use of the console).

/** A defaulted column and a new table: a release that does not know them runs unchanged. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('projects')
    .addColumn('console', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('console_members')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_members_identifier')
    .on('console_members')
    .columns(['identifier', 'project_id'])
    .execute();
  await db.schema.createIndex('console_members_user').on('console_members').column('user_id').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('console_members').execute();
  await db.schema.alterTable('projects').dropColumn('console').execute();
}
