import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../app.js';

const Params = Type.Object({ webhook_id: Type.String({ minLength: 1, maxLength: 100 }) });

/** Webhook endpoints of a project (HTTP Basic with the API key secret). */
export function webhooksRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const preHandler = ctx.hooks.integrator;
    app.post(
      '/v1/webhooks',
      {
        schema: {
          body: Type.Object({
            url: Type.String({ minLength: 1, maxLength: 2048 }),
            event_types: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 })),
          }),
        },
        preHandler,
      },
      async (request, reply) =>
        reply.code(201).send(await ctx.webhooks.create(request.project, request.body)),
    );
    app.get('/v1/webhooks', { preHandler }, async (request) => ({
      webhooks: await ctx.webhooks.list(request.project),
    }));
    app.get('/v1/webhooks/:webhook_id', { schema: { params: Params }, preHandler }, async (request) =>
      ctx.webhooks.get(request.project, request.params.webhook_id),
    );
    app.delete(
      '/v1/webhooks/:webhook_id',
      { schema: { params: Params }, preHandler },
      async (request, reply) => {
        await ctx.webhooks.remove(request.project, request.params.webhook_id);
        return reply.code(204).send();
      },
    );
    app.get(
      '/v1/webhooks/:webhook_id/deliveries',
      { schema: { params: Params }, preHandler },
      async (request) => ({
        deliveries: await ctx.webhooks.deliveries(request.project, request.params.webhook_id),
      }),
    );
  };
}
