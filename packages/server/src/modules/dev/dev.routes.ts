import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../app.js';
import { DevOutbox } from '../otp/delivery/index.js';

/** Development only (TESSERA_DELIVERY=dev): the codes that would have been sent. */
export function devRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const outbox = ctx.delivery;
    if (!(outbox instanceof DevOutbox)) return;
    app.get('/dev/outbox', async (_request, reply) =>
      reply.header('cache-control', 'no-store').send(outbox.list()),
    );
  };
}
