import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, preHandlerAsyncHookHandler } from 'fastify';
import { OAuthError } from '../../errors.js';
import { OAUTH_CONSUMES, security } from '../../http/openapi.js';
import { TokenBundle } from '../../http/schemas.js';
import { clientAddress } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { AuthorizeService } from '../authorize/authorize.service.js';
import { clientUserIdOf } from '../users/client-user-id.js';
import { clientFingerprint, type SessionService } from './session.service.js';

const TokenBody = Type.Object({
  grant_type: Type.Unsafe<'refresh_token' | 'authorization_code'>({
    type: 'string',
    enum: ['refresh_token', 'authorization_code'],
    description: 'refresh_token, or authorization_code for a registered OAuth client',
  }),
  refresh_token: Type.Optional(Type.String({ maxLength: 512 })),
  /** The API key id, a registered client's `tc_…`, or a Client ID Metadata Document's URL. */
  client_id: Type.Optional(Type.String({ maxLength: 2000 })),
  /** A confidential OAuth client registered with client_secret_post. */
  client_secret: Type.Optional(Type.String({ maxLength: 200 })),
  code: Type.Optional(Type.String({ maxLength: 200 })),
  redirect_uri: Type.Optional(Type.String({ maxLength: 2000 })),
  code_verifier: Type.Optional(Type.String({ maxLength: 200 })),
  resource: Type.Optional(Type.String({ maxLength: 2000 })),
});
const RevokeBody = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
  client_id: Type.Optional(Type.String({ maxLength: 2000 })),
  client_secret: Type.Optional(Type.String({ maxLength: 200 })),
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

/** Sends JSON serialised here, past the route's response schema (a client's bundle: see the token route). */
const sendJson = (reply: FastifyReply, body: unknown) =>
  reply.type('application/json').send(JSON.stringify(body));
/** A public client: `client_id` in the body, the `API_KEY_ID` header, or Basic credentials. */
const publicClient = [{}, ...security('apiKey', 'basic')];

const ProjectParams = Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 100 }) });

/**
 * An endpoint at its own path and at the project's (`{path}/{api_key_id}`, which the project's
 * metadata names when it accepts Client ID Metadata Documents: a client id that is a URL says
 * nothing of its project).
 */
const ENDPOINTS = (path: string, operationId: string) =>
  [
    [path, operationId, {}],
    [`${path}/:api_key_id`, `${operationId}AtProject`, { params: ProjectParams }],
  ] as const;

export interface OAuthRoutesDeps {
  session: SessionService;
  authorize: AuthorizeService;
  /** `bearer`: the userinfo endpoint's Bearer check (AppContext.hooks.userinfoBearer). */
  hooks: Pick<AppHooks, 'ipLimit' | 'bearer'> & {
    /** Authenticates a public client (`client_id`, `API_KEY_ID` or Basic) into `request.client`. */
    client: preHandlerAsyncHookHandler;
  };
}

/** The OAuth endpoints apps call, from browsers too: refresh grant, RFC 7009 revocation, userinfo. */
export function oauthRoutes({ session, authorize, hooks }: OAuthRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const guarded = { onRequest: hooks.ipLimit('oauth'), preHandler: hooks.client };

    for (const [url, operationId, params] of ENDPOINTS('/oauth/token', 'refreshTokens'))
      app.post(
        url,
        {
          schema: {
            operationId,
            ...params,
            summary:
              'Token endpoint: the refresh grant (a new bundle with a rotated refresh token) and, for registered OAuth clients, the authorization code grant (PKCE); a client’s bundle has `scope`, an ID token only with openid and a refresh token only with offline_access',
            tags,
            security: publicClient,
            consumes: OAUTH_CONSUMES,
            body: TokenBody,
            response: { 200: Type.Ref(TokenBundle) },
          },
          ...guarded,
        },
        async (request, reply) => {
          const { grant_type, refresh_token } = request.body;
          const oauthClient = request.oauthClient;
          if (grant_type === 'authorization_code') {
            if (!oauthClient)
              throw new OAuthError(
                400,
                'unauthorized_client',
                'the authorization code grant is for registered OAuth clients',
              );
            const bundle = await authorize.exchange(oauthClient, request.body);
            // Serialised here: a client's bundle may lack the refresh or ID token the schema lists.
            return sendJson(reply.header('cache-control', 'no-store'), bundle);
          }
          if (grant_type !== 'refresh_token') {
            throw new OAuthError(
              400,
              'unsupported_grant_type',
              'grant_type is refresh_token, or authorization_code for a registered OAuth client',
            );
          }
          if (oauthClient && !oauthClient.grant_types.includes('refresh_token'))
            throw new OAuthError(400, 'unauthorized_client', 'this client may not use the refresh grant');
          if (!refresh_token) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
          reply.header('cache-control', 'no-store');
          const bundle = await session.refresh(
            request.client,
            refresh_token,
            clientFingerprint(clientAddress(request.ip), request.headers['user-agent']),
            oauthClient?.client_id,
          );
          return oauthClient ? sendJson(reply, bundle) : bundle;
        },
      );

    for (const [url, operationId, params] of ENDPOINTS('/oauth/revoke', 'revokeToken'))
      app.post(
        url,
        {
          schema: {
            operationId,
            ...params,
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
          const outcome = await session.revokeToken(
            request.client.api_key_id,
            request.body.token,
            request.oauthClient?.client_id,
          );
          if (outcome === 'wrong_client') {
            throw new OAuthError(400, 'unauthorized_client', 'the token was issued to another client');
          }
          // RFC 7009 §2.2: an invalid or unknown token is answered 200 as well.
          return reply.code(200).header('cache-control', 'no-store').send({});
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
