import type { Transaction } from 'kysely';
import { randomId } from '../../crypto/random.js';
import type { Database } from '../../db/schema.js';
import type { AuditOutbox } from '../audit/audit.service.js';
import type { RecordedEvent } from '../audit/events.js';
import type { WebhookEndpoints } from './webhooks.endpoints.js';
import * as webhooksRepository from './webhooks.repository.js';

/** The body of a webhook: Standard Webhooks' `type`, `timestamp`, `data` (the event's id and user first). */
export function webhookPayload(event: RecordedEvent): string {
  return JSON.stringify({
    type: event.type,
    timestamp: new Date(event.createdAt).toISOString(),
    data: { event_id: event.id, user_id: event.userId ?? null, ...event.data },
  });
}

/**
 * The audit log's outbox: an event's deliveries, one per subscribed endpoint, are inserted in the
 * transaction that inserts the event, so neither is ever stored without the other; the
 * dispatcher sends them after the commit.
 */
export class WebhookOutbox implements AuditOutbox<string> {
  constructor(
    private readonly endpoints: Pick<WebhookEndpoints, 'subscribedTo'>,
    /** Told when deliveries were committed (a running dispatcher sends them now). */
    private readonly onQueued: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The endpoints subscribed to the event's type (read before the transaction, cached). */
  targets(event: Pick<RecordedEvent, 'projectId' | 'type'>): Promise<string[]> {
    return this.endpoints.subscribedTo(event.projectId, event.type);
  }

  /** Queues the event's deliveries, inside the transaction that records the event. */
  async queue(trx: Transaction<Database>, event: RecordedEvent, endpointIds: string[]): Promise<void> {
    const payload = webhookPayload(event);
    const now = this.now();
    await webhooksRepository.insertDeliveries(
      trx,
      endpointIds.map((endpointId) => ({
        id: randomId('msg'),
        endpoint_id: endpointId,
        project_id: event.projectId,
        event_type: event.type,
        payload,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        locked_until: null,
        last_status_code: null,
        last_error: null,
        created_at: now,
        delivered_at: null,
      })),
    );
  }

  queued(): void {
    this.onQueued();
  }
}
