import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

// Frozen: one random id per database, made when the database is created (or first migrated).
// Signing-key ids include it: instances racing to create a database's first key must agree on its
// kid, and two databases under one master key must not (they once both got the same first kid,
// with different key material, so a verifier that cached one refused the other's tokens).

/** Additive: a new table, which an older release never reads. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('database_identity')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('database_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db
    .insertInto('database_identity')
    .values({ id: 1, database_id: randomBytes(16).toString('base64url'), created_at: Date.now() })
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('database_identity').execute();
}
