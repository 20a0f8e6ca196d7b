import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../app.js';
import { safeEqual, sha256 } from '../../crypto/hash.js';
import { OAuthError } from '../../errors.js';
import { parseRefreshToken } from '../../tokens/token.service.js';

const Body = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
});

/** RFC 7662 introspection (integrator's secret) and OpenID userinfo (end user's access token). */
export function introspectionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/oauth/introspect', { schema: { body: Body } }, async (request, reply) => {
      let project: Awaited<ReturnType<typeof ctx.projects.authenticateBasic>>;
      try {
        project = await ctx.projects.authenticateBasic(request.headers.authorization);
      } catch {
        throw new OAuthError(
          401,
          'invalid_client',
          'HTTP Basic credentials of the project (api_key_id:api_key_secret) are required',
          {
            'www-authenticate': 'Basic realm="tessera"',
          },
        );
      }
      reply.header('cache-control', 'no-store');
      const { token } = request.body;
      const inactive = { active: false };
      const refresh = parseRefreshToken(token);
      if (refresh) {
        const row = await ctx.sessions.findRefreshToken(refresh.id);
        if (
          !row ||
          !safeEqual(sha256(refresh.secret), row.secret_hash) ||
          row.rotated_at !== null ||
          row.expires_at <= ctx.now()
        )
          return inactive;
        const session = await ctx.sessions.findById(row.session_id);
        if (!session || session.project_id !== project.id || session.revoked_at !== null) return inactive;
        return {
          active: true,
          token_type: 'refresh_token',
          client_id: project.api_key_id,
          sub: session.user_id,
          sid: session.id,
          exp: Math.floor(row.expires_at / 1000),
          iat: Math.floor(session.created_at / 1000),
          iss: ctx.config.issuer,
        };
      }
      const result = await ctx.verify.verify(token, project.api_key_id);
      if (!result.success) return inactive;
      return { active: true, token_type: 'access_token', client_id: project.api_key_id, ...result.claims };
    });

    app.get('/oauth/userinfo', { preHandler: ctx.hooks.bearer }, async (request) => {
      const { user } = request.auth;
      return {
        sub: user.id,
        client_user_id: user.client_user_id ?? user.id,
        identifier: user.identifier,
        ...(user.identifier_type === 'email'
          ? { email: user.identifier, email_verified: true }
          : { phone_number: user.identifier, phone_number_verified: true }),
      };
    });
  };
}
