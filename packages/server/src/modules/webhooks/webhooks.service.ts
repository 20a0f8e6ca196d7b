import { randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { ErrorCodes } from '@tessera/core';
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import { open, seal } from '../../crypto/master-key.js';
import { randomId } from '../../crypto/random.js';
import type { Db } from '../../db/connect.js';
import type { Database, Project, WebhookDelivery, WebhookEndpoint } from '../../db/schema.js';
import { badRequest, notFound } from '../../errors.js';
import type { AuditOutbox, RecordedEvent } from '../audit/audit.service.js';
import { signWebhook } from './signature.js';

/** Event types an endpoint may subscribe to (`*` for all). */
export const WEBHOOK_EVENT_TYPES = [
  'signin.succeeded',
  'signin.failed',
  'otp.sent',
  'refresh',
  'refresh.reuse_detected',
  'session.revoked',
  'pin.set',
  'pin.changed',
  'pin.removed',
  'pin.locked',
  'pin.unlocked',
  'device.added',
  'device.removed',
  'passkey.added',
  'passkey.removed',
  'claims.changed',
  'user.updated',
  'user.deleted',
  'key.rotated',
  'project.secret_rotated',
] as const;

export interface WebhookOptions {
  /** Seconds to wait before each retry; the delivery fails after the last. */
  backoff: number[];
  timeoutMs: number;
  allowHttp: boolean;
}

const LOCK_MS = 60_000;
/**
 * How long an instance trusts its list of a project's endpoints. Every audit event needs it, so
 * it is not read per event; an endpoint added or removed on another instance is seen there
 * within this time (on the same instance at once).
 */
export const ENDPOINT_CACHE_MS = 1000;

/** Addresses a production webhook may not target: loopback, private, link-local, shared. */
const INTERNAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  INTERNAL.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['::', 128],
] as const)
  INTERNAL.addSubnet(net, bits, 'ipv6');

/** True for `localhost` names and internal address literals (a guard against SSRF through webhooks). */
export function isInternalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  return family !== 0 && INTERNAL.check(host, family === 4 ? 'ipv4' : 'ipv6');
}
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function endpointView(e: WebhookEndpoint) {
  return {
    webhook_id: e.id,
    url: e.url,
    event_types: JSON.parse(e.event_types) as string[],
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

/**
 * Webhooks: endpoints per project, deliveries queued durably in the database and sent by a
 * worker that claims each with a conditional update, so several instances share the queue and
 * a restart loses nothing. Signed per Standard Webhooks.
 */
export class WebhooksService implements AuditOutbox<string> {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #listeners: Array<(outcome: 'delivered' | 'retry' | 'failed') => void> = [];
  #endpoints = new Map<string, { until: number; endpoints: Array<{ id: string; types: Set<string> }> }>();

  constructor(
    private readonly db: Db,
    private readonly secretKey: Buffer,
    private readonly options: WebhookOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  onDelivery(listener: (outcome: 'delivered' | 'retry' | 'failed') => void): void {
    this.#listeners.push(listener);
  }

  async create(project: Project, input: { url: string; event_types?: string[] }) {
    let url: URL;
    try {
      url = new URL(input.url);
    } catch {
      throw badRequest('url is not a URL');
    }
    if (url.protocol !== 'https:' && !(this.options.allowHttp && url.protocol === 'http:')) {
      throw badRequest('webhook URLs must use https');
    }
    if (url.username || url.password) throw badRequest('webhook URLs must not contain credentials');
    if (!this.options.allowHttp && isInternalHost(url.hostname)) {
      throw badRequest('webhook URLs may not point at loopback, private or link-local addresses');
    }
    const types = input.event_types?.length ? [...new Set(input.event_types)] : ['*'];
    for (const type of types) {
      if (type !== '*' && !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type)) {
        throw badRequest(
          `unknown event type "${type.slice(0, 60)}"; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
        );
      }
    }
    const id = randomId('wh');
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const endpoint: WebhookEndpoint = {
      id,
      project_id: project.id,
      url: url.toString(),
      secret_enc: seal(this.secretKey, secret, id),
      event_types: JSON.stringify(types),
      created_at: this.now(),
      last_status: null,
      last_attempt_at: null,
    };
    await this.db.kysely.insertInto('webhook_endpoints').values(endpoint).execute();
    this.#endpoints.delete(project.id);
    return { ...endpointView(endpoint), secret };
  }

  async list(project: Project) {
    const rows = await this.db.kysely
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('project_id', '=', project.id)
      .orderBy('created_at', 'asc')
      .execute();
    return rows.map(endpointView);
  }

  async #require(project: Project, id: string): Promise<WebhookEndpoint> {
    const row = await this.db.kysely
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', project.id)
      .executeTakeFirst();
    if (!row) throw notFound('no such webhook endpoint', ErrorCodes.notFound);
    return row;
  }

  async get(project: Project, id: string) {
    return endpointView(await this.#require(project, id));
  }

  async remove(project: Project, id: string): Promise<void> {
    await this.#require(project, id);
    await this.db.kysely.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    this.#endpoints.delete(project.id);
  }

  async deliveries(project: Project, id: string, limit = 50) {
    await this.#require(project, id);
    const rows = await this.db.kysely
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', id)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map(deliveryView);
  }

  /** The endpoints of a project subscribed to an event's type (cached, see ENDPOINT_CACHE_MS). */
  async targets(event: RecordedEvent): Promise<string[]> {
    let cached = this.#endpoints.get(event.projectId);
    if (!cached || cached.until <= this.now()) {
      const rows = await this.db.kysely
        .selectFrom('webhook_endpoints')
        .select(['id', 'event_types'])
        .where('project_id', '=', event.projectId)
        .execute();
      cached = {
        until: this.now() + ENDPOINT_CACHE_MS,
        endpoints: rows.map((r) => ({ id: r.id, types: new Set(JSON.parse(r.event_types) as string[]) })),
      };
      if (this.#endpoints.size >= 10_000) this.#endpoints.clear();
      this.#endpoints.set(event.projectId, cached);
    }
    return cached.endpoints.filter((e) => e.types.has('*') || e.types.has(event.type)).map((e) => e.id);
  }

  /** Queues an audit event's deliveries, inside the transaction that records the event. */
  async queue(trx: Transaction<Database>, event: RecordedEvent, endpointIds: string[]): Promise<void> {
    const payload = JSON.stringify({
      type: event.type,
      timestamp: new Date(event.createdAt).toISOString(),
      data: { event_id: event.id, user_id: event.userId ?? null, ...event.data },
    });
    const now = this.now();
    await trx
      .insertInto('webhook_deliveries')
      .values(
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
      )
      .execute();
  }

  /** Deliveries were committed: a running worker sends them now (a CLI process has none). */
  queued(): void {
    if (this.#timer) this.kick();
  }

  /** Polls the queue every second until stop(). */
  start(intervalMs = 1000): void {
    this.#timer = setInterval(() => this.kick(), intervalMs);
    this.#timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Runs one pass over due deliveries unless one is under way. */
  kick(): void {
    if (this.#running) return;
    this.#running = this.runOnce()
      .catch((err) => this.logger.warn({ err }, 'webhook worker pass failed'))
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Claims and sends the deliveries that are due; returns how many were attempted. */
  async runOnce(): Promise<void> {
    const now = this.now();
    const due = await this.db.kysely
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .orderBy('next_attempt_at', 'asc')
      .limit(20)
      .execute();
    await Promise.all(due.map((d) => this.#attempt(d.id, now)));
  }

  async #attempt(id: string, now: number): Promise<void> {
    const claimed = await this.db.kysely
      .updateTable('webhook_deliveries')
      .set({ locked_until: now + LOCK_MS })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .returningAll()
      .executeTakeFirst();
    if (!claimed) return;
    const endpoint = await this.db.kysely
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', claimed.endpoint_id)
      .executeTakeFirst();
    if (!endpoint) return;
    const timestamp = Math.floor(this.now() / 1000);
    const secret = open(this.secretKey, endpoint.secret_enc, endpoint.id);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const response = await fetch(endpoint.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.options.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tessera-Webhooks/1',
          'webhook-id': claimed.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(secret, claimed.id, timestamp, claimed.payload),
        },
        body: claimed.payload,
      });
      status = response.status;
      await response.body?.cancel().catch(() => {});
      if (status < 200 || status >= 300) error = `endpoint answered ${status}`;
    } catch (e) {
      error = e instanceof Error && e.name === 'TimeoutError' ? 'timed out' : 'connection failed';
    }
    const attempts = claimed.attempts + 1;
    const finishedAt = this.now();
    let outcome: 'delivered' | 'retry' | 'failed';
    if (error === null) {
      outcome = 'delivered';
      await this.db.kysely
        .updateTable('webhook_deliveries')
        .set({
          status: 'delivered',
          attempts,
          delivered_at: finishedAt,
          last_status_code: status,
          last_error: null,
          locked_until: null,
        })
        .where('id', '=', claimed.id)
        .execute();
    } else {
      const wait = this.options.backoff[attempts - 1];
      outcome = wait === undefined ? 'failed' : 'retry';
      await this.db.kysely
        .updateTable('webhook_deliveries')
        .set({
          status: outcome === 'failed' ? 'failed' : 'pending',
          attempts,
          next_attempt_at: finishedAt + (wait ?? 0) * 1000,
          last_status_code: status,
          last_error: error,
          locked_until: null,
        })
        .where('id', '=', claimed.id)
        .execute();
    }
    await this.db.kysely
      .updateTable('webhook_endpoints')
      .set({
        last_status:
          error === null
            ? `delivered (${status})`
            : `${outcome === 'failed' ? 'failed' : 'retrying'}: ${error}`,
        last_attempt_at: finishedAt,
      })
      .where('id', '=', endpoint.id)
      .execute();
    for (const listener of this.#listeners) listener(outcome);
  }

  /** Deletes finished deliveries older than `before`. */
  async prune(before: number): Promise<void> {
    await this.db.kysely
      .deleteFrom('webhook_deliveries')
      .where('status', '!=', 'pending')
      .where('created_at', '<', before)
      .execute();
  }
}
