import type { Kysely } from 'kysely';

// Frozen: the sessions table's indexes follow its queries. Housekeeping deletes ended sessions by
// `expires_at` every minute (a full scan without an index, holding the database as the table
// grows); no query selects sessions by `revoked_at` (revocations are read from
// session_revocations), so that index only cost a write per sign-in and revocation.

/** Additive: indexes only (an older release stays correct; its housekeeping may be slower). */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
  await db.schema.dropIndex('sessions_revoked_at').ifExists().execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sessions_revoked_at').on('sessions').column('revoked_at').execute();
  await db.schema.dropIndex('sessions_expires').ifExists().execute();
}
