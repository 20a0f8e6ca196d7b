import { randomBytes } from 'node:crypto';
import { ErrorCodes } from '@tessera/core';
import { seal } from '../../crypto/master-key.js';
import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';
import { badRequest, notFound, TesseraError } from '../../errors.js';
import { AUDIT_EVENT_TYPES, isAuditEventType } from '../audit/events.js';
import type { Project } from '../projects/project.js';
import { isInternalHost } from './address-policy.js';
import type { WebhookDelivery, WebhookEndpoint } from './webhooks.repository.js';
import * as webhooksRepository from './webhooks.repository.js';

/**
 * How long an instance trusts its list of a project's endpoints. Every audit event needs it, so
 * it is not read per event; an endpoint added or removed on another instance is seen there
 * within this time (on the same instance at once).
 */
export const ENDPOINT_CACHE_MS = 1000;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function endpointView(e: WebhookEndpoint) {
  return {
    webhook_id: e.id,
    url: e.url,
    event_types: e.event_types,
    created_at: iso(e.created_at),
    last_status: e.last_status,
    last_attempt_at: iso(e.last_attempt_at),
  };
}

function deliveryView(d: WebhookDelivery) {
  return {
    delivery_id: d.id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    created_at: iso(d.created_at),
    delivered_at: iso(d.delivered_at),
  };
}

export interface EndpointRules {
  /** http:// URLs are accepted (development and tests). */
  allowHttp: boolean;
  /** Loopback, private and link-local hosts are accepted (TESSERA_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Endpoints per project. */
  maxEndpoints: number;
}

/**
 * The endpoint's URL, or a 400 saying why it may not receive webhooks. A host internal on its
 * face is refused here; a name is judged again by what it resolves to at every delivery.
 */
function checkUrl(raw: string, { allowHttp, allowPrivate }: EndpointRules): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('url is not a URL');
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    throw badRequest('webhook URLs must use https');
  }
  if (url.username || url.password) throw badRequest('webhook URLs must not contain credentials');
  if (!allowPrivate && isInternalHost(url.hostname)) {
    throw badRequest('webhook URLs may not point at loopback, private or link-local addresses');
  }
  return url;
}

/** The subscribed event types, deduplicated (`*` when none are given), or a 400 naming an unknown one. */
function checkEventTypes(types: string[] | undefined): string[] {
  const unique = types?.length ? [...new Set(types)] : ['*'];
  for (const type of unique) {
    if (type !== '*' && !isAuditEventType(type)) {
      throw badRequest(`unknown event type "${type.slice(0, 60)}"; known: ${AUDIT_EVENT_TYPES.join(', ')}`);
    }
  }
  return unique;
}

/**
 * A project's webhook endpoints: created with a signing secret (sealed at rest, shown once),
 * listed, removed; and, for the outbox, which of them an event goes to.
 */
export class WebhookEndpoints {
  #subscriptions = new Map<
    string,
    { until: number; endpoints: Promise<Array<{ id: string; types: ReadonlySet<string> }>> }
  >();

  constructor(
    private readonly db: Db,
    private readonly secretKey: Buffer,
    private readonly rules: EndpointRules,
    private readonly now: () => number = Date.now,
  ) {}

  async create(project: Project, input: { url: string; event_types?: string[] }) {
    const url = checkUrl(input.url, this.rules);
    const types = checkEventTypes(input.event_types);
    // Checked before the insert: parallel creations can overshoot by the few that race.
    if ((await webhooksRepository.countEndpoints(this.db.kysely, project.id)) >= this.rules.maxEndpoints) {
      throw new TesseraError(
        409,
        ErrorCodes.conflict,
        `a project may have at most ${this.rules.maxEndpoints} webhook endpoints; delete one first`,
      );
    }
    const id = randomId('wh');
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const endpoint: WebhookEndpoint = {
      id,
      project_id: project.id,
      url: url.toString(),
      secret_enc: seal(this.secretKey, secret, id),
      event_types: types,
      created_at: this.now(),
      last_status: null,
      last_attempt_at: null,
    };
    await webhooksRepository.insertEndpoint(this.db.kysely, endpoint);
    this.#subscriptions.delete(project.id);
    return { ...endpointView(endpoint), secret };
  }

  async list(project: Project) {
    return (await webhooksRepository.listEndpoints(this.db.kysely, project.id)).map(endpointView);
  }

  async get(project: Project, id: string) {
    return endpointView(await this.#require(project, id));
  }

  async remove(project: Project, id: string): Promise<void> {
    if (!(await webhooksRepository.deleteEndpoint(this.db.kysely, project.id, id))) throw this.#notFound();
    this.#subscriptions.delete(project.id);
  }

  async deliveries(project: Project, id: string, limit = 50) {
    await this.#require(project, id);
    return (await webhooksRepository.listDeliveries(this.db.kysely, id, limit)).map(deliveryView);
  }

  /**
   * Sends a delivery again (issue 33): a new pending delivery to the same endpoint with the same
   * body (the event's id in it lets the receiver tell it is the same event), sent at once.
   */
  async redeliver(project: Project, id: string, deliveryId: string) {
    await this.#require(project, id);
    const original = await webhooksRepository.findDelivery(this.db.kysely, id, deliveryId);
    if (!original) throw notFound('no such delivery of this webhook endpoint', ErrorCodes.notFound);
    return this.#queue(project, id, original.event_type, original.payload);
  }

  /**
   * A test event (`webhook.test`) to one endpoint, signed and retried as any delivery: its data
   * carries a fresh event id, no user, and `test: true`.
   */
  async test(project: Project, id: string) {
    await this.#require(project, id);
    const payload = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date(this.now()).toISOString(),
      data: { event_id: randomId('evt'), user_id: null, test: true },
    });
    return this.#queue(project, id, 'webhook.test', payload);
  }

  async #queue(project: Project, endpointId: string, eventType: string, payload: string) {
    const now = this.now();
    const delivery: WebhookDelivery = {
      id: randomId('msg'),
      endpoint_id: endpointId,
      project_id: project.id,
      event_type: eventType,
      payload,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      locked_until: null,
      last_status_code: null,
      last_error: null,
      created_at: now,
      delivered_at: null,
    };
    await webhooksRepository.insertDeliveries(this.db.kysely, [delivery]);
    return deliveryView(delivery);
  }

  /** The ids of the project's endpoints that receive events of this type (cached, see ENDPOINT_CACHE_MS). */
  async subscribedTo(projectId: string, type: string): Promise<string[]> {
    let cached = this.#subscriptions.get(projectId);
    if (!cached || cached.until <= this.now()) {
      // The read itself is cached: the requests that find the list expired together share it,
      // instead of each reading it (one read per project and second, not one per request).
      const entry = {
        until: this.now() + ENDPOINT_CACHE_MS,
        endpoints: webhooksRepository
          .subscriptions(this.db.kysely, projectId)
          .then((rows) => rows.map((r) => ({ id: r.id, types: new Set(r.eventTypes) }))),
      };
      // A failed read is not kept: the next event reads again.
      entry.endpoints.catch(() => {
        if (this.#subscriptions.get(projectId) === entry) this.#subscriptions.delete(projectId);
      });
      if (this.#subscriptions.size >= 10_000) this.#subscriptions.clear();
      this.#subscriptions.set(projectId, entry);
      cached = entry;
    }
    return (await cached.endpoints).filter((e) => e.types.has('*') || e.types.has(type)).map((e) => e.id);
  }

  async #require(project: Project, id: string): Promise<WebhookEndpoint> {
    const endpoint = await webhooksRepository.findEndpoint(this.db.kysely, id, project.id);
    if (!endpoint) throw this.#notFound();
    return endpoint;
  }

  #notFound() {
    return notFound('no such webhook endpoint', ErrorCodes.notFound);
  }
}
