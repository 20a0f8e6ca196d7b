import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { WebhooksService } from './webhooks.service.js';

const Params = Type.Object({ webhook_id: Type.String({ minLength: 1, maxLength: 100 }) });

/** Webhook endpoints of a project (HTTP Basic with the API key secret). */
export function webhooksRoutes({ webhooks }: { webhooks: WebhooksService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/webhooks',
      {
        schema: {
          body: Type.Object({
            url: Type.String({ minLength: 1, maxLength: 2048 }),
            event_types: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 })),
          }),
        },
      },
      async (request, reply) => reply.code(201).send(await webhooks.create(request.project, request.body)),
    );
    app.get('/v1/webhooks', async (request) => ({
      webhooks: await webhooks.list(request.project),
    }));
    app.get('/v1/webhooks/:webhook_id', { schema: { params: Params } }, async (request) =>
      webhooks.get(request.project, request.params.webhook_id),
    );
    app.delete('/v1/webhooks/:webhook_id', { schema: { params: Params } }, async (request, reply) => {
      await webhooks.remove(request.project, request.params.webhook_id);
      return reply.code(204).send();
    });
    app.get('/v1/webhooks/:webhook_id/deliveries', { schema: { params: Params } }, async (request) => ({
      deliveries: await webhooks.deliveries(request.project, request.params.webhook_id),
    }));
  };
}
