import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from '@sinclair/typebox';
import { ListOf, NoContent } from '../../http/openapi.js';
import { Webhook } from '../../http/schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const Params = Type.Object({ webhook_id: Type.String({ minLength: 1, maxLength: 100 }) });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: 'date-time' });
const Delivery = Type.Object({
  delivery_id: Type.String(),
  event_type: Type.String(),
  status: Type.String({ description: 'pending, delivered or failed' }),
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Time),
  created_at: Nullable(Time),
  delivered_at: Nullable(Time),
});
const Created = Type.Composite([
  Webhook,
  Type.Object({ secret: Type.String({ description: 'The signing secret, shown once' }) }),
]);
const tags = ['webhooks'];
const doc = (operationId: string, summary: string) => ({ operationId, summary, tags });

/** Webhook endpoints of a project (HTTP Basic with the API key secret). */
export function webhooksRoutes({ webhooks }: { webhooks: WebhooksService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/webhooks',
      {
        schema: {
          ...doc('createWebhook', 'Add a webhook endpoint (its signing secret is shown once)'),
          response: { 201: Created },
          body: Type.Object({
            url: Type.String({ minLength: 1, maxLength: 2048 }),
            event_types: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 })),
          }),
        },
      },
      async (request, reply) => reply.code(201).send(await webhooks.create(request.project, request.body)),
    );
    app.get(
      '/v1/webhooks',
      {
        schema: {
          ...doc('listWebhooks', 'List the webhook endpoints'),
          response: { 200: ListOf('webhooks', Type.Ref(Webhook)) },
        },
      },
      async (request) => ({
        webhooks: await webhooks.list(request.project),
      }),
    );
    app.get(
      '/v1/webhooks/:webhook_id',
      {
        schema: {
          ...doc('getWebhook', 'Show a webhook endpoint'),
          params: Params,
          response: { 200: Type.Ref(Webhook) },
        },
      },
      async (request) => webhooks.get(request.project, request.params.webhook_id),
    );
    app.delete(
      '/v1/webhooks/:webhook_id',
      {
        schema: {
          ...doc('deleteWebhook', 'Remove a webhook endpoint'),
          params: Params,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        await webhooks.remove(request.project, request.params.webhook_id);
        return reply.code(204).send();
      },
    );
    app.get(
      '/v1/webhooks/:webhook_id/deliveries',
      {
        schema: {
          ...doc('listWebhookDeliveries', 'Recent deliveries to a webhook endpoint'),
          params: Params,
          response: { 200: ListOf('deliveries', Delivery) },
        },
      },
      async (request) => ({
        deliveries: await webhooks.deliveries(request.project, request.params.webhook_id),
      }),
    );
    app.post(
      '/v1/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
      {
        schema: {
          ...doc('redeliverWebhook', 'Send a delivery again (a new delivery with the same body), now'),
          params: Type.Object({
            webhook_id: Type.String({ minLength: 1, maxLength: 100 }),
            delivery_id: Type.String({ minLength: 1, maxLength: 100 }),
          }),
          response: { 201: Delivery },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await webhooks.redeliver(request.project, request.params.webhook_id, request.params.delivery_id),
          ),
    );
    app.post(
      '/v1/webhooks/:webhook_id/test',
      {
        schema: {
          ...doc('testWebhook', 'Send a test event (webhook.test) to the endpoint, now'),
          params: Params,
          response: { 201: Delivery },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await webhooks.test(request.project, request.params.webhook_id)),
    );
  };
}
