import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { devRoutes } from '../modules/dev/dev.routes.js';
import { docsRoutes } from '../modules/docs/docs.routes.js';
import { metricsRoutes } from '../modules/metrics/metrics.routes.js';
import { problemErrorHandler } from '../plugins/error-handler.js';
import { documentErrors } from './openapi.js';

/**
 * The operations family: Prometheus metrics (Bearer metrics token; in production none without
 * one), the OpenAPI document and its page, and in development the code outbox and demo page.
 * Problem documents; no CORS.
 */
export function operationsFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    scope.addHook('onRoute', documentErrors('problem'));
    await scope.register(
      metricsRoutes({
        metrics: ctx.metrics,
        token: ctx.config.metricsToken,
        production: ctx.config.env === 'production',
      }),
    );
    await scope.register(docsRoutes());
    if (ctx.config.delivery.mode === 'dev') {
      await scope.register(
        devRoutes({
          delivery: ctx.delivery,
          projects: ctx.projects,
          issuer: ctx.config.issuer,
          demoApiUrl: ctx.config.demoApiUrl,
        }),
      );
    }
  };
}
