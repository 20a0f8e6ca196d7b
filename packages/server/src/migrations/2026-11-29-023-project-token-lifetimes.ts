import type { Kysely } from 'kysely';

// Frozen: a project's own token lifetimes in seconds (issue 33), set from the operator API, the
// console or `tessera projects update`. Null: the server's (TESSERA_ACCESS_TOKEN_TTL,
// TESSERA_ID_TOKEN_TTL, TESSERA_REFRESH_TOKEN_TTL), which are also the longest a project may set.

/** Nullable columns: a release that does not know them mints the server's lifetimes, as before. */
export const additive = true;

const COLUMNS = ['access_token_ttl', 'id_token_ttl', 'refresh_token_ttl'] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of COLUMNS) await db.schema.alterTable('projects').addColumn(column, 'integer').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of COLUMNS) await db.schema.alterTable('projects').dropColumn(column).execute();
}
