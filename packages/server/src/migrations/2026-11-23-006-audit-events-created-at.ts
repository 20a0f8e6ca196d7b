import type { Kysely } from 'kysely';

// Frozen: housekeeping deletes audit events past their retention by `created_at` every minute.
// The existing indexes lead with `project_id`, so without this one each run scanned the whole
// table (a 470 ms stall at 2 M rows on SQLite).

/** Additive: an index only. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('audit_events_created_at').on('audit_events').column('created_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_events_created_at').ifExists().execute();
}
