import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { auditRoutes } from '../modules/audit/audit.routes.js';
import { userGrantsRoutes } from '../modules/authorize/grants.routes.js';
import { clientsRoutes } from '../modules/clients/clients.routes.js';
import { registrationSettingRoutes } from '../modules/clients/registration-setting.routes.js';
import { runAsActor } from '../modules/console/actor.js';
import { brandingIntegratorRoutes } from '../modules/projects/branding.routes.js';
import { statsRoutes } from '../modules/stats/stats.routes.js';
import { usersRoutes } from '../modules/users/users.routes.js';
import { webhooksRoutes } from '../modules/webhooks/webhooks.routes.js';
import { oauthErrorHandler, oauthNotFound, problemErrorHandler } from '../plugins/error-handler.js';
import { documentErrors, documentSecurity, documentSecurityOrConsole } from './openapi.js';
import { notFoundUnder } from './scope.js';

/**
 * The integrator family: the project's own servers, with HTTP Basic (API key id and secret) on
 * every route, set here for the whole family (`request.project`). Problem documents; no CORS.
 */
export function integratorFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    scope.addHook('onRoute', documentErrors('problem'));
    scope.addHook(
      'onRoute',
      ctx.config.console ? documentSecurityOrConsole('basic', true) : documentSecurity('basic'),
    );
    scope.addHook('onRoute', runAsActor);
    scope.addHook('preHandler', ctx.hooks.integrator);

    await scope.register(
      usersRoutes({
        users: ctx.usersService,
        claims: ctx.claims,
        devices: ctx.devices,
        biometric: ctx.biometric,
        pinLocks: ctx.pinLocks,
      }),
    );
    await scope.register(auditRoutes({ audit: ctx.audit }));
    await scope.register(statsRoutes({ db: ctx.db, now: ctx.now }));
    await scope.register(
      userGrantsRoutes({
        repository: ctx.authorizeRepository,
        users: ctx.users,
        grantWithdrawn: (...args) => ctx.authorize.grantWithdrawn(...args),
      }),
    );
    await scope.register(webhooksRoutes({ webhooks: ctx.webhooks }));
    // OAuth clients speak RFC 7591/7592, whose errors are OAuth's (`invalid_client_metadata`, …).
    await scope.register(async (clients) => {
      clients.setErrorHandler(oauthErrorHandler);
      // Unknown paths under it too (`/v1/clients/./secret` is `/v1/clients/secret`: no route).
      await notFoundUnder(clients, ['/v1/clients'], oauthNotFound);
      await clients.register(
        clientsRoutes({ clients: ctx.clients, project: async (request) => request.project! }),
      );
    });
    await scope.register(brandingIntegratorRoutes({ projects: ctx.projects }));
    await scope.register(registrationSettingRoutes({ projects: ctx.projects }));
  };
}
