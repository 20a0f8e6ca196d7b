import type { Kysely } from 'kysely';

// Frozen: a project may require the PIN on every device sign-in (1), or let a trusted device sign in
// alone (0, the default); a locked PIN locks device sign-in either way.

/** Additive: a new column with a default. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('projects')
    .addColumn('device_requires_pin', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('device_requires_pin').execute();
}
