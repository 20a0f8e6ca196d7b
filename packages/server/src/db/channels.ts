import { type Kysely, PostgresAdapter, sql } from 'kysely';
import type { Database } from './schema.js';

// Apart from the listener (notifications.ts), so that a SQLite process never loads node-postgres.

/**
 * The channels instances tell each other about changes on. Every payload is a JSON object naming
 * the schema it concerns (`schema`): instances of several deployments (or tests) may share one
 * database, each in its own schema, and listen on the same channels.
 */
export const Channels = {
  /** Sessions were revoked: `{ schema, sessions?: string[] }` (no `sessions`: re-read them all). */
  revocations: 'tessera_revocations',
  /** Signing keys were added or changed state: `{ schema }`. */
  keys: 'tessera_keys',
  /** A project was changed or deleted: `{ schema, id, api_key_id }` (neither: forget them all). */
  projects: 'tessera_projects',
} as const;

export type Channel = (typeof Channels)[keyof typeof Channels];

/** PostgreSQL refuses a payload of 8000 bytes or more; a detail longer than this is left out. */
const MAX_DETAIL_LENGTH = 7000;

/**
 * Tells every listening instance that rows behind `channel` changed. Run inside a transaction, the
 * notice is delivered when it commits, and never if it rolls back. A `detail` too long for a
 * notice is dropped: listeners then re-read everything. SQLite has no NOTIFY: this does nothing
 * there, and other processes on the same file learn of the change by polling.
 */
export async function notifyChange(
  executor: Kysely<Database>,
  channel: Channel,
  detail: Record<string, unknown> = {},
): Promise<void> {
  if (!(executor.getExecutor().adapter instanceof PostgresAdapter)) return;
  let json = JSON.stringify(detail);
  if (json.length > MAX_DETAIL_LENGTH) json = '{}';
  // The schema as the writing connection resolves it, which is how the listener resolves its own.
  await sql`select pg_notify(${channel}, (${json}::jsonb || jsonb_build_object('schema', current_schema()))::text)`.execute(
    executor,
  );
}
