import type { Kysely } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one. Typed Kysely<any> on purpose,
// migrations must not import application types that move on.

/** Not additive: the schema every release needs. */
export const additive = false;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('api_key_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('origins', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('rp_id', 'text')
    .addColumn('numeric_auth_time', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('secret_rotated_at', 'bigint')
    .execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_enc', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('activate_at', 'bigint')
    .addColumn('activated_at', 'bigint')
    .addColumn('retire_at', 'bigint')
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('identifier_type', 'text', (c) => c.notNull())
    .addColumn('client_user_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'bigint')
    .addUniqueConstraint('users_project_identifier', ['project_id', 'identifier'])
    .execute();

  await db.schema
    .createTable('otp_challenges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema.createIndex('otp_challenges_expires').on('otp_challenges').column('expires_at').execute();

  await db.schema
    .createTable('rate_limits')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('reset_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('auth_method', 'text', (c) => c.notNull())
    .addColumn('auth_time', 'bigint', (c) => c.notNull())
    .addColumn('device_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('last_refreshed_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_revoked_at').on('sessions').column('revoked_at').execute();

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .addColumn('successor_enc', 'text')
    .execute();
  await db.schema.createIndex('refresh_tokens_session').on('refresh_tokens').column('session_id').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'refresh_tokens',
    'sessions',
    'rate_limits',
    'otp_challenges',
    'users',
    'signing_keys',
    'projects',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
