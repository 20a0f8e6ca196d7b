import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { auditRoutes } from '../modules/audit/audit.routes.js';
import { userGrantsRoutes } from '../modules/authorize/grants.routes.js';
import { clientsRoutes } from '../modules/clients/clients.routes.js';
import { registrationSettingRoutes } from '../modules/clients/registration-setting.routes.js';
import { runAsActor } from '../modules/console/actor.js';
import { SendBudget } from '../modules/otp/send-budget.js';
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
/**
 * Unknown paths under `/v1/clients` answer in its RFC 7591 family's OAuth format
 * (`/v1/clients/./secret` is `/v1/clients/secret`: no route). Registered on the app, beside the
 * family rather than in it: a 404 runs its scope's hooks, and the family's authentication would
 * turn an unknown path (a CORS preflight included) into a 401.
 */
export async function integratorNotFound(app: FastifyInstance): Promise<void> {
  await notFoundUnder(app, ['/v1/clients'], oauthNotFound, oauthErrorHandler);
}

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
    await scope.register(
      statsRoutes({
        db: ctx.db,
        budget: new SendBudget(ctx.config.otpSending),
        limiter: ctx.limiter,
        now: ctx.now,
      }),
    );
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
      await clients.register(
        clientsRoutes({ clients: ctx.clients, project: async (request) => request.project! }),
      );
    });
    await scope.register(brandingIntegratorRoutes({ projects: ctx.projects }));
    await scope.register(registrationSettingRoutes({ projects: ctx.projects }));
  };
}
