import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { signInBundle } from '../modules/hosted/assets.js';
import { hostedRoutes } from '../modules/hosted/hosted.routes.js';

/**
 * The hosted pages' family (issue 31): the authorization endpoint, sign-in, consent and logout,
 * answered in HTML at the issuer. Its own scope: forms, HTML errors, no CORS (browsers navigate
 * here; they never call it from another origin).
 */
export function hostedFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    await scope.register(formbody, { bodyLimit: ctx.config.bodyLimit });
    await scope.register(
      hostedRoutes({
        authorize: ctx.authorize,
        clients: ctx.clients,
        projects: ctx.projects,
        otp: ctx.otp,
        verify: ctx.verify,
        keys: ctx.keys,
        projectOfSession: async (sessionId) => {
          const session = await ctx.sessions.findById(sessionId);
          return session ? ctx.projects.byId(session.project_id) : undefined;
        },
        revokeClientSession: async (sessionId, clientId) => {
          const session = await ctx.sessions.findById(sessionId);
          if (session?.client_id === clientId) await ctx.session.end(session, 'signed_out', 'user');
        },
        ipLimit: ctx.hooks.ipLimit('oauth'),
        secure: ctx.config.issuer.startsWith('https://'),
        signInBundle: signInBundle(),
      }),
    );
  };
}
