import type { Kysely } from 'kysely';

// Frozen: custom claims and webhooks.

/** Additive: new tables only. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  // Revocations outlive their sessions (a deleted user's sessions are gone, but their access
  // tokens must keep failing /verify until they expire): every instance polls this table.
  await db.schema
    .createTable('session_revocations')
    .addColumn('session_id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('session_revocations_at')
    .on('session_revocations')
    .column('revoked_at')
    .execute();

  await db.schema
    .createTable('user_claims')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('claims', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_status', 'text')
    .addColumn('last_attempt_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_project')
    .on('webhook_endpoints')
    .column('project_id')
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) =>
      c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'created_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['webhook_deliveries', 'webhook_endpoints', 'user_claims', 'session_revocations']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
