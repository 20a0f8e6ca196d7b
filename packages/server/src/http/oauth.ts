import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { introspectionRoutes } from '../modules/session/introspection.routes.js';
import { oauthRoutes } from '../modules/session/oauth.routes.js';
import { requireClient } from '../plugins/client-auth.js';
import { corsHook, preflightRoutes } from '../plugins/cors.js';
import { oauthErrorHandler, oauthNotFound } from '../plugins/error-handler.js';
import { documentErrors } from './openapi.js';
import { browserOrigins, notFoundUnder } from './scope.js';

/**
 * The OAuth family (`/oauth/*`): RFC 6749 errors, never cached. Token, revocation and
 * introspection authenticate their client with one chain (`authenticateClient`): public for the
 * first two, confidential (the API key secret) for introspection. Token, revocation and userinfo
 * are called from browsers (project CORS); introspection is server to server (no CORS).
 */
export function oauthFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(oauthErrorHandler);
    scope.addHook('onRoute', documentErrors('oauth'));
    // RFC 6749 clients send forms; this family alone reads them (every other route reads JSON).
    await scope.register(formbody, { bodyLimit: ctx.config.bodyLimit });
    await notFoundUnder(scope, ['/oauth/'], oauthNotFound);

    await scope.register(async (browser) => {
      browser.addHook('onRequest', corsHook(browserOrigins(ctx, 'oauth')));
      const paths = ['/oauth/token', '/oauth/revoke', '/oauth/userinfo'];
      preflightRoutes(browser, paths, oauthNotFound);
      await browser.register(
        oauthRoutes({
          session: ctx.session,
          hooks: {
            ipLimit: ctx.hooks.ipLimit,
            bearer: ctx.hooks.bearer,
            client: requireClient(ctx.projects, 'public', ctx.originRefusals),
          },
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
