import type { Kysely } from 'kysely';

// Frozen: the countries a project's SMS codes may go to, as a JSON array of ISO 3166-1 alpha-2
// codes (or "*" for every country); null follows the server's TESSERA_SMS_COUNTRIES.

/** Additive: a new nullable column. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('sms_countries', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('sms_countries').execute();
}
