import type { Transaction } from 'kysely';
import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';
import { together, type Write } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';
import { TurnBatch } from '../../db/turn-batch.js';
import { isDatabaseUnavailable } from '../../db/unavailable.js';
import { Pending } from '../../pending.js';
import { currentActor } from '../console/actor.js';
import type { EventFilter } from './audit.repository.js';
import * as auditRepository from './audit.repository.js';
import type { AuditEvent, AuditEventType, RecordedEvent, StoredEvent } from './events.js';

/**
 * Where recorded events go on to (the webhooks). `targets` runs before the event's transaction
 * (it may read, cached); `queue` runs inside it, so an event and its deliveries are stored
 * together or not at all. `queue` may only run statements: on SQLite any other wait inside a
 * transaction holds up every request.
 */
export interface AuditOutbox<T> {
  targets(event: Pick<RecordedEvent, 'projectId' | 'type'>): Promise<T[]>;
  queue(trx: Transaction<Database>, event: RecordedEvent, targets: T[]): Promise<void>;
  /** Called after deliveries were committed (e.g. to send them now). */
  queued?(): void;
}

/** An event as GET /v1/audit answers it. */
export function eventView(event: StoredEvent) {
  return {
    event_id: event.id,
    type: event.type,
    user_id: event.userId,
    data: event.data,
    created_at: new Date(event.createdAt).toISOString(),
  };
}

/**
 * The event with the console member who caused it (issue 33), when a console request is being
 * served: `data.actor` names their console user id, identifier and role.
 */
function withActor(event: AuditEvent): AuditEvent {
  const actor = currentActor();
  if (!actor) return event;
  return { ...event, data: { ...(event.data ?? {}), actor: { ...actor } } } as unknown as AuditEvent;
}

/**
 * Records security events; a failure to record is logged, never fails the request. Callers await
 * `record` where the event must be stored before the answer goes out; `drain` waits for the rest.
 */
export class AuditLog {
  #listeners: Array<(event: RecordedEvent) => void> = [];
  // The target type is the outbox's own business: it gets back what its `targets` returned.
  #outbox: AuditOutbox<unknown> | undefined;
  readonly #inFlight = new Pending();
  /**
   * PostgreSQL: the events `record` stores on their own (no webhook takes them) in the same turn
   * of the event loop go in one statement.
   */
  readonly #events = new TurnBatch<RecordedEvent, void>({
    max: 64,
    onBatchFailed: (error, size) => this.onBatchFailed?.(error, size),
    many: async (events) => {
      await auditRepository.insertMany(this.db.kysely, events);
      return events.map(() => undefined);
    },
    alone: (event) => auditRepository.insert(this.db.kysely, event),
  });

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = Date.now,
    /** A batch of events failed as a whole and its events are being stored one by one (TurnBatch). */
    private readonly onBatchFailed?: (error: unknown, size: number) => void,
  ) {}

  /**
   * Called for every event once its recording has finished, whether or not it was stored: the
   * metrics count what happened, not what the audit table holds.
   */
  subscribe(listener: (event: RecordedEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** Stores every event's deliveries with the event itself (the webhooks). */
  setOutbox<T>(outbox: AuditOutbox<T>): void {
    this.#outbox = outbox;
  }

  /** Deletes events older than the retention period. */
  prune(before: number): Promise<void> {
    return auditRepository.prune(this.db.kysely, before);
  }

  /** A project's events for GET /v1/audit, newest first, with the cursor of the next page. */
  async search(projectId: string, filter: EventFilter) {
    const { events, more } = await auditRepository.page(this.db.kysely, projectId, filter);
    return {
      events: events.map(eventView),
      next_before: more ? events[events.length - 1]!.id : null,
    };
  }

  record(event: AuditEvent): Promise<void> {
    return this.#inFlight.track(this.#record(withActor(event)));
  }

  /**
   * The event stamped (id, time) for the caller to store in its own statement, or undefined when
   * it must go through `record`: on SQLite, where separate statements are cheap (its driver commits
   * concurrent writes together), and when webhook endpoints take the event (their deliveries are
   * queued in the event's own transaction by the outbox). PostgreSQL then saves the event's round
   * trip and its commit. Once the caller's statement is committed it calls `stored`; an event it
   * did not store (the write did not happen) is simply dropped.
   */
  async inline(event: AuditEvent): Promise<RecordedEvent | undefined> {
    const stamp = await this.inlineStamp(event.projectId, event.type);
    return stamp && { ...withActor(event), ...stamp };
  }

  /**
   * `inline` for an event whose user and data the caller's statement itself finds (the refresh
   * grant's one statement): its id and time when the caller may store it, else undefined. The
   * caller then calls `stored` with the whole event, as it was written.
   */
  async inlineStamp(
    projectId: string,
    type: AuditEventType,
  ): Promise<{ id: string; createdAt: number } | undefined> {
    if (this.db.dialect !== 'postgres') return undefined;
    const stamp = { id: randomId('evt'), createdAt: this.now() };
    try {
      if (this.#outbox && (await this.#outbox.targets({ projectId, type })).length > 0) return undefined;
    } catch (error) {
      // A database that is away fails the caller now (503): its slow path would only wait for the
      // database again, statement after statement (a refresh grant took 13 s in a partition).
      if (isDatabaseUnavailable(error)) throw error;
      // `record` reads the targets again, and logs what fails.
      return undefined;
    }
    return stamp;
  }

  /** Tells the subscribers about an event from `inline` that the caller's statement stored. */
  stored(event: RecordedEvent): void {
    this.#notify(event);
  }

  /**
   * The event as writes for the caller's own statement where `inline` allows (PostgreSQL: no round
   * trip of its own), else recorded now and no writes. The caller calls `done` once its statement
   * has committed; if it never commits, the event was not stored.
   */
  async asWrites(event: AuditEvent): Promise<{ writes: Write[]; done(): void }> {
    const inline = await this.inline(event);
    if (!inline) {
      await this.record(event);
      return { writes: [], done: () => {} };
    }
    return { writes: [auditRepository.insertWrite(inline)], done: () => this.stored(inline) };
  }

  /**
   * Stores `writes` and records the event: in one statement with the event on PostgreSQL (when
   * `inline` allows), otherwise the event as `record` does it, then the writes in one transaction.
   * Unlike `record`, fails when the writes fail.
   */
  async recordWith(event: AuditEvent, writes: readonly Write[]): Promise<void> {
    const inline = await this.inline(event);
    if (inline) {
      await together(this.db.kysely, [...writes, auditRepository.insertWrite(inline)]);
      this.stored(inline);
      return;
    }
    await this.record(event);
    await together(this.db.kysely, writes);
  }

  /**
   * Tells the subscribers (the metrics) of an event without storing it or queueing its webhooks:
   * for what strangers can cause at will and that names nothing of the project's (see
   * SignInService.recordFailure).
   */
  observe(event: AuditEvent): void {
    this.#notify(this.#stamp(event));
  }

  /** Whether an event of this type naming this user is stored (an indexed read). */
  has(projectId: string, userId: string, type: AuditEventType): Promise<boolean> {
    return auditRepository.has(this.db.kysely, projectId, userId, type);
  }

  /** Waits for every event being recorded (shutdown). */
  drain(): Promise<void> {
    return this.#inFlight.drain();
  }

  #stamp(event: AuditEvent): RecordedEvent {
    return { ...event, id: randomId('evt'), createdAt: this.now() };
  }

  async #record(event: AuditEvent): Promise<void> {
    const recorded = this.#stamp(event);
    try {
      const outbox = this.#outbox;
      const targets = outbox ? await outbox.targets(recorded) : [];
      if (outbox && targets.length > 0) {
        await this.db.kysely.transaction().execute(async (trx) => {
          await auditRepository.insert(trx, recorded);
          await outbox.queue(trx, recorded, targets);
        });
        outbox.queued?.();
      } else if (this.db.dialect === 'postgres') {
        await this.#events.add(recorded);
      } else {
        await auditRepository.insert(this.db.kysely, recorded);
      }
    } catch (error) {
      this.onError(error);
    }
    this.#notify(recorded);
  }

  #notify(recorded: RecordedEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(recorded);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}
