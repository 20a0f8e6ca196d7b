import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { preHandlerAsyncHookHandler } from 'fastify';
import { OAuthError } from '../../errors.js';
import { OAUTH_CONSUMES, security } from '../../http/openapi.js';
import { TokenBundle } from '../../http/schemas.js';
import { clientAddress } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import { clientUserIdOf } from '../users/client-user-id.js';
import { clientFingerprint, type SessionService } from './session.service.js';

const TokenBody = Type.Object({
  grant_type: Type.Unsafe<'refresh_token'>({
    type: 'string',
    enum: ['refresh_token'],
    description: 'Only the refresh grant: Tessera has no redirect flows',
  }),
  refresh_token: Type.Optional(Type.String({ maxLength: 512 })),
  client_id: Type.Optional(Type.String({ maxLength: 100 })),
});
const RevokeBody = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
  client_id: Type.Optional(Type.String({ maxLength: 100 })),
});
const UserInfo = Type.Object({
  sub: Type.String(),
  client_user_id: Type.String(),
  identifier: Type.String(),
  email: Type.Optional(Type.String()),
  email_verified: Type.Optional(Type.Boolean()),
  phone_number: Type.Optional(Type.String()),
  phone_number_verified: Type.Optional(Type.Boolean()),
});
const tags = ['oauth'];
/** A public client: `client_id` in the body, the `API_KEY_ID` header, or Basic credentials. */
const publicClient = [{}, ...security('apiKey', 'basic')];

export interface OAuthRoutesDeps {
  session: SessionService;
  hooks: Pick<AppHooks, 'ipLimit' | 'bearer'> & {
    /** Authenticates a public client (`client_id`, `API_KEY_ID` or Basic) into `request.client`. */
    client: preHandlerAsyncHookHandler;
  };
}

/** The OAuth endpoints apps call, from browsers too: refresh grant, RFC 7009 revocation, userinfo. */
export function oauthRoutes({ session, hooks }: OAuthRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const guarded = { onRequest: hooks.ipLimit('oauth'), preHandler: hooks.client };

    app.post(
      '/oauth/token',
      {
        schema: {
          operationId: 'refreshTokens',
          summary: 'Refresh grant: a new bundle with a rotated refresh token',
          tags,
          security: publicClient,
          consumes: OAUTH_CONSUMES,
          body: TokenBody,
          response: { 200: Type.Ref(TokenBundle) },
        },
        ...guarded,
      },
      async (request, reply) => {
        // grant_type is refresh_token: any other is refused by the body schema's enum, answered
        // unsupported_grant_type by the family's error handler (oauthErrorHandler).
        const { refresh_token } = request.body;
        if (!refresh_token) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
        reply.header('cache-control', 'no-store');
        return session.refresh(
          request.client,
          refresh_token,
          clientFingerprint(clientAddress(request.ip), request.headers['user-agent']),
        );
      },
    );

    app.post(
      '/oauth/revoke',
      {
        schema: {
          operationId: 'revokeToken',
          summary: 'RFC 7009 revocation: ends the token’s session (unknown tokens are answered 200 too)',
          tags,
          security: publicClient,
          consumes: OAUTH_CONSUMES,
          body: RevokeBody,
          response: { 200: Type.Object({}) },
        },
        ...guarded,
      },
      async (request, reply) => {
        const outcome = await session.revokeToken(request.client.api_key_id, request.body.token);
        if (outcome === 'wrong_client') {
          throw new OAuthError(400, 'unauthorized_client', 'the token was issued to another client');
        }
        // RFC 7009 §2.2: an invalid or unknown token is answered 200 as well.
        return reply.code(200).header('cache-control', 'no-store').send({});
      },
    );

    /**
     * The authorization endpoint OpenID Connect Discovery requires a provider to name. Tessera has
     * no redirect flows, so it refuses every request; it never redirects, as no client has
     * registered a redirect URI (RFC 6749 §4.1.2.1).
     */
    app.get(
      '/oauth/authorize',
      {
        schema: {
          operationId: 'authorize',
          summary: 'Always refused: Tessera has no redirect flows (sign in through /v1/auth/*)',
          tags,
          response: {},
        },
      },
      async () => {
        throw new OAuthError(
          400,
          'unsupported_response_type',
          'Tessera has no redirect flows: sign in through the /v1/auth/* endpoints and refresh at /oauth/token',
        );
      },
    );

    /** OpenID Connect userinfo, for the end user's access token. */
    app.get(
      '/oauth/userinfo',
      {
        schema: {
          operationId: 'getUserInfo',
          summary: 'OpenID Connect userinfo for the access token',
          tags,
          security: security('accessToken'),
          response: { 200: UserInfo },
        },
        preHandler: hooks.bearer,
      },
      async (request) => {
        const { user } = request.auth;
        return {
          sub: user.id,
          client_user_id: clientUserIdOf(user),
          identifier: user.identifier,
          ...(user.identifier_type === 'email'
            ? { email: user.identifier, email_verified: true }
            : { phone_number: user.identifier, phone_number_verified: true }),
        };
      },
    );
  };
}
