import type { Kysely } from 'kysely';

// Frozen: open client registration per project (issue 31). projects.oauth_dcr: 1 = anyone may
// register a client (RFC 7591) at the project's registration endpoint; projects.oauth_cimd: 1 = a
// client may name itself by the HTTPS URL of its Client ID Metadata Document. Both default to off.
// oauth_clients.dynamic: 1 = registered through the open endpoint (third-party, expires when
// unused); last_used_at: when an authorization request last named it.

/** Defaulted and nullable columns: a release that does not know them runs unchanged. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('projects')
    .addColumn('oauth_dcr', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('projects')
    .addColumn('oauth_cimd', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('oauth_clients')
    .addColumn('dynamic', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('oauth_clients').addColumn('last_used_at', 'bigint').execute();
  await db.schema
    .createIndex('oauth_clients_dynamic_unused')
    .on('oauth_clients')
    .columns(['dynamic', 'last_used_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('oauth_clients_dynamic_unused').ifExists().execute();
  await db.schema.alterTable('oauth_clients').dropColumn('last_used_at').execute();
  await db.schema.alterTable('oauth_clients').dropColumn('dynamic').execute();
  await db.schema.alterTable('projects').dropColumn('oauth_cimd').execute();
  await db.schema.alterTable('projects').dropColumn('oauth_dcr').execute();
}
