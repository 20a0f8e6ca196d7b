import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { healthRoutes } from '../modules/health/health.routes.js';
import { brandingPublicRoutes } from '../modules/projects/branding.routes.js';
import { verifyRoutes } from '../modules/verify/verify.routes.js';
import { wellKnownRoutes } from '../modules/wellknown/wellknown.routes.js';
import { ANY_ORIGIN, corsHook, preflightRoutes } from '../plugins/cors.js';
import { problemErrorHandler, problemNotFound, verifyErrorHandler } from '../plugins/error-handler.js';
import { describeRoutes, documentErrors } from './openapi.js';
import { notFoundUnder } from './scope.js';

/**
 * The public family: no credential. `POST /verify`, the discovery documents and the sign-in UI's
 * branding answer any origin (CORS `*`); the health probes are for load balancers and orchestrators (no CORS).
 */
export function publicFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    // The hot path: its own error format, and only synchronous hooks.
    await scope.register(async (verify) => {
      verify.setErrorHandler(verifyErrorHandler);
      verify.addHook('onRoute', documentErrors('verify'));
      verify.addHook('onRequest', corsHook(ANY_ORIGIN));
      preflightRoutes(verify, ['/verify'], problemNotFound);
      await verify.register(verifyRoutes({ verify: ctx.verify }));
    });

    await scope.register(async (discovery) => {
      discovery.setErrorHandler(problemErrorHandler);
      discovery.addHook('onRoute', documentErrors('problem'));
      discovery.addHook('onRequest', corsHook(ANY_ORIGIN));
      preflightRoutes(discovery, ['/.well-known/*'], problemNotFound);
      await notFoundUnder(discovery, ['/.well-known/'], problemNotFound);
      await discovery.register(
        wellKnownRoutes({
          issuer: ctx.config.issuer,
          keys: ctx.keys,
          project: (apiKeyId) => ctx.projects.byApiKeyId(apiKeyId),
        }),
      );
    });

    // The sign-in UI's branding: any origin may read it (it is shown on any sign-in page).
    await scope.register(async (branding) => {
      branding.setErrorHandler(problemErrorHandler);
      branding.addHook('onRoute', documentErrors('problem'));
      branding.addHook('onRequest', corsHook(ANY_ORIGIN));
      preflightRoutes(branding, ['/v1/projects/*'], problemNotFound);
      const { delivery } = ctx.config;
      await branding.register(
        brandingPublicRoutes({
          projects: ctx.projects,
          sms: {
            enabled: delivery.mode === 'dev' || delivery.smsProvider !== undefined,
            defaults: ctx.config.otpSending.smsCountries,
          },
          ipLimit: ctx.hooks.ipLimit('branding'),
        }),
      );
    });

    await scope.register(async (health) => {
      health.setErrorHandler(problemErrorHandler);
      health.addHook('onRoute', documentErrors('problem'));
      health.addHook(
        'onRoute',
        describeRoutes({
          '/healthz': {
            operationId: 'liveness',
            summary: 'Liveness: the process answers',
            tags: ['operations'],
            response: { 200: Type.Object({ status: Type.Literal('ok') }) },
          },
          '/readyz': {
            operationId: 'readiness',
            summary: 'Readiness: storage answers and a signing key is loaded (503 otherwise)',
            tags: ['operations'],
            response: { 200: Type.Object({ status: Type.Literal('ready') }) },
          },
        }),
      );
      await health.register(
        healthRoutes({
          db: ctx.db,
          keys: ctx.keys,
          revocations: ctx.revocations,
          delivery: ctx.config.readyzDelivery ? ctx.deliveryHealth : undefined,
          outage: ctx.outage,
        }),
      );
    });
  };
}
