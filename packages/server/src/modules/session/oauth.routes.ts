import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../app.js';
import { OAuthError } from '../../errors.js';
import { apiKeyIdOf } from '../../plugins/request-context.js';
import { parseBasic } from '../projects/projects.service.js';

const TokenBody = Type.Object({
  grant_type: Type.String({ maxLength: 100 }),
  refresh_token: Type.Optional(Type.String({ maxLength: 512 })),
  client_id: Type.Optional(Type.String({ maxLength: 100 })),
});
const RevokeBody = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
  client_id: Type.Optional(Type.String({ maxLength: 100 })),
});

/** The client: `client_id` in the body, else API_KEY_ID, else the id of HTTP Basic credentials. */
function clientIdOf(request: FastifyRequest, bodyClientId: string | undefined): string {
  const clientId = bodyClientId ?? apiKeyIdOf(request) ?? parseBasic(request.headers.authorization)?.id;
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id (the API key id) is required');
  return clientId;
}

export function oauthRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const preHandler = ctx.hooks.ipLimit('oauth');

    app.post('/oauth/token', { schema: { body: TokenBody }, preHandler }, async (request, reply) => {
      const { grant_type, refresh_token } = request.body;
      const clientId = clientIdOf(request, request.body.client_id);
      if (!(await ctx.projects.byApiKeyId(clientId)))
        throw new OAuthError(401, 'invalid_client', 'unknown client_id');
      if (grant_type !== 'refresh_token') {
        throw new OAuthError(
          400,
          'unsupported_grant_type',
          'only grant_type=refresh_token is supported here',
        );
      }
      if (!refresh_token) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
      reply.header('cache-control', 'no-store');
      return ctx.tokens.refresh(clientId, refresh_token);
    });

    app.post('/oauth/revoke', { schema: { body: RevokeBody }, preHandler }, async (request, reply) => {
      const clientId = clientIdOf(request, request.body.client_id);
      if (!(await ctx.projects.byApiKeyId(clientId)))
        throw new OAuthError(401, 'invalid_client', 'unknown client_id');
      const { token } = request.body;
      let outcome: 'revoked' | 'ignored' | 'wrong_client' = 'ignored';
      if (token.startsWith('tsr_')) {
        outcome = await ctx.tokens.revokeRefreshToken(clientId, token);
      } else {
        const claims = await ctx.verify.authentic(token);
        if (typeof claims !== 'string') outcome = await ctx.tokens.revokeSession(clientId, claims.sid);
      }
      if (outcome === 'wrong_client') {
        throw new OAuthError(400, 'unauthorized_client', 'the token was issued to another client');
      }
      // RFC 7009 §2.2: an invalid or unknown token is answered 200 as well.
      return reply.code(200).header('cache-control', 'no-store').send({});
    });
  };
}
