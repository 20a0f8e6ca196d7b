import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { security } from '../../http/openapi.js';
import { VerifyAnswer } from '../../http/schemas.js';
import { apiKeyIdOf } from '../../plugins/request-context.js';
import type { VerifyResult, VerifyService } from './verify.service.js';

/** The longest access token /verify reads, in UTF-16 code units (the schema's `maxLength`). */
export const MAX_ACCESS_TOKEN_LENGTH = 8192;
/** The longest `resource` /verify reads (a URL). */
export const MAX_RESOURCE_LENGTH = 2000;

const Body = Type.Object({
  oauth_token: Type.Object(
    { access_token: Type.String({ maxLength: MAX_ACCESS_TOKEN_LENGTH }) },
    { additionalProperties: true },
  ),
  resource: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_RESOURCE_LENGTH,
      description:
        'A resource server verifying a token bound to it (RFC 8707): its resource identifier, which must be the token’s aud; API_KEY_ID then names the token’s project. Without it, a token bound to a resource is refused',
    }),
  ),
});

const answer = (result: VerifyResult) =>
  result.success ? { success: true } : { success: false, reason: result.reason };

/** POST /verify — the specification's section 4.1, for apps without a backend. */
export function verifyRoutes({ verify }: { verify: VerifyService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Not async: a token seen before is answered without a promise (the common case).
    app.post(
      '/verify',
      {
        schema: {
          operationId: 'verifyToken',
          summary:
            'Check an access token: valid, or the reason it is not (always 200 for a well-formed request)',
          tags: ['verify'],
          // API_KEY_ID is optional: when sent, the token must have been issued for it.
          security: [{}, ...security('apiKey')],
          body: Body,
          response: { 200: Type.Ref(VerifyAnswer) },
        },
      },
      (request) => {
        const { oauth_token, resource } = request.body;
        const result = verify.verify(oauth_token.access_token, apiKeyIdOf(request), resource);
        return 'then' in result ? result.then(answer) : answer(result);
      },
    );
  };
}
