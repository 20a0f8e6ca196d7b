import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';
import { type MiddlewareOptions, rejection, resolveMiddlewareOptions, toVerifier } from './http.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Claims of the verified Tessera access token, set by the `tesseraAuth` hook. */
    tessera?: AccessTokenClaims;
  }
}

export type { AccessTokenClaims } from './claims.js';
export type { MiddlewareOptions } from './http.js';

/**
 * The hook returned by {@link tesseraAuth}: use it as `preHandler` (or `onRequest`).
 *
 * @example
 * ```ts
 * const authenticate: TesseraHook = tesseraAuth(verifier);
 * app.register(async (scope) => {
 *   scope.addHook('preHandler', authenticate);
 *   scope.get('/orders', async (request) => listOrders(request.tessera!.sub));
 * });
 * ```
 */
export type TesseraHook = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

/**
 * Fastify `preHandler` hook that requires a valid Tessera access token in
 * `Authorization: Bearer …`. On success the claims are in `request.tessera`; otherwise it answers
 * 401 with a `WWW-Authenticate: Bearer` challenge, or 503 when the issuer cannot be reached.
 * Add it to one route (`preHandler`), to a scope (`app.addHook('preHandler', …)`), or decorate
 * the instance with it.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm` of the challenge, `onError` to log rejections.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { tesseraAuth } from '@tessera/verify/fastify';
 *
 * const app = Fastify();
 * const authenticate = tesseraAuth({ issuer: 'https://auth.example.com', apiKeyId: 'pk_…' });
 * app.get('/me', { preHandler: authenticate }, async (request) => ({ user: request.tessera!.sub }));
 * ```
 */
export function tesseraAuth(verifier: Verifier | VerifierOptions, options?: MiddlewareOptions): TesseraHook {
  const resolved = toVerifier(verifier);
  const { realm, onError } = resolveMiddlewareOptions(options);
  return async (request, reply) => {
    try {
      request.tessera = await resolved.verifyAuthorization(request.headers.authorization);
    } catch (err) {
      if (!(err instanceof TesseraVerifyError)) throw err;
      onError(err);
      const { status, headers, body } = rejection(err, realm);
      // Returning the reply after send() stops the hook chain (Fastify's early-response idiom).
      return reply.code(status).headers(headers).send(body);
    }
    return undefined;
  };
}
