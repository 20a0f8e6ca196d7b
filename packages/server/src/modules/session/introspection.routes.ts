import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { preHandlerAsyncHookHandler } from 'fastify';
import type { SessionService } from './session.service.js';

const Body = Type.Object({
  token: Type.String({ maxLength: 8192 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
});

export interface IntrospectionRoutesDeps {
  session: SessionService;
  /** Authenticates the confidential client (HTTP Basic with the API key secret) into `request.client`. */
  client: preHandlerAsyncHookHandler;
}

/** RFC 7662 introspection, server to server: the integrator's secret, a token of its project. */
export function introspectionRoutes({ session, client }: IntrospectionRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/oauth/introspect', { schema: { body: Body }, preHandler: client }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return session.introspect(request.client, request.body.token);
    });
  };
}
