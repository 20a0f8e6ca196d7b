import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { apiKeyIdOf } from '../../plugins/request-context.js';
import type { VerifyResult, VerifyService } from './verify.service.js';

const Body = Type.Object({
  oauth_token: Type.Object(
    { access_token: Type.String({ maxLength: 8192 }) },
    { additionalProperties: true },
  ),
});
const Answer = Type.Object({ success: Type.Boolean(), reason: Type.Optional(Type.String()) });

const answer = (result: VerifyResult) =>
  result.success ? { success: true } : { success: false, reason: result.reason };

/** POST /verify — the specification's section 4.1, for apps without a backend. */
export function verifyRoutes({ verify }: { verify: VerifyService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Not async: a token seen before is answered without a promise (the common case).
    app.post('/verify', { schema: { body: Body, response: { 200: Answer } } }, (request) => {
      const result = verify.verify(request.body.oauth_token.access_token, apiKeyIdOf(request));
      return 'then' in result ? result.then(answer) : answer(result);
    });
  };
}
