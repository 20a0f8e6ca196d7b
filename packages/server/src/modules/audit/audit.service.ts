import type { Kysely, Transaction } from 'kysely';
import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';
import { prepared } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';

export interface AuditEvent {
  projectId: string;
  userId?: string | null;
  /** e.g. signin.succeeded, signin.failed, otp.sent, refresh.reuse_detected, device.added */
  type: string;
  /** No secrets, no identifiers: method, reason, ids the integrator already has. */
  data?: Record<string, string | number | boolean | null>;
  ip?: string | null;
}

const insertEvent = prepared(
  (
    db,
    id: string,
    projectId: string,
    userId: string | null,
    type: string,
    data: string,
    ip: string | null,
    createdAt: number,
  ) =>
    db
      .insertInto('audit_events')
      .values({ id, project_id: projectId, user_id: userId, type, data, ip, created_at: createdAt }),
);

/** An audit event as recorded. */
export type RecordedEvent = AuditEvent & { id: string; createdAt: number };

/**
 * Where recorded events go on to (the webhooks). `targets` runs before the event's transaction
 * (it may read, cached); `queue` runs inside it, so an event and its deliveries are stored
 * together or not at all.
 */
export interface AuditOutbox<T> {
  targets(event: RecordedEvent): Promise<T[]>;
  queue(trx: Transaction<Database>, event: RecordedEvent, targets: T[]): Promise<void>;
  /** Called after deliveries were committed (e.g. to send them now). */
  queued?(): void;
}

/**
 * Records security events; a failure to record is logged, never fails the request. Callers await
 * `record` where the event must be stored before the answer goes out; `drain` waits for the rest.
 */
export class AuditLog {
  #listeners: Array<(event: RecordedEvent) => void> = [];
  // The target type is the outbox's own business: it gets back what its `targets` returned.
  #outbox: AuditOutbox<unknown> | undefined;
  #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Called for every recorded event (metrics). */
  subscribe(listener: (event: RecordedEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** Stores every event's deliveries with the event itself (the webhooks). */
  setOutbox<T>(outbox: AuditOutbox<T>): void {
    this.#outbox = outbox;
  }

  /** Deletes events older than the retention period. */
  async prune(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('audit_events').where('created_at', '<', before).execute();
  }

  record(event: AuditEvent): Promise<void> {
    const recording = this.#record(event);
    this.#inFlight.add(recording);
    void recording.finally(() => this.#inFlight.delete(recording));
    return recording;
  }

  /** Waits for every event being recorded (shutdown). */
  async drain(): Promise<void> {
    await Promise.all(this.#inFlight);
  }

  async #record(event: AuditEvent): Promise<void> {
    const recorded: RecordedEvent = { ...event, id: randomId('evt'), createdAt: this.now() };
    const insert = (db: Kysely<Database>) =>
      insertEvent(
        db,
        recorded.id,
        event.projectId,
        event.userId ?? null,
        event.type,
        JSON.stringify(event.data ?? {}),
        event.ip ?? null,
        recorded.createdAt,
      );
    try {
      const outbox = this.#outbox;
      const targets = outbox ? await outbox.targets(recorded) : [];
      if (outbox && targets.length > 0) {
        await this.db.kysely.transaction().execute(async (trx) => {
          await insert(trx);
          await outbox.queue(trx, recorded, targets);
        });
        outbox.queued?.();
      } else {
        await insert(this.db.kysely);
      }
      for (const listener of this.#listeners) listener(recorded);
    } catch (error) {
      this.onError(error);
    }
  }
}
