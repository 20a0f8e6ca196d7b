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

/**
 * The client of a token or revocation request: `client_id` in the body, else API_KEY_ID, else
 * HTTP Basic credentials, whose secret must then be right. A browser's Origin must be one of
 * the project's origins.
 */
async function clientOf(
  ctx: AppContext,
  request: FastifyRequest,
  bodyClientId: string | undefined,
): Promise<string> {
  const basic = parseBasic(request.headers.authorization);
  if (basic) {
    try {
      await ctx.projects.authenticateBasic(request.headers.authorization);
    } catch {
      throw new OAuthError(401, 'invalid_client', 'the client credentials are not valid', {
        'www-authenticate': 'Basic realm="tessera"',
      });
    }
  }
  const clientId = bodyClientId ?? apiKeyIdOf(request) ?? basic?.id;
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id (the API key id) is required');
  if (basic && basic.id !== clientId) {
    throw new OAuthError(401, 'invalid_client', 'client_id and the Basic credentials name different clients');
  }
  const project = await ctx.projects.byApiKeyId(clientId);
  if (!project) throw new OAuthError(401, 'invalid_client', 'unknown client_id');
  const origin = request.headers.origin;
  if (origin && !(JSON.parse(project.origins) as string[]).includes(origin)) {
    throw new OAuthError(403, 'invalid_client', `origin ${origin} is not allowed for this client`);
  }
  return clientId;
}

export function oauthRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const preHandler = ctx.hooks.ipLimit('oauth');

    app.post('/oauth/token', { schema: { body: TokenBody }, preHandler }, async (request, reply) => {
      const { grant_type, refresh_token } = request.body;
      const clientId = await clientOf(ctx, request, request.body.client_id);
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
      const clientId = await clientOf(ctx, request, request.body.client_id);
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
