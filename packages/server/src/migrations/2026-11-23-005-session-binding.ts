import type { Kysely } from 'kysely';

// Frozen: a session records the passkey that started it (removing the passkey ends its sessions,
// as removing a device does; both revocations find their sessions through an index), and a rotated refresh token records a hash of the client that
// rotated it (IP and User-Agent), so the grace-window answer goes only to that same client.

/** Additive: new nullable columns and indexes. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('passkey_id', 'text').execute();
  await db.schema.createIndex('sessions_passkey').on('sessions').column('passkey_id').execute();
  await db.schema.createIndex('sessions_device').on('sessions').column('device_id').execute();
  await db.schema.alterTable('refresh_tokens').addColumn('rotated_by', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refresh_tokens').dropColumn('rotated_by').execute();
  await db.schema.dropIndex('sessions_device').ifExists().execute();
  await db.schema.dropIndex('sessions_passkey').ifExists().execute();
  await db.schema.alterTable('sessions').dropColumn('passkey_id').execute();
}
