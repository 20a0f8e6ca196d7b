import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AccessTokenClaims } from './claims.js';
import type { ErrorAnswer, MiddlewareOptions } from './http.js';
import { authenticator, guard, type RequestView } from './middleware.js';
import type { ClaimRequirement } from './requirements.js';
import { metadataAnswer, type ProtectedResourceOptions } from './resource.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare global {
  namespace Express {
    interface Request {
      /** Claims of the verified Tessera access token, set by `tesseraAuth`. */
      tessera?: AccessTokenClaims;
    }
  }
}

export * from './adapter-exports.js';

/**
 * Options of the Express {@link tesseraAuth}: `getToken`, `onError` and `errorResponse` receive
 * the Express `Request`.
 *
 * @example
 * ```ts
 * const options: ExpressAuthOptions = { optional: true, getToken: (req) => req.cookies?.access_token };
 * ```
 */
export type ExpressAuthOptions = MiddlewareOptions<Request>;

/**
 * Express middleware that requires a valid Tessera access token in `Authorization: Bearer …`
 * (or where `getToken` finds it). On success the claims are in `req.tessera`; otherwise it answers
 * 401 with a `WWW-Authenticate: Bearer` challenge, 403 when a `requirements` check fails, or 503
 * when the issuer cannot be reached. CORS preflights pass without a token.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm`, `optional`, `getToken`, `requirements`, `onError`, `errorResponse`,
 *   `skipPreflight` (see {@link MiddlewareOptions}).
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { requiredScopes, tesseraAuth } from '@tessera/verify/express';
 *
 * const app = express();
 * const verifier = { issuer: 'https://auth.example.com', apiKeyId: 'pk_…' };
 * app.get('/me', tesseraAuth(verifier), (req, res) => {
 *   res.json({ user: req.tessera!.sub });
 * });
 * app.get('/feed', tesseraAuth(verifier, { optional: true }), (req, res) => {
 *   res.json({ personalised: req.tessera !== undefined });
 * });
 * ```
 */
export function tesseraAuth(
  verifier: Verifier | VerifierOptions,
  options?: ExpressAuthOptions,
): RequestHandler {
  const authenticate = authenticator(verifier, options);
  return (req: Request, res: Response, next: NextFunction) => {
    authenticate(view(req))
      .then((outcome) => {
        if ('answer' in outcome) return send(res, outcome.answer);
        req.tessera = outcome.claims;
        next();
      })
      .catch(next);
  };
}

/**
 * Express middleware that checks the claims a `tesseraAuth` earlier in the chain attached — for
 * routes that need more than the rest of the app (a scope, a role). Without claims it answers
 * 401 `missing_token`; a failed check answers 403.
 *
 * @param requirements Checks from {@link requiredScopes}, {@link claimEquals}, {@link claimIncludes},
 *   {@link requireClaims}, {@link claimCheck}; one or an array.
 * @param options `realm`, `onError`, `errorResponse`.
 *
 * @example
 * ```ts
 * import { claimIncludes, requiredScopes, tesseraAuth, tesseraGuard } from '@tessera/verify/express';
 *
 * app.use('/api', tesseraAuth(verifier));
 * app.delete('/api/orders/:id', tesseraGuard([requiredScopes('orders:write'), claimIncludes('roles', 'admin')]), remove);
 * ```
 */
export function tesseraGuard(
  requirements: ClaimRequirement | readonly ClaimRequirement[],
  options?: Omit<ExpressAuthOptions, 'optional' | 'getToken' | 'requirements'>,
): RequestHandler {
  const decide = guard<Request>(typeof requirements === 'function' ? [requirements] : requirements, options);
  return (req: Request, res: Response, next: NextFunction) => {
    let outcome: ReturnType<typeof decide>;
    try {
      outcome = decide(req, req.tessera);
    } catch (err) {
      return next(err);
    }
    if ('answer' in outcome) return send(res, outcome.answer);
    next();
  };
}

/**
 * Express middleware serving your resource server's Protected Resource Metadata (RFC 9728) at
 * `/.well-known/oauth-protected-resource` inserted before the resource's path (and at the root
 * form too); other requests pass. Pair it with `tesseraAuth(verifier, { resourceMetadata })`,
 * whose 401 challenges point at it.
 *
 * @example
 * ```ts
 * import { protectedResourceMetadataUrl, tesseraAuth, tesseraProtectedResource } from '@tessera/verify/express';
 *
 * const resource = 'https://mcp.example.com/mcp';
 * app.use(tesseraProtectedResource({ resource, authorizationServers: [`${issuer}/projects/${apiKeyId}`] }));
 * app.use('/mcp', tesseraAuth({ issuer, apiKeyId, resource }, { resourceMetadata: protectedResourceMetadataUrl(resource) }));
 * ```
 */
export function tesseraProtectedResource(options: ProtectedResourceOptions): RequestHandler {
  const { paths, body, headers } = metadataAnswer(options);
  return (req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !paths.includes(req.path)) return next();
    res.status(200).set(headers).send(body);
  };
}

function view(req: Request): RequestView<Request> {
  return { request: req, method: req.method, header: (name) => req.get(name) };
}

function send(res: Response, answer: ErrorAnswer): void {
  res.status(answer.status);
  if (answer.headers) res.set(answer.headers);
  res.json(answer.body);
}
