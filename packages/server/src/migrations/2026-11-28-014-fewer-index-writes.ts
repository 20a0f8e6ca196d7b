import type { Kysely } from 'kysely';

// Frozen: fewer index entries written per sign-in and per refresh grant, each query still served
// by an index.
// - Most sessions come from OTP and have neither a device nor a passkey, yet each wrote a null
//   entry into both indexes. The revocations that read them select one device or passkey
//   (`device_id = …`, which implies not null), so partial indexes over the set values serve them.
// - Audit events were indexed by `created_at` alone for housekeeping only; every event wrote it.
//   Housekeeping now deletes project by project through `audit_events_project_time`, which the
//   events listing needs anyway.

/** Additive: indexes only (partial indexes answer the same queries; an older release's housekeeping by `audit_events.created_at` scans instead). */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['device_id', 'passkey_id'] as const) {
    const name = column === 'device_id' ? 'sessions_device' : 'sessions_passkey';
    await db.schema.dropIndex(name).ifExists().execute();
    await db.schema.createIndex(name).on('sessions').column(column).where(column, 'is not', null).execute();
  }
  await db.schema.dropIndex('audit_events_created_at').ifExists().execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('audit_events_created_at').on('audit_events').column('created_at').execute();
  for (const column of ['device_id', 'passkey_id'] as const) {
    const name = column === 'device_id' ? 'sessions_device' : 'sessions_passkey';
    await db.schema.dropIndex(name).ifExists().execute();
    await db.schema.createIndex(name).on('sessions').column(column).execute();
  }
}
