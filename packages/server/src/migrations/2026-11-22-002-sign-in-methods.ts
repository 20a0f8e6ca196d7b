import type { Kysely } from 'kysely';

// Frozen: trusted devices, PINs, passkeys, single-use challenges and the audit log.

/** Additive: new tables only (a release without them never reads them). */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('devices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('thumbprint', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addUniqueConstraint('devices_project_thumbprint', ['project_id', 'thumbprint'])
    .execute();
  await db.schema.createIndex('devices_user').on('devices').column('user_id').execute();

  await db.schema
    .createTable('pins')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('device_type', 'text', (c) => c.notNull())
    .addColumn('backed_up', 'integer', (c) => c.notNull())
    .addColumn('aaguid', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('passkeys_user').on('passkeys').column('user_id').execute();

  await db.schema
    .createTable('challenges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('device_id', 'text')
    .addColumn('challenge', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema.createIndex('challenges_expires').on('challenges').column('expires_at').execute();

  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('ip', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('audit_events_project_user_time')
    .on('audit_events')
    .columns(['project_id', 'user_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('audit_events_project_time')
    .on('audit_events')
    .columns(['project_id', 'created_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['audit_events', 'challenges', 'passkeys', 'pins', 'devices']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
