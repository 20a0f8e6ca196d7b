import type { RequestBody, Result, Schema } from '../operation-types.js';
import { onePage, type Paginated } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';

/** A webhook endpoint of the project. */
export type Webhook = Schema<'Webhook'>;
/** The answer to creating an endpoint, with its signing `secret` (shown once). */
export type CreatedWebhook = Result<'createWebhook'>;
/** A delivery of an event to an endpoint, with its status and attempts. */
export type WebhookDelivery = Result<'listWebhookDeliveries'>['deliveries'][number];

/**
 * Webhook endpoints of the project and their deliveries.
 *
 * @example
 * ```ts
 * const { webhook_id, secret } = await admin.webhooks.create({ url: 'https://app.example/hooks/tessera' });
 * ```
 */
export class Webhooks {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  create(endpoint: RequestBody<'createWebhook'>, options?: CallOptions): Promise<CreatedWebhook> {
    return this.#t.call('createWebhook', { body: endpoint }, options);
  }

  list(options?: CallOptions): Paginated<Webhook, Result<'listWebhooks'>> {
    return onePage(
      () => this.#t.call('listWebhooks', {}, options),
      (page) => page.webhooks,
    );
  }

  get(webhookId: string, options?: CallOptions): Promise<Webhook> {
    return this.#t.call('getWebhook', { path: { webhook_id: webhookId } }, options);
  }

  async delete(webhookId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('deleteWebhook', { path: { webhook_id: webhookId } }, options);
  }

  /** Sends the delivery's event again, as a new delivery (with the same body), at once. */
  redeliver(webhookId: string, deliveryId: string, options?: CallOptions): Promise<WebhookDelivery> {
    return this.#t.call(
      'redeliverWebhook',
      { path: { webhook_id: webhookId, delivery_id: deliveryId } },
      options,
    );
  }

  /** Sends a `webhook.test` event to the endpoint, at once. */
  test(webhookId: string, options?: CallOptions): Promise<WebhookDelivery> {
    return this.#t.call('testWebhook', { path: { webhook_id: webhookId } }, options);
  }

  /** The endpoint's recent deliveries, newest first. */
  deliveries(
    webhookId: string,
    options?: CallOptions,
  ): Paginated<WebhookDelivery, Result<'listWebhookDeliveries'>> {
    return onePage(
      () => this.#t.call('listWebhookDeliveries', { path: { webhook_id: webhookId } }, options),
      (page) => page.deliveries,
    );
  }
}
