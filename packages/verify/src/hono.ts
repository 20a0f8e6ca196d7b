import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AccessTokenClaims } from './claims.js';
import type { ErrorAnswer, MiddlewareOptions } from './http.js';
import { authenticator, guard } from './middleware.js';
import type { ClaimRequirement } from './requirements.js';
import { metadataAnswer, type ProtectedResourceOptions } from './resource.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare module 'hono' {
  interface ContextVariableMap {
    /**
     * Claims of the verified Tessera access token, set by `tesseraAuth` (undefined on a request
     * let through by `optional: true` or as a CORS preflight).
     */
    tessera: AccessTokenClaims;
  }
}

export * from './adapter-exports.js';

/**
 * The Hono environment the middleware adds: `c.get('tessera')` holds the claims.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import type { TesseraEnv } from '@tessera/verify/hono';
 *
 * const api = new Hono<TesseraEnv>();
 * api.get('/me', (c) => c.json({ user: c.get('tessera').sub }));
 * ```
 */
export type TesseraEnv = { Variables: { tessera: AccessTokenClaims } };

/**
 * The Hono environment of routes behind `tesseraAuth(…, { optional: true })`: `c.get('tessera')`
 * may be undefined.
 *
 * @example
 * ```ts
 * const feed = new Hono<TesseraOptionalEnv>();
 * feed.get('/', (c) => c.json({ personalised: c.get('tessera') !== undefined }));
 * ```
 */
export type TesseraOptionalEnv = { Variables: { tessera: AccessTokenClaims | undefined } };

/**
 * Options of the Hono {@link tesseraAuth}: `getToken`, `onError` and `errorResponse` receive the
 * Hono `Context`.
 *
 * @example
 * ```ts
 * import { getCookie } from 'hono/cookie';
 *
 * const options: HonoAuthOptions = { getToken: (c) => getCookie(c, 'access_token') };
 * ```
 */
export type HonoAuthOptions = MiddlewareOptions<Context>;

/**
 * Hono middleware that requires a valid Tessera access token in `Authorization: Bearer …` (or
 * where `getToken` finds it). On success the claims are in `c.get('tessera')`; otherwise it
 * answers 401 with a `WWW-Authenticate: Bearer` challenge, 403 when a `requirements` check fails,
 * or 503 when the issuer cannot be reached. CORS preflights pass without a token.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm`, `optional`, `getToken`, `requirements`, `onError`, `errorResponse`,
 *   `skipPreflight` (see {@link MiddlewareOptions}).
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { requiredScopes, tesseraAuth } from '@tessera/verify/hono';
 *
 * const app = new Hono();
 * const verifier = { issuer: 'https://auth.example.com', apiKeyId: 'pk_…' };
 * app.use('/api/*', tesseraAuth(verifier));
 * app.get('/api/me', (c) => c.json({ user: c.get('tessera').sub }));
 * app.get('/admin/*', tesseraAuth(verifier, { requirements: [requiredScopes('admin')] }));
 * ```
 */
export function tesseraAuth(
  verifier: Verifier | VerifierOptions,
  options?: HonoAuthOptions,
): MiddlewareHandler<TesseraEnv> {
  const authenticate = authenticator(verifier, options);
  return async (c, next) => {
    const outcome = await authenticate({
      request: c,
      method: c.req.method,
      header: (name) => c.req.header(name),
    });
    if ('answer' in outcome) return send(c, outcome.answer);
    if (outcome.claims !== undefined) c.set('tessera', outcome.claims);
    await next();
    return undefined;
  };
}

/**
 * Hono middleware that checks the claims a `tesseraAuth` earlier in the chain attached. Without
 * claims it answers 401 `missing_token`; a failed check answers 403.
 *
 * @param requirements Checks from {@link requiredScopes}, {@link claimEquals}, {@link claimIncludes},
 *   {@link requireClaims}, {@link claimCheck}; one or an array.
 * @param options `realm`, `onError`, `errorResponse`.
 *
 * @example
 * ```ts
 * import { claimIncludes, tesseraAuth, tesseraGuard } from '@tessera/verify/hono';
 *
 * app.use('/api/*', tesseraAuth(verifier));
 * app.delete('/api/orders/:id', tesseraGuard(claimIncludes('roles', 'admin')), remove);
 * ```
 */
export function tesseraGuard(
  requirements: ClaimRequirement | readonly ClaimRequirement[],
  options?: Omit<HonoAuthOptions, 'optional' | 'getToken' | 'requirements'>,
): MiddlewareHandler<TesseraEnv> {
  const decide = guard<Context>(typeof requirements === 'function' ? [requirements] : requirements, options);
  return async (c, next) => {
    const outcome = decide(c, c.get('tessera') as AccessTokenClaims | undefined);
    if ('answer' in outcome) return send(c, outcome.answer);
    await next();
    return undefined;
  };
}

/**
 * Hono middleware serving your resource server's Protected Resource Metadata (RFC 9728) at
 * `/.well-known/oauth-protected-resource` inserted before the resource's path (and at the root
 * form too); other requests pass. Pair it with `tesseraAuth(verifier, { resourceMetadata })`,
 * whose 401 challenges point at it.
 *
 * @example
 * ```ts
 * import { protectedResourceMetadataUrl, tesseraAuth, tesseraProtectedResource } from '@tessera/verify/hono';
 *
 * const resource = 'https://api.example.com/v1';
 * app.use(tesseraProtectedResource({ resource, authorizationServers: [`${issuer}/projects/${apiKeyId}`] }));
 * app.use('/v1/*', tesseraAuth({ issuer, apiKeyId, resource }, { resourceMetadata: protectedResourceMetadataUrl(resource) }));
 * ```
 */
export function tesseraProtectedResource(options: ProtectedResourceOptions): MiddlewareHandler {
  const { paths, body, headers } = metadataAnswer(options);
  return async (c, next) => {
    if ((c.req.method === 'GET' || c.req.method === 'HEAD') && paths.includes(c.req.path))
      return c.body(body, 200, headers);
    await next();
    return undefined;
  };
}

function send(c: Context, answer: ErrorAnswer): Response {
  return c.json(answer.body as object, answer.status as ContentfulStatusCode, answer.headers);
}
