import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import {
  REGISTRATIONS_PER_IP,
  REGISTRATIONS_PER_PROJECT,
  registrationRoutes,
} from '../modules/clients/registration.routes.js';
import { introspectionRoutes } from '../modules/session/introspection.routes.js';
import { oauthRoutes } from '../modules/session/oauth.routes.js';
import { requireClient } from '../plugins/client-auth.js';
import { corsHook, OAUTH_CLIENTS, preflightRoutes } from '../plugins/cors.js';
import { oauthErrorHandler, oauthNotFound } from '../plugins/error-handler.js';
import { limitPerIp } from '../plugins/request-context.js';
import { documentErrors } from './openapi.js';
import { notFoundUnder } from './scope.js';

/**
 * The OAuth family (`/oauth/*`): RFC 6749 errors, never cached. Token, revocation and
 * introspection authenticate their client with one chain (`authenticateClient`): public for the
 * first two, confidential (the API key secret) for introspection. Token, revocation, userinfo and
 * registration are called from browsers (CORS for any origin, no credentials; the route checks
 * the client's origins); introspection is server to server (no CORS).
 */
export function oauthFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(oauthErrorHandler);
    scope.addHook('onRoute', documentErrors('oauth'));
    // RFC 6749 clients send forms; this family alone reads them (every other route reads JSON).
    await scope.register(formbody, { bodyLimit: ctx.config.bodyLimit });
    await notFoundUnder(scope, ['/oauth/'], oauthNotFound);

    // Browsers call these from any origin (SPAs, browser-based MCP clients), without credentials:
    // CORS answers every origin, and each request's client is then checked by the route (its
    // project's origins, or the origins of its redirect URIs).
    await scope.register(async (browser) => {
      browser.addHook('onRequest', corsHook(OAUTH_CLIENTS));
      const paths = [
        '/oauth/token',
        '/oauth/token/:api_key_id',
        '/oauth/revoke',
        '/oauth/revoke/:api_key_id',
        '/oauth/userinfo',
        '/oauth/register/:api_key_id',
      ];
      preflightRoutes(browser, paths, oauthNotFound);
      await browser.register(
        oauthRoutes({
          session: ctx.session,
          authorize: ctx.authorize,
          hooks: {
            ipLimit: ctx.hooks.ipLimit,
            bearer: ctx.hooks.userinfoBearer,
            client: requireClient(ctx.projects, 'public', ctx.originRefusals, ctx.clients),
          },
        }),
      );
      await browser.register(
        registrationRoutes({
          clients: ctx.clients,
          project: (apiKeyId) => ctx.projects.byApiKeyId(apiKeyId),
          ipLimit: limitPerIp(ctx.ipLimiter, 'oauth-register', REGISTRATIONS_PER_IP),
          projectLimit: (project) => ctx.limiter.hit('oauth-register', project.id, REGISTRATIONS_PER_PROJECT),
        }),
      );
    });

    await scope.register(
      introspectionRoutes({
        session: ctx.session,
        client: requireClient(ctx.projects, 'confidential', ctx.originRefusals),
      }),
    );
  };
}
