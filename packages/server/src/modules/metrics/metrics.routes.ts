import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import { safeEqual, sha256 } from '../../crypto/hash.js';
import { TesseraError } from '../../errors.js';
import type { Metrics } from './metrics.js';

/**
 * GET /metrics for Prometheus. With TESSERA_METRICS_TOKEN set, `Authorization: Bearer <token>` is
 * required (compared in constant time). Without a token, production serves no /metrics at all
 * (404, with a warning at start-up); development and test serve it openly.
 */
export function metricsRoutes(deps: {
  metrics: Metrics;
  token: string | undefined;
  production: boolean;
}): FastifyPluginAsyncTypebox {
  const { metrics, token, production } = deps;
  return async (app) => {
    if (!token && production) {
      app.log.warn(
        'GET /metrics is off: set TESSERA_METRICS_TOKEN and scrape with Authorization: Bearer <token> to turn it on',
      );
      return;
    }
    // Hashes compared, so neither the token's bytes nor its length show in the timing.
    const expected = token && sha256(`Bearer ${token}`);
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (expected && !safeEqual(sha256(request.headers.authorization ?? ''), expected)) {
        throw new TesseraError(401, ErrorCodes.unauthorized, 'the metrics token is required', {
          headers: { 'www-authenticate': 'Bearer realm="metrics"' },
        });
      }
      return reply.type(metrics.registry.contentType).send(await metrics.text());
    });
  };
}
