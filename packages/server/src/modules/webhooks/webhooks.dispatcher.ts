import type { Logger } from 'pino';
import { open } from '../../crypto/master-key.js';
import type { Db } from '../../db/connect.js';
import { RateLimiter } from '../../plugins/rate-limiter.js';
import { signWebhook } from './signature.js';
import { type Attempt, postWebhook } from './webhooks.http.js';
import type { WebhookDelivery, WebhookEndpoint } from './webhooks.repository.js';
import * as webhooksRepository from './webhooks.repository.js';

/** What became of a delivery this pass; `deferred`: held back by the project's delivery rate, no attempt made. */
export type DeliveryOutcome = 'delivered' | 'retry' | 'failed' | 'deferred';

export interface DispatcherOptions {
  /** Seconds to wait before each retry; the delivery fails after the last. */
  backoff: number[];
  timeoutMs: number;
  /** Loopback, private and link-local targets may be reached (development and tests). */
  allowPrivate: boolean;
  /** Delivery attempts per project per minute, all instances together; the excess waits for the next minute. */
  deliveriesPerMinute: number;
}

/** How long a worker's claim on a delivery lasts; a crashed worker's deliveries are retried after it. */
const LOCK_MS = 60_000;
/** Deliveries claimed per pass. */
const BATCH = 20;

/**
 * The delivery worker: polls the queue, claims each due delivery with a conditional update (so
 * several instances share the queue and a restart loses nothing), sends it signed per Standard
 * Webhooks, and retries failures with the configured backoff. A project's attempts are capped per
 * minute (a project whose events outrun the cap waits; its deliveries are deferred, never
 * dropped), so one project cannot monopolise the worker or turn it against a receiver.
 */
export class WebhookDispatcher {
  #timer: NodeJS.Timeout | undefined;
  readonly #rate: RateLimiter;
  #running: Promise<void> | undefined;
  #listeners: Array<(outcome: DeliveryOutcome) => void> = [];

  constructor(
    private readonly db: Db,
    private readonly secretKey: Buffer,
    private readonly options: DispatcherOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.#rate = new RateLimiter(db, now);
  }

  /** Called after every attempt, and for every deferred delivery, with its outcome (metrics). */
  onDelivery(listener: (outcome: DeliveryOutcome) => void): void {
    this.#listeners.push(listener);
  }

  /** Polls the queue every `intervalMs` until stop(). */
  start(intervalMs = 1000): void {
    this.#timer = setInterval(() => this.kick(), intervalMs);
    this.#timer.unref();
    this.kick();
  }

  /** Stops polling and waits for the pass under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Deliveries were committed: a started worker sends them now (a CLI process has none). */
  queued(): void {
    if (this.#timer) this.kick();
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

  /** Claims and sends the deliveries that are due. */
  async runOnce(): Promise<void> {
    const now = this.now();
    const due = await webhooksRepository.dueDeliveries(this.db.kysely, now, BATCH);
    await Promise.all(due.map((id) => this.#deliver(id, now)));
  }

  /** Deletes finished deliveries older than `before`. */
  prune(before: number): Promise<void> {
    return webhooksRepository.pruneDeliveries(this.db.kysely, before);
  }

  async #deliver(id: string, now: number): Promise<void> {
    const delivery = await webhooksRepository.claimDelivery(this.db.kysely, id, now, now + LOCK_MS);
    if (!delivery) return;
    const endpoint = await webhooksRepository.findEndpoint(this.db.kysely, delivery.endpoint_id);
    if (!endpoint) return;
    if (await this.#deferred(delivery, now)) return;
    const attempt = await this.#send(endpoint, delivery);
    this.#emit(await this.#settle(endpoint, delivery, attempt));
  }

  #emit(outcome: DeliveryOutcome, times = 1): void {
    for (let i = 0; i < times; i++) for (const listener of this.#listeners) listener(outcome);
  }

  /**
   * Counts the attempt against the project's rate; over it, puts this delivery and the project's
   * other due ones off to the end of the window in one statement (so a backlog is not claimed
   * and put back one by one) and says so.
   */
  async #deferred(delivery: WebhookDelivery, now: number): Promise<boolean> {
    const rule = { limit: this.options.deliveriesPerMinute, window: 60 };
    const rate = await this.#rate.hit('webhook-deliveries', delivery.project_id, rule);
    if (rate.allowed) return false;
    const until = now + rate.retryAfter * 1000;
    const count = await webhooksRepository.deferProjectDeliveries(
      this.db.kysely,
      delivery.project_id,
      delivery.id,
      now,
      until,
    );
    this.logger.warn(
      { projectId: delivery.project_id, deferred: count, until: new Date(until).toISOString() },
      'webhook deliveries deferred: project over its delivery rate',
    );
    this.#emit('deferred', count);
    return true;
  }

  /** One signed POST to a public address (unless private ones are allowed); redirects are not followed. */
  #send(endpoint: WebhookEndpoint, delivery: WebhookDelivery): Promise<Attempt> {
    const timestamp = Math.floor(this.now() / 1000);
    const secret = open(this.secretKey, endpoint.secret_enc, endpoint.id);
    return postWebhook(endpoint.url, {
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Tessera-Webhooks/1',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(secret, delivery.id, timestamp, delivery.payload),
      },
      body: delivery.payload,
      timeoutMs: this.options.timeoutMs,
      allowPrivate: this.options.allowPrivate,
    });
  }

  /** Stores the attempt's result on the delivery (retry per the backoff, or give up) and on the endpoint. */
  async #settle(
    endpoint: WebhookEndpoint,
    delivery: WebhookDelivery,
    { status, error }: Attempt,
  ): Promise<DeliveryOutcome> {
    const attempts = delivery.attempts + 1;
    const at = this.now();
    let outcome: DeliveryOutcome;
    if (error === null) {
      outcome = 'delivered';
      await webhooksRepository.markDelivered(this.db.kysely, delivery.id, {
        attempts,
        statusCode: status,
        at,
      });
    } else {
      const wait = this.options.backoff[attempts - 1];
      outcome = wait === undefined ? 'failed' : 'retry';
      await webhooksRepository.markFailedAttempt(this.db.kysely, delivery.id, {
        status: outcome === 'failed' ? 'failed' : 'pending',
        attempts,
        nextAttemptAt: at + (wait ?? 0) * 1000,
        statusCode: status,
        error,
      });
    }
    const summary =
      error === null ? `delivered (${status})` : `${outcome === 'failed' ? 'failed' : 'retrying'}: ${error}`;
    await webhooksRepository.setEndpointStatus(this.db.kysely, endpoint.id, summary, at);
    return outcome;
  }
}
