import type { MiddlewareHandler } from 'hono';
import type { AccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';
import { type MiddlewareOptions, rejection, resolveMiddlewareOptions, toVerifier } from './http.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** Claims of the verified Tessera access token, set by `tesseraAuth`. */
    tessera: AccessTokenClaims;
  }
}

export type { AccessTokenClaims } from './claims.js';
export type { MiddlewareOptions } from './http.js';

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
 * Hono middleware that requires a valid Tessera access token in `Authorization: Bearer …`.
 * On success the claims are in `c.get('tessera')`; otherwise it answers 401 with a
 * `WWW-Authenticate: Bearer` challenge, or 503 when the issuer cannot be reached.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm` of the challenge, `onError` to log rejections.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { tesseraAuth } from '@tessera/verify/hono';
 *
 * const app = new Hono();
 * app.use('/api/*', tesseraAuth({ issuer: 'https://auth.example.com', apiKeyId: 'pk_…' }));
 * app.get('/api/me', (c) => c.json({ user: c.get('tessera').sub }));
 * ```
 */
export function tesseraAuth(
  verifier: Verifier | VerifierOptions,
  options?: MiddlewareOptions,
): MiddlewareHandler<TesseraEnv> {
  const resolved = toVerifier(verifier);
  const { realm, onError } = resolveMiddlewareOptions(options);
  return async (c, next) => {
    let claims: AccessTokenClaims;
    try {
      claims = await resolved.verifyAuthorization(c.req.header('Authorization'));
    } catch (err) {
      if (!(err instanceof TesseraVerifyError)) throw err;
      onError(err);
      const { status, headers, body } = rejection(err, realm);
      return c.json(body, status, headers);
    }
    c.set('tessera', claims);
    await next();
    return undefined;
  };
}
