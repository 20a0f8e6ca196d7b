import { type Kysely, PostgresAdapter, sql } from 'kysely';
import type { Database } from './schema.js';

export interface BatchOptions<C extends string = string> {
  /** Rows per statement. */
  batchSize?: number;
  /** Statements per call; what is left waits for the next call (housekeeping runs every minute). */
  maxBatches?: number;
  /** Only rows with this value in this column (the leading column of the index on `column`). */
  within?: { column: C; value: string };
}

/**
 * Deletes the rows of `table` whose `column` is below `before`, `batchSize` rows per statement
 * chosen through an index on `column`, yielding to the event loop between statements: a large
 * backlog never holds SQLite's thread, or a PostgreSQL lock, for long. At most
 * `batchSize × maxBatches` rows go per call (100,000 by default). Returns how many went. With
 * `within`, only the rows of one value of the index's leading column (one project's): the range
 * that value and `before` bound in a two-column index.
 *
 * PostgreSQL: the batch's rows are chosen `for update skip locked`, so the delete never waits for
 * a row another statement holds (it is taken by a later run). Waiting could deadlock with a
 * statement that locks several of the same rows in another order, e.g. the rate limiter's
 * multi-row upsert (`addOneEach`) against ended windows it is restarting.
 */
export async function deleteInBatches<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  key: keyof Database[T] & string,
  column: keyof Database[T] & string,
  before: number,
  { batchSize = 1000, maxBatches = 100, within }: BatchOptions<keyof Database[T] & string> = {},
): Promise<number> {
  const skipLocked =
    db.getExecutor().adapter instanceof PostgresAdapter ? sql` for update skip locked` : sql``;
  const scope = within ? sql`${sql.ref(within.column)} = ${within.value} and ` : sql``;
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    if (batch > 0) await new Promise((resolve) => setImmediate(resolve));
    const result =
      await sql`delete from ${sql.table(table)} where ${sql.ref(key)} in (select ${sql.ref(key)} from ${sql.table(table)} where ${scope}${sql.ref(column)} < ${before} limit ${batchSize}${skipLocked})`.execute(
        db,
      );
    const count = Number(result.numAffectedRows ?? 0n);
    deleted += count;
    if (count < batchSize) break;
  }
  return deleted;
}
