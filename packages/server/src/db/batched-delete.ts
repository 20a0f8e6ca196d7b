import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

export interface BatchOptions {
  /** Rows per statement. */
  batchSize?: number;
  /** Statements per call; what is left waits for the next call (housekeeping runs every minute). */
  maxBatches?: number;
}

/**
 * Deletes the rows of `table` whose `column` is below `before`, `batchSize` rows per statement
 * chosen through an index on `column`, yielding to the event loop between statements: a large
 * backlog never holds SQLite's thread, or a PostgreSQL lock, for long. At most
 * `batchSize × maxBatches` rows go per call (100,000 by default). Returns how many went.
 */
export async function deleteInBatches<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  key: keyof Database[T] & string,
  column: keyof Database[T] & string,
  before: number,
  { batchSize = 1000, maxBatches = 100 }: BatchOptions = {},
): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    if (batch > 0) await new Promise((resolve) => setImmediate(resolve));
    const result =
      await sql`delete from ${sql.table(table)} where ${sql.ref(key)} in (select ${sql.ref(key)} from ${sql.table(table)} where ${sql.ref(column)} < ${before} limit ${batchSize})`.execute(
        db,
      );
    const count = Number(result.numAffectedRows ?? 0n);
    deleted += count;
    if (count < batchSize) break;
  }
  return deleted;
}
