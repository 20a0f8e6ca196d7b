import type { Kysely } from 'kysely';

// Frozen: a project's OAuth clients (issue 31). A project without clients works as before (its API
// key is its only client). `client_id` is public (`tc_…`); a confidential client's secret is kept
// as a SHA-256 only. redirect_uris, post_logout_redirect_uris and grant_types are JSON arrays;
// scope is the space-separated list of scopes the client may ask for.

/** New table only: a release that does not know it runs unchanged. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text')
    .addColumn('token_endpoint_auth_method', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('logo_uri', 'text')
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('post_logout_redirect_uris', 'text', (c) => c.notNull())
    .addColumn('grant_types', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('first_party', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_clients_project').on('oauth_clients').column('project_id').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_clients').ifExists().execute();
}
