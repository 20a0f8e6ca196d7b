import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../app.js';

const Start = Type.Object({ identifier: Type.String({ minLength: 1, maxLength: 320 }) });
const Complete = Type.Object({
  challenge_id: Type.String({ minLength: 1, maxLength: 100 }),
  code: Type.String({ minLength: 1, maxLength: 32 }),
  getOAuthToken: Type.Optional(Type.Boolean()),
});

export function otpRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const preHandler = [ctx.hooks.ipLimit('otp'), ctx.hooks.project];
    app.post('/v1/auth/otp/start', { schema: { body: Start }, preHandler }, async (request) =>
      ctx.otp.start(request.project, request.body.identifier),
    );
    app.post('/v1/auth/otp/complete', { schema: { body: Complete }, preHandler }, async (request) =>
      ctx.otp.complete(
        request.project,
        request.body.challenge_id,
        request.body.code,
        request.body.getOAuthToken === true,
      ),
    );
  };
}
