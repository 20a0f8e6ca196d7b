import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../db/connect.js';
import type { Database } from '../../db/schema.js';
import type { AuditOutbox } from '../audit/audit.service.js';
import type { RecordedEvent } from '../audit/events.js';
import type { Project } from '../projects/project.js';
import { type DeliveryOutcome, type DispatcherOptions, WebhookDispatcher } from './webhooks.dispatcher.js';
import { type EndpointRules, WebhookEndpoints } from './webhooks.endpoints.js';
import { WebhookOutbox } from './webhooks.outbox.js';

export interface WebhookOptions extends DispatcherOptions, EndpointRules {}

/**
 * The webhooks module as the rest of the server sees it: the endpoints (CRUD), the audit log's
 * outbox (an event and its deliveries are written in one transaction) and the dispatcher (the
 * delivery worker), built over one database and one secret key.
 */
export class WebhooksService implements AuditOutbox<string> {
  readonly endpoints: WebhookEndpoints;
  readonly outbox: WebhookOutbox;
  readonly dispatcher: WebhookDispatcher;

  constructor(
    db: Db,
    secretKey: Buffer,
    options: WebhookOptions,
    logger: Logger,
    now: () => number = Date.now,
  ) {
    this.endpoints = new WebhookEndpoints(db, secretKey, options, now);
    this.dispatcher = new WebhookDispatcher(db, secretKey, options, logger, now);
    this.outbox = new WebhookOutbox(this.endpoints, () => this.dispatcher.queued(), now);
  }

  create(project: Project, input: { url: string; event_types?: string[] }) {
    return this.endpoints.create(project, input);
  }

  list(project: Project) {
    return this.endpoints.list(project);
  }

  get(project: Project, id: string) {
    return this.endpoints.get(project, id);
  }

  remove(project: Project, id: string): Promise<void> {
    return this.endpoints.remove(project, id);
  }

  deliveries(project: Project, id: string) {
    return this.endpoints.deliveries(project, id);
  }

  /** Sends a delivery again, at once (a new delivery with the same body). */
  async redeliver(project: Project, id: string, deliveryId: string) {
    const delivery = await this.endpoints.redeliver(project, id, deliveryId);
    this.dispatcher.queued();
    return delivery;
  }

  /** Sends a `webhook.test` event to one endpoint, at once. */
  async test(project: Project, id: string) {
    const delivery = await this.endpoints.test(project, id);
    this.dispatcher.queued();
    return delivery;
  }

  targets(event: Pick<RecordedEvent, 'projectId' | 'type'>): Promise<string[]> {
    return this.outbox.targets(event);
  }

  queue(trx: Transaction<Database>, event: RecordedEvent, endpointIds: string[]): Promise<void> {
    return this.outbox.queue(trx, event, endpointIds);
  }

  queued(): void {
    this.outbox.queued();
  }

  onDelivery(listener: (outcome: DeliveryOutcome) => void): void {
    this.dispatcher.onDelivery(listener);
  }

  /** Starts the delivery worker (a server; the CLI only queues). */
  start(): void {
    this.dispatcher.start();
  }

  stop(): Promise<void> {
    return this.dispatcher.stop();
  }

  /** Deletes finished deliveries older than `before`. */
  prune(before: number): Promise<void> {
    return this.dispatcher.prune(before);
  }
}
