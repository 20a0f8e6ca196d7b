import type { Kysely } from 'kysely';

// Frozen: the network a session was started from (issue 33), shown to the integrator and in the
// console beside its method and client: an IPv4 /24 or an IPv6 /48 (`sessionNetwork`), never the
// address. Null for sessions started before this migration, by a release that does not know it,
// or from an address that is no IP address.

/** A nullable column: a release that does not know it runs unchanged. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('ip_network', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('ip_network').execute();
}
