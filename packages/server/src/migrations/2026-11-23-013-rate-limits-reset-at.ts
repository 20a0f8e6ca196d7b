import type { Kysely } from 'kysely';

// Frozen: housekeeping deletes ended rate-limit windows by `reset_at` every minute. Without an
// index each run scanned the whole table, which a flood of distinct subjects (addresses,
// identifiers) makes as large as the flood; the delete now goes in bounded batches through this index.

/** Additive: an index only. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('rate_limits_reset_at').on('rate_limits').column('reset_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('rate_limits_reset_at').ifExists().execute();
}
