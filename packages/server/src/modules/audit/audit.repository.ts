import { type Kysely, PostgresAdapter, type RawBuilder, sql } from 'kysely';
import { deleteInBatches } from '../../db/batched-delete.js';
import { prepared, type Write } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';
import type { AuditEventType, RecordedEvent, StoredEvent } from './events.js';

/** An event's columns in insert order: id, project, user, type, data (JSON), ip, time. */
export type EventColumns = [
  id: string,
  projectId: string,
  userId: string | null,
  type: string,
  data: string,
  ip: string | null,
  createdAt: number,
];

/** An event as its columns (the arguments of a prepared statement that embeds `insertFrom`). */
export const eventColumns = (event: RecordedEvent): EventColumns => [
  event.id,
  event.projectId,
  event.userId ?? null,
  event.type,
  JSON.stringify(event.data ?? {}),
  event.ip ?? null,
  event.createdAt,
];

const insertEvent = prepared((db, ...[id, projectId, userId, type, data, ip, createdAt]: EventColumns) =>
  db
    .insertInto('audit_events')
    .values({ id, project_id: projectId, user_id: userId, type, data, ip, created_at: createdAt }),
);

/** Stores an event; on the database or inside the caller's transaction (with its deliveries). */
export async function insert(db: Kysely<Database>, event: RecordedEvent): Promise<void> {
  await insertEvent(db, ...eventColumns(event));
}

/** PostgreSQL: several events in one statement, each a row of the arrays. */
const insertEvents = prepared(
  (
    _db,
    ids: string[],
    projectIds: string[],
    userIds: Array<string | null>,
    types: string[],
    data: string[],
    ips: Array<string | null>,
    createdAts: number[],
  ) => sql`insert into audit_events (id, project_id, user_id, type, data, ip, created_at)
    select * from unnest(${ids}::text[], ${projectIds}::text[], ${userIds}::text[], ${types}::text[],
      ${data}::text[], ${ips}::text[], ${createdAts}::bigint[])`,
);

/** PostgreSQL: stores events in one statement. */
export async function insertMany(db: Kysely<Database>, events: readonly RecordedEvent[]): Promise<void> {
  const rows = events.map(eventColumns);
  const column = <I extends number>(i: I) => rows.map((r) => r[i] as EventColumns[I]);
  await insertEvents(db, column(0), column(1), column(2), column(3), column(4), column(5), column(6));
}

const deleteEvent = prepared((db, id: string) => db.deleteFrom('audit_events').where('id', '=', id));

/**
 * The delete of an event its caller's statement stored for something that then did not happen (a
 * code stored with its challenge that could not be delivered), to run with other writes.
 */
export function deleteWrite(id: string): Write {
  return deleteEvent.write(id);
}

/** The insert of an event, to run with other writes (`together`). */
export function insertWrite(event: RecordedEvent): Write {
  return insertEvent.write(...eventColumns(event));
}

/** A column of `insertFrom`: a parameter, or an expression over its source's columns. */
type OrExpressions<T extends readonly unknown[]> = { [K in keyof T]: T[K] | RawBuilder<unknown> };
type EventExpressions = OrExpressions<EventColumns>;

/**
 * PostgreSQL: the insert of an event as a data-modifying CTE of a larger statement, stored once per
 * row of `source` (a CTE's name, or a subquery with its alias), i.e. only when that statement's own
 * write happened. Its values are parameters (`EventColumns`; pass the placeholders a prepared
 * query's build gets) or expressions over the source's columns (the user its statement found).
 */
export function insertFrom(
  source: string | RawBuilder<unknown>,
  ...[id, projectId, userId, type, data, ip, createdAt]: EventExpressions
) {
  return sql`insert into audit_events (id, project_id, user_id, type, data, ip, created_at)
    select ${id}::text, ${projectId}::text, ${userId}::text, ${type}::text, ${data}::text, ${ip}::text,
      ${createdAt}::bigint
    from ${typeof source === 'string' ? sql.table(source) : source}`;
}

export interface EventFilter {
  userId?: string | undefined;
  type?: string | undefined;
  /** Unix ms, inclusive. */
  from?: number | undefined;
  /** Unix ms, exclusive. */
  to?: number | undefined;
  /** An event id: only events older than it (newest first, ties by id). An unknown id is ignored. */
  before?: string | undefined;
  limit: number;
}

/** A project's events, newest first; `more` when events beyond `limit` match. */
export async function page(
  db: Kysely<Database>,
  projectId: string,
  filter: EventFilter,
): Promise<{ events: StoredEvent[]; more: boolean }> {
  let query = db.selectFrom('audit_events').selectAll().where('project_id', '=', projectId);
  if (filter.userId) query = query.where('user_id', '=', filter.userId);
  if (filter.type) query = query.where('type', '=', filter.type);
  if (filter.from !== undefined) query = query.where('created_at', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('created_at', '<', filter.to);
  if (filter.before) {
    const cursor = await db
      .selectFrom('audit_events')
      .select(['created_at', 'id'])
      .where('id', '=', filter.before)
      .executeTakeFirst();
    if (cursor) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', cursor.created_at),
          eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
        ]),
      );
    }
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  const events = rows.slice(0, filter.limit).map(
    (row): StoredEvent => ({
      id: row.id,
      projectId: row.project_id,
      userId: row.user_id,
      type: row.type,
      data: JSON.parse(row.data) as Record<string, unknown>,
      ip: row.ip,
      createdAt: row.created_at,
    }),
  );
  return { events, more: rows.length > filter.limit };
}

/** Events `prune` deletes per call at most; the rest wait for the next run (every minute). */
const PRUNED_PER_CALL = 100_000;
/**
 * Events per delete statement. One project's events share their table pages with other projects',
 * so a batch of one project's touches more pages than a batch by time alone did: on SQLite, whose
 * statement holds the event loop, 1,000 such rows took up to 64 ms at 1 M events (500: half).
 */
const pruneBatch = (db: Kysely<Database>) =>
  db.getExecutor().adapter instanceof PostgresAdapter ? 1000 : 500;

/**
 * The projects whose oldest event is older than `before`, in one statement through
 * `audit_events_project_time`: a loose index scan skips from one project to the next (one index
 * probe each, projects whose row is gone included), and each project's oldest event is the first
 * entry of its range.
 */
async function projectsWithEventsBefore(db: Kysely<Database>, before: number): Promise<string[]> {
  const { rows } = await sql<{ project_id: string }>`with recursive p (id) as (
      select (select project_id from audit_events order by project_id limit 1)
      union all
      select (select project_id from audit_events where project_id > p.id order by project_id limit 1)
      from p where p.id is not null
    )
    select id as project_id from p
    where id is not null
      and (select created_at from audit_events where project_id = p.id order by created_at limit 1) < ${before}`.execute(
    db,
  );
  return rows.map((r) => r.project_id);
}

/**
 * Deletes events older than `before` in bounded batches, project by project through
 * `audit_events_project_time` (an index of its own on `created_at` would be written by every event
 * for the sake of this minute's delete), only in the projects that have such events; at most
 * `maxRows` in all.
 */
export async function prune(
  db: Kysely<Database>,
  before: number,
  { maxRows = PRUNED_PER_CALL, batchSize = pruneBatch(db) } = {},
): Promise<void> {
  let left = maxRows;
  for (const projectId of await projectsWithEventsBefore(db, before)) {
    if (left < batchSize) return;
    left -= await deleteInBatches(db, 'audit_events', 'id', 'created_at', before, {
      batchSize,
      maxBatches: Math.floor(left / batchSize),
      within: { column: 'project_id', value: projectId },
    });
  }
}

/** Whether an event of this type naming this user is stored (through the project–user index). */
export async function has(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
  type: AuditEventType,
): Promise<boolean> {
  const row = await db
    .selectFrom('audit_events')
    .select('id')
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .where('type', '=', type)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
