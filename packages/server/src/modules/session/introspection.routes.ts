import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { preHandlerAsyncHookHandler } from 'fastify';
import { OAUTH_CONSUMES, security } from '../../http/openapi.js';
import type { SessionService } from './session.service.js';

const Body = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
});
/** RFC 7662 §2.2: `active`, and for an active token its claims, `token_type` and `client_id`. */
const Introspection = Type.Object(
  {
    active: Type.Boolean(),
    token_type: Type.Optional(Type.Union([Type.Literal('access_token'), Type.Literal('refresh_token')])),
    client_id: Type.Optional(Type.String()),
    sub: Type.Optional(Type.String()),
    sid: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    iss: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export interface IntrospectionRoutesDeps {
  session: SessionService;
  /** Authenticates the confidential client (HTTP Basic with the API key secret) into `request.client`. */
  client: preHandlerAsyncHookHandler;
}

/** RFC 7662 introspection, server to server: the integrator's secret, a token of its project. */
export function introspectionRoutes({ session, client }: IntrospectionRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/oauth/introspect',
      {
        schema: {
          operationId: 'introspectToken',
          summary: 'RFC 7662 introspection of an access or refresh token of the project',
          tags: ['oauth'],
          security: security('basic'),
          consumes: OAUTH_CONSUMES,
          body: Body,
          response: { 200: Introspection },
        },
        preHandler: client,
      },
      async (request, reply) => {
        reply.header('cache-control', 'no-store');
        return session.introspect(request.client, request.body.token);
      },
    );
  };
}
