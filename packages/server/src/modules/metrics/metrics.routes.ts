import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import type { AppContext } from '../../app.js';
import { safeEqual } from '../../crypto/hash.js';
import { TesseraError } from '../../errors.js';

/** GET /metrics for Prometheus; with TESSERA_METRICS_TOKEN set, a Bearer token is required. */
export function metricsRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const token = ctx.config.metricsToken;
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (token && !safeEqual(request.headers.authorization ?? '', `Bearer ${token}`)) {
        throw new TesseraError(401, ErrorCodes.unauthorized, 'the metrics token is required', {
          headers: { 'www-authenticate': 'Bearer realm="metrics"' },
        });
      }
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    });
  };
}
