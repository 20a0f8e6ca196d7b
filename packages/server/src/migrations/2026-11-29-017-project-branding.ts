import type { Kysely } from 'kysely';

// Frozen: a project's branding on the sign-in UI (@tessera/ui and the hosted pages), as a JSON
// object {"display_name"?, "logo_url"?, "primary_color"?, "primary_color_dark"?}; null: none.

/** A nullable column: a release that does not know it runs unchanged against a schema that has it. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('branding', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('branding').execute();
}
