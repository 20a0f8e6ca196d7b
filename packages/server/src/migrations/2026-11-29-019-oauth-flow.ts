import type { Kysely } from 'kysely';

// Frozen: the authorization code flow (issue 31).
// - oauth_requests: pending authorization requests (validated parameters as JSON), bound to the
//   browser that started them by a hash of a cookie; they live minutes.
// - oauth_codes: authorization codes, by the SHA-256 of the code; one use (used_at), bound to the
//   client, redirect URI, PKCE challenge, nonce, resource and the hosted session's Tessera session;
//   issued_session_id is the session the exchange started (revoked when the code is replayed).
// - oauth_browser_sessions: the hosted pages' single sign-on session (cookie `id.secret`, secret
//   hashed), bound to a Tessera session row: revoking that session ends it.
// - oauth_consents: a user's remembered grant to a third-party client (scopes, space-separated).
// - sessions.client_id / scope / resource: a session started by a code exchange belongs to that
//   OAuth client (its refresh tokens are bound to it); null for every other session.

/** New tables and nullable columns: a release that does not know them runs unchanged. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('browser_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_requests_expiry').on('oauth_requests').column('expires_at').execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('resource', 'text')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('issued_session_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('oauth_codes_expiry').on('oauth_codes').column('expires_at').execute();

  await db.schema
    .createTable('oauth_browser_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('oauth_browser_sessions_session')
    .on('oauth_browser_sessions')
    .column('session_id')
    .execute();

  await db.schema
    .createTable('oauth_consents')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oauth_consents_pk', ['user_id', 'client_id'])
    .execute();
  await db.schema.createIndex('oauth_consents_client').on('oauth_consents').column('client_id').execute();

  await db.schema.alterTable('sessions').addColumn('client_id', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('scope', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('resource', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['resource', 'scope', 'client_id'])
    await db.schema.alterTable('sessions').dropColumn(column).execute();
  for (const table of ['oauth_consents', 'oauth_browser_sessions', 'oauth_codes', 'oauth_requests'])
    await db.schema.dropTable(table).ifExists().execute();
}
