import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from './claims.js';
import type { ErrorAnswer, MiddlewareOptions } from './http.js';
import { authenticator, guard, type RequestView } from './middleware.js';
import type { ClaimRequirement } from './requirements.js';
import { metadataAnswer, type ProtectedResourceOptions } from './resource.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Claims of the verified Tessera access token, set by the `tesseraAuth` hook. */
    tessera?: AccessTokenClaims;
  }
}

export * from './adapter-exports.js';

/**
 * Options of the Fastify {@link tesseraAuth}: `getToken`, `onError` and `errorResponse` receive
 * the `FastifyRequest`.
 *
 * @example
 * ```ts
 * const options: FastifyAuthOptions = { getToken: (request) => request.cookies.access_token };
 * ```
 */
export type FastifyAuthOptions = MiddlewareOptions<FastifyRequest>;

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
 * `Authorization: Bearer …` (or where `getToken` finds it). On success the claims are in
 * `request.tessera`; otherwise it answers 401 with a `WWW-Authenticate: Bearer` challenge, 403
 * when a `requirements` check fails, or 503 when the issuer cannot be reached. CORS preflights
 * pass without a token. Add it to one route (`preHandler`), to a scope
 * (`app.addHook('preHandler', …)`), or decorate the instance with it.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm`, `optional`, `getToken`, `requirements`, `onError`, `errorResponse`,
 *   `skipPreflight` (see {@link MiddlewareOptions}).
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { requiredScopes, tesseraAuth } from '@tessera/verify/fastify';
 *
 * const app = Fastify();
 * const verifier = { issuer: 'https://auth.example.com', apiKeyId: 'pk_…' };
 * app.get('/me', { preHandler: tesseraAuth(verifier) }, async (request) => ({ user: request.tessera!.sub }));
 * app.get('/orders', { preHandler: tesseraAuth(verifier, { requirements: [requiredScopes('orders:read')] }) }, listOrders);
 * ```
 */
export function tesseraAuth(verifier: Verifier | VerifierOptions, options?: FastifyAuthOptions): TesseraHook {
  const authenticate = authenticator(verifier, options);
  return async (request, reply) => {
    const outcome = await authenticate(view(request));
    if ('answer' in outcome) return send(reply, outcome.answer);
    request.tessera = outcome.claims;
    return undefined;
  };
}

/**
 * Fastify hook that checks the claims a `tesseraAuth` hook earlier in the chain attached. Without
 * claims it answers 401 `missing_token`; a failed check answers 403.
 *
 * @param requirements Checks from {@link requiredScopes}, {@link claimEquals}, {@link claimIncludes},
 *   {@link requireClaims}, {@link claimCheck}; one or an array.
 * @param options `realm`, `onError`, `errorResponse`.
 *
 * @example
 * ```ts
 * import { claimIncludes, tesseraAuth, tesseraGuard } from '@tessera/verify/fastify';
 *
 * app.addHook('preHandler', tesseraAuth(verifier));
 * app.delete('/orders/:id', { preHandler: tesseraGuard(claimIncludes('roles', 'admin')) }, remove);
 * ```
 */
export function tesseraGuard(
  requirements: ClaimRequirement | readonly ClaimRequirement[],
  options?: Omit<FastifyAuthOptions, 'optional' | 'getToken' | 'requirements'>,
): TesseraHook {
  const decide = guard<FastifyRequest>(
    typeof requirements === 'function' ? [requirements] : requirements,
    options,
  );
  return async (request, reply) => {
    const outcome = decide(request, request.tessera);
    if ('answer' in outcome) return send(reply, outcome.answer);
    return undefined;
  };
}

/**
 * A Fastify plugin serving your resource server's Protected Resource Metadata (RFC 9728) at
 * `/.well-known/oauth-protected-resource` inserted before the resource's path (and at the root
 * form too). Pair it with `tesseraAuth(verifier, { resourceMetadata })`, whose 401 challenges
 * point at it.
 *
 * @example
 * ```ts
 * import { protectedResourceMetadataUrl, tesseraAuth, tesseraProtectedResource } from '@tessera/verify/fastify';
 *
 * const resource = 'https://api.example.com/v1';
 * await app.register(tesseraProtectedResource({ resource, authorizationServers: [`${issuer}/projects/${apiKeyId}`] }));
 * app.addHook('preHandler', tesseraAuth({ issuer, apiKeyId, resource }, { resourceMetadata: protectedResourceMetadataUrl(resource) }));
 * ```
 */
export function tesseraProtectedResource(options: ProtectedResourceOptions): FastifyPluginAsync {
  const { paths, body, headers } = metadataAnswer(options);
  return async (app) => {
    for (const path of paths) app.get(path, async (_request, reply) => reply.headers(headers).send(body));
  };
}

function view(request: FastifyRequest): RequestView<FastifyRequest> {
  return {
    request,
    method: request.method,
    header: (name) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
  };
}

// Returning the reply after send() stops the hook chain (Fastify's early-response idiom).
function send(reply: FastifyReply, answer: ErrorAnswer): FastifyReply {
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(answer.body));
}
