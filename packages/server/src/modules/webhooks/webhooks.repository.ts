import type { Kysely } from 'kysely';
import { prepared } from '../../db/prepared.js';
import type { Database, WebhookDeliveryRow, WebhookEndpointRow } from '../../db/schema.js';

/** An endpoint as the webhook services see it: its event types parsed once, here. */
export interface WebhookEndpoint extends Omit<WebhookEndpointRow, 'event_types'> {
  /** The event types it receives, or `['*']` for all. */
  event_types: readonly string[];
}

export type WebhookDelivery = WebhookDeliveryRow;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

const eventTypes = (json: string) => JSON.parse(json) as string[];

const toEndpoint = (row: WebhookEndpointRow): WebhookEndpoint => ({
  ...row,
  event_types: eventTypes(row.event_types),
});

export async function insertEndpoint(db: Kysely<Database>, endpoint: WebhookEndpoint): Promise<void> {
  await db
    .insertInto('webhook_endpoints')
    .values({ ...endpoint, event_types: JSON.stringify(endpoint.event_types) })
    .execute();
}

/** A project's endpoints, oldest first. */
export async function listEndpoints(db: Kysely<Database>, projectId: string): Promise<WebhookEndpoint[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at', 'asc')
    .execute();
  return rows.map(toEndpoint);
}

/** How many endpoints a project has (the per-project cap). */
export async function countEndpoints(db: Kysely<Database>, projectId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** An endpoint by id; with a project, only that project's. */
export async function findEndpoint(
  db: Kysely<Database>,
  id: string,
  projectId?: string,
): Promise<WebhookEndpoint | undefined> {
  let query = db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id);
  if (projectId !== undefined) query = query.where('project_id', '=', projectId);
  const row = await query.executeTakeFirst();
  return row && toEndpoint(row);
}

/** Deletes a project's endpoint (its deliveries go by cascade); false when it has none by this id. */
export async function deleteEndpoint(db: Kysely<Database>, projectId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('webhook_endpoints')
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function setEndpointStatus(
  db: Kysely<Database>,
  id: string,
  status: string,
  at: number,
): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ last_status: status, last_attempt_at: at })
    .where('id', '=', id)
    .execute();
}

/** Queues deliveries; inside the transaction that records their audit event. */
export async function insertDeliveries(db: Kysely<Database>, deliveries: WebhookDelivery[]): Promise<void> {
  if (deliveries.length > 0) await db.insertInto('webhook_deliveries').values(deliveries).execute();
}

/** One delivery of an endpoint. */
export function findDelivery(
  db: Kysely<Database>,
  endpointId: string,
  id: string,
): Promise<WebhookDelivery | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** An endpoint's deliveries, newest first. */
export function listDeliveries(
  db: Kysely<Database>,
  endpointId: string,
  limit: number,
): Promise<WebhookDelivery[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
}

/** Every instance polls it each second (webhooks.dispatcher.ts): built and compiled once. */
const due = prepared((db, now: number, limit: number) =>
  db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .orderBy('next_attempt_at', 'asc')
    .limit(limit),
);

/** Ids of pending deliveries that are due and not claimed by a live worker, the longest due first. */
export async function dueDeliveries(db: Kysely<Database>, now: number, limit: number): Promise<string[]> {
  return (await due(db, now, limit)).rows.map((r) => r.id);
}

/**
 * Claims a pending delivery until `lockedUntil`, unless another worker holds a live claim: one
 * conditional update, so of several instances exactly one gets it. Undefined when taken or done.
 */
export function claimDelivery(
  db: Kysely<Database>,
  id: string,
  now: number,
  lockedUntil: number,
): Promise<WebhookDelivery | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({ locked_until: lockedUntil })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .returningAll()
    .executeTakeFirst();
}

/** Records a successful attempt and releases the claim. */
export async function markDelivered(
  db: Kysely<Database>,
  id: string,
  attempt: { attempts: number; statusCode: number | null; at: number },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'delivered',
      attempts: attempt.attempts,
      delivered_at: attempt.at,
      last_status_code: attempt.statusCode,
      last_error: null,
      locked_until: null,
    })
    .where('id', '=', id)
    .execute();
}

/** Records a failed attempt, to be retried at `nextAttemptAt` (`pending`) or not (`failed`), and releases the claim. */
export async function markFailedAttempt(
  db: Kysely<Database>,
  id: string,
  attempt: {
    status: 'pending' | 'failed';
    attempts: number;
    nextAttemptAt: number;
    statusCode: number | null;
    error: string;
  },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      status: attempt.status,
      attempts: attempt.attempts,
      next_attempt_at: attempt.nextAttemptAt,
      last_status_code: attempt.statusCode,
      last_error: attempt.error,
      locked_until: null,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Puts off a project's pending deliveries that are due before `until` to `until`, without counting
 * an attempt (the per-project delivery rate): the one this worker holds (`claimedId`) and those
 * no live worker holds. Returns how many.
 */
export async function deferProjectDeliveries(
  db: Kysely<Database>,
  projectId: string,
  claimedId: string,
  now: number,
  until: number,
): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: until, locked_until: null })
    .where('project_id', '=', projectId)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<', until)
    .where((eb) =>
      eb.or([eb('id', '=', claimedId), eb('locked_until', 'is', null), eb('locked_until', '<', now)]),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Deletes finished deliveries created before `before`. */
export async function pruneDeliveries(db: Kysely<Database>, before: number): Promise<void> {
  await db
    .deleteFrom('webhook_deliveries')
    .where('status', '!=', 'pending')
    .where('created_at', '<', before)
    .execute();
}

/** A project's endpoints with what they subscribe to (the outbox's lookup). */
export async function subscriptions(
  db: Kysely<Database>,
  projectId: string,
): Promise<Array<{ id: string; eventTypes: readonly string[] }>> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'event_types'])
    .where('project_id', '=', projectId)
    .execute();
  return rows.map((r) => ({ id: r.id, eventTypes: eventTypes(r.event_types) }));
}
