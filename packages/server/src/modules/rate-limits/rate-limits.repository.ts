import { type Kysely, PostgresAdapter, type RawBuilder, sql } from 'kysely';
import { sha256 } from '../../crypto/hash.js';
import { deleteInBatches } from '../../db/batched-delete.js';
import { type Prepared, prepared, type Write } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';

/**
 * The stored key of a window: a hash of its scope and subject, so no e-mail address or phone
 * number is stored here.
 */
export function rateLimitKey(scope: string, subject: string): string {
  return sha256(`${scope}\0${subject}`);
}

/**
 * For a PostgreSQL statement that takes part of a subject from a row (`keyIn`): the bytes of the
 * key's text before that part (`scope\0` and the subject's head) and after it. Bytes, not text:
 * the separators are NUL, which PostgreSQL text cannot hold.
 */
export function keyParts(scope: string, head: string, tail: string): { head: Buffer; tail: Buffer } {
  return { head: Buffer.from(`${scope}\0${head}`), tail: Buffer.from(tail) };
}

/**
 * PostgreSQL: `rateLimitKey` of `head + column + tail` (see `keyParts`) computed in the statement
 * (base64url of SHA-256, as node:crypto gives it). `head` and `tail` are parameters.
 */
export function keyIn(head: Buffer, column: RawBuilder<string>, tail: Buffer): RawBuilder<string> {
  return sql<string>`translate(rtrim(encode(sha256(${head}::bytea || convert_to(${column}, 'UTF8') || ${tail}::bytea), 'base64'), '='), '+/', '-_')`;
}

/**
 * PostgreSQL: one hit on a window as a data-modifying CTE of a larger statement, made once per row
 * of `source` (where `when` holds): the same atomic upsert as `addHits`, returning the window's
 * count and end.
 */
export function hitIn(
  source: string,
  key: RawBuilder<string>,
  now: number,
  resetAt: number,
  when: RawBuilder<boolean> = sql<boolean>`true`,
): RawBuilder<RateWindowRow> {
  return sql<RateWindowRow>`insert into rate_limits (key, count, reset_at)
    select ${key}, 1, ${resetAt}::bigint from ${sql.table(source)} where ${when}
    on conflict (key) do update set
      count = case when rate_limits.reset_at <= ${now} then 1 else rate_limits.count + 1 end,
      reset_at = case when rate_limits.reset_at <= ${now} then ${resetAt} else rate_limits.reset_at end
    returning count, reset_at`;
}

interface RateWindowRow {
  count: number;
  reset_at: number;
}

/** A fixed window as stored: its count and when it ends (Unix ms). */
export interface RateWindow {
  count: number;
  resetAt: number;
}

/** Whole seconds until the window ends, at least 1 (a Retry-After). */
export function secondsLeft(window: RateWindow, now: number): number {
  return Math.max(1, Math.ceil((window.resetAt - now) / 1000));
}

// Every request pays one of these (a per-IP sync or an exact limit): built and compiled once.
const upsertHits = prepared((db, key: string, hits: number, now: number, resetAt: number) =>
  db
    .insertInto('rate_limits')
    .values({ key, count: hits, reset_at: resetAt })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        count: sql<number>`case when rate_limits.reset_at <= ${now} then ${hits} else rate_limits.count + ${hits} end`,
        reset_at: sql<number>`case when rate_limits.reset_at <= ${now} then ${resetAt} else rate_limits.reset_at end`,
      }),
    )
    .returning(['count', 'reset_at']),
);

const refundHit = prepared((db, key: string) =>
  db
    .updateTable('rate_limits')
    .set({ count: sql<number>`count - 1` })
    .where('key', '=', key)
    .where('count', '>', 0),
);

/**
 * Adds `hits` to a fixed window and returns its count and end, in one atomic upsert: a window that
 * has ended starts again from `hits` and ends at `resetAt`. Shared by the exact limits (one hit a
 * call) and the per-IP limits (what an instance counted since its last sync).
 */
export async function addHits(
  db: Kysely<Database>,
  key: string,
  hits: number,
  now: number,
  resetAt: number,
): Promise<RateWindow> {
  const [row] = (await upsertHits(db, key, hits, now, resetAt)).rows;
  if (!row) throw new Error('rate limit upsert returned no row');
  return { count: Number(row.count), resetAt: Number(row.reset_at) };
}

/** What `addHitsEach` adds to one window: `hits`, starting it again to end at `resetAt` if it has ended. */
export interface WindowHits {
  key: string;
  hits: number;
  resetAt: number;
}

/** Windows per statement of `addHitsEach`: its one parameter stays some 50 KB at most. */
export const HITS_PER_STATEMENT = 500;

// The windows come as one JSON parameter, so the statement has one text whatever their number.
const upsertHitsEach = prepared((db, windows: string, now: number) => {
  const rows =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? sql`select w.key, w.hits, w.reset_at
          from json_to_recordset(${windows}::json) as w(key text, hits integer, reset_at bigint)`
      : // SQLite reads `on conflict` after a select as part of a join without the `where`.
        sql`select json_extract(value, '$.key'), json_extract(value, '$.hits'), json_extract(value, '$.reset_at')
          from json_each(${windows}) where true`;
  return sql<RateWindowRow & { key: string }>`insert into rate_limits (key, count, reset_at) ${rows}
    on conflict (key) do update set
      count = case when rate_limits.reset_at <= ${now} then excluded.count else rate_limits.count + excluded.count end,
      reset_at = case when rate_limits.reset_at <= ${now} then excluded.reset_at else rate_limits.reset_at end
    returning key, count, reset_at`;
});

/**
 * `addHits` for several windows (distinct keys, at most HITS_PER_STATEMENT) in one statement: the
 * per-IP sync of an instance that many addresses reach, and one hit on each of a request's
 * windows (`addOneEach`). Returns each window's count and end by key.
 */
export async function addHitsEach(
  db: Kysely<Database>,
  windows: readonly WindowHits[],
  now: number,
): Promise<Map<string, RateWindow>> {
  if (windows.length > HITS_PER_STATEMENT) throw new Error('addHitsEach: too many windows for one statement');
  // PostgreSQL refuses to update one row twice in a statement; SQLite would add both.
  if (new Set(windows.map((w) => w.key)).size !== windows.length)
    throw new Error('addHitsEach: the same window twice');
  const json = JSON.stringify(windows.map((w) => ({ key: w.key, hits: w.hits, reset_at: w.resetAt })));
  const { rows } = await upsertHitsEach(db, json, now);
  const totals = new Map(rows.map((r) => [r.key, { count: Number(r.count), resetAt: Number(r.reset_at) }]));
  for (const w of windows) if (!totals.has(w.key)) throw new Error('rate limit upsert returned no row');
  return totals;
}

/**
 * Adds one hit to each window (`key`, ending at `resetAt` if it starts now) in one round trip and
 * returns the windows in the order given. The keys must differ.
 */
export async function addOneEach(
  db: Kysely<Database>,
  windows: ReadonlyArray<{ key: string; resetAt: number }>,
  now: number,
): Promise<RateWindow[]> {
  const totals = await addHitsEach(
    db,
    windows.map((w) => ({ key: w.key, hits: 1, resetAt: w.resetAt })),
    now,
  );
  return windows.map((w) => totals.get(w.key)!);
}

/** A window of `hitInSteps`: its key, its end if it starts now, and its limit. */
export interface StagedWindow {
  key: string;
  resetAt: number;
  limit: number;
}

/**
 * One-row inserts to make only when every window of `hitInSteps` allowed. On PostgreSQL they run
 * inside the steps' statement: `from(source, ...values)` gives, per insert, `insert into … select
 * <values, each a parameter with its cast> from <source> where ok`, `source` being a one-row
 * relation with a boolean `ok`. Elsewhere `writes` run after the steps, together.
 */
export interface InsertWhenAllowed {
  /** Identifies `from`'s text among the inserts (one compiled statement per shape). */
  readonly id: string;
  readonly values: readonly unknown[];
  from(source: string, ...values: unknown[]): readonly RawBuilder<unknown>[];
  readonly writes: readonly Write[];
}

interface StagedRow {
  key: string;
  count: number;
  reset_at: number;
}

/** The statements of `hitInSteps`, by shape: windows per step, and the insert. */
const stagedStatements = new Map<string, Prepared<unknown[], StagedRow>>();

/**
 * One statement per shape: per step `i` a data-modifying CTE `s{i}` (the atomic upsert of
 * `addOneEach`, one hit a window) that takes its rows only when `a{i-1}.ok`, and `a{i}`, whether
 * every window so far is within its limit; then the inserts, from `a{last}`. PostgreSQL runs every
 * CTE of a statement on one snapshot, but a later step reads the earlier one's RETURNING rows
 * (through `a{i-1}`), which is what orders them. Arguments: `now`, then per window its key, end
 * and limit, then the insert's values.
 */
function stagedStatement(shape: readonly number[], insert: InsertWhenAllowed | undefined) {
  return prepared((_db, ...args: unknown[]) => {
    const now = args[0];
    let at = 1;
    const ctes: RawBuilder<unknown>[] = [];
    const results: RawBuilder<unknown>[] = [];
    shape.forEach((windows, i) => {
      const step = Array.from({ length: windows }, () => {
        const window = { key: args[at], resetAt: args[at + 1], limit: args[at + 2] };
        at += 3;
        return window;
      });
      const hits = sql.raw(`s${i}`);
      const verdict = sql.raw(`a${i}`);
      const before = sql.raw(`a${i - 1}`);
      const rows = sql.join(step.map((w) => sql`(${w.key}::text, ${w.resetAt}::bigint)`));
      const limits = sql.join(step.map((w) => sql`(${w.key}::text, ${w.limit}::bigint)`));
      ctes.push(sql`${hits} as (
    insert into rate_limits (key, count, reset_at)
    select v.key, 1, v.reset_at from (values ${rows}) as v (key, reset_at)${i === 0 ? sql`` : sql` where (select ok from ${before})`}
    on conflict (key) do update set
      count = case when rate_limits.reset_at <= ${now} then 1 else rate_limits.count + 1 end,
      reset_at = case when rate_limits.reset_at <= ${now} then excluded.reset_at else rate_limits.reset_at end
    returning key, count, reset_at
  )`);
      ctes.push(sql`${verdict} as (
    select ${i === 0 ? sql`` : sql`(select ok from ${before}) and `}coalesce(bool_and(h.count <= l.lim), true) as ok
    from ${hits} as h join (values ${limits}) as l (key, lim) on l.key = h.key
  )`);
      results.push(sql`select key, count, reset_at from ${hits}`);
    });
    if (insert) {
      insert.from(`a${shape.length - 1}`, ...args.slice(at)).forEach((row, i) => {
        ctes.push(sql`${sql.raw(`inserted${i}`)} as (${row})`);
      });
    }
    return sql<StagedRow>`with ${sql.join(ctes)}
  ${sql.join(results, sql` union all `)}`;
  });
}

/**
 * PostgreSQL: one hit on each window, step by step, in one statement: a step's windows are counted
 * only when every window of the steps before it is within its limit, and `insert`'s rows are
 * made only when all are. Returns the windows counted (the steps that ran), by key. The keys must differ.
 */
export async function hitInSteps(
  db: Kysely<Database>,
  steps: ReadonlyArray<readonly StagedWindow[]>,
  now: number,
  insert?: InsertWhenAllowed,
): Promise<Map<string, RateWindow>> {
  const shape = steps.map((step) => step.length);
  if (shape.length === 0 || shape.includes(0)) throw new Error('hitInSteps: a step without windows');
  const name = `${shape.join('.')}|${insert?.id ?? ''}`;
  let statement = stagedStatements.get(name);
  if (!statement) {
    statement = stagedStatement(shape, insert);
    stagedStatements.set(name, statement);
  }
  const args: unknown[] = [now];
  for (const step of steps) for (const w of step) args.push(w.key, w.resetAt, w.limit);
  if (insert) args.push(...insert.values);
  const { rows } = await statement(db, ...args);
  return new Map(rows.map((r) => [r.key, { count: Number(r.count), resetAt: Number(r.reset_at) }]));
}

/** Gives back one unit of a window (never below zero). */
export async function refund(db: Kysely<Database>, key: string): Promise<void> {
  await refundHit(db, key);
}

/** `refund` as a write to run with others (`together`). */
export function refundWrite(key: string): Write {
  return refundHit.write(key);
}

/**
 * Deletes windows that have ended by `now`, in bounded batches through `rate_limits_reset_at`;
 * returns how many.
 */
/** The windows of `keys` that have not ended by `now`, by key (read only: nothing is counted). */
export async function current(
  db: Kysely<Database>,
  keys: readonly string[],
  now: number,
): Promise<Map<string, RateWindow>> {
  if (keys.length === 0) return new Map();
  const rows = await db
    .selectFrom('rate_limits')
    .select(['key', 'count', 'reset_at'])
    .where('key', 'in', keys)
    .where('reset_at', '>', now)
    .execute();
  return new Map(rows.map((r) => [r.key, { count: Number(r.count), resetAt: Number(r.reset_at) }]));
}

export function deleteEnded(db: Kysely<Database>, now: number): Promise<number> {
  return deleteInBatches(db, 'rate_limits', 'key', 'reset_at', now + 1);
}
