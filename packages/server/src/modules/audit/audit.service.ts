import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';

export interface AuditEvent {
  projectId: string;
  userId?: string | null;
  /** e.g. signin.succeeded, signin.failed, otp.sent, refresh.reuse_detected, device.added */
  type: string;
  /** No secrets, no identifiers: method, reason, ids the integrator already has. */
  data?: Record<string, string | number | boolean | null>;
  ip?: string | null;
}

/** Records security events; a failure to record is logged, never fails the request. */
export class AuditLog {
  #listeners: Array<(event: AuditEvent & { id: string; createdAt: number }) => void> = [];

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Called for every recorded event (webhooks, metrics). */
  subscribe(listener: (event: AuditEvent & { id: string; createdAt: number }) => void): void {
    this.#listeners.push(listener);
  }

  /** Deletes events older than the retention period. */
  async prune(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('audit_events').where('created_at', '<', before).execute();
  }

  async record(event: AuditEvent): Promise<void> {
    const id = randomId('evt');
    const createdAt = this.now();
    try {
      await this.db.kysely
        .insertInto('audit_events')
        .values({
          id,
          project_id: event.projectId,
          user_id: event.userId ?? null,
          type: event.type,
          data: JSON.stringify(event.data ?? {}),
          ip: event.ip ?? null,
          created_at: createdAt,
        })
        .execute();
      for (const listener of this.#listeners) listener({ ...event, id, createdAt });
    } catch (error) {
      this.onError(error);
    }
  }
}
