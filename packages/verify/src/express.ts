import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';
import { type MiddlewareOptions, rejection, resolveMiddlewareOptions, toVerifier } from './http.js';
import type { Verifier, VerifierOptions } from './verifier.js';

declare global {
  namespace Express {
    interface Request {
      /** Claims of the verified Tessera access token, set by `tesseraAuth`. */
      tessera?: AccessTokenClaims;
    }
  }
}

export type { AccessTokenClaims } from './claims.js';
export type { MiddlewareOptions } from './http.js';

/**
 * Express middleware that requires a valid Tessera access token in `Authorization: Bearer …`.
 * On success the claims are in `req.tessera`; otherwise it answers 401 with a
 * `WWW-Authenticate: Bearer` challenge, or 503 when the issuer cannot be reached.
 *
 * @param verifier A verifier from `createVerifier`, or the options to create one.
 * @param options `realm` of the challenge, `onError` to log rejections.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { tesseraAuth } from '@tessera/verify/express';
 *
 * const app = express();
 * app.get('/me', tesseraAuth({ issuer: 'https://auth.example.com', apiKeyId: 'pk_…' }), (req, res) => {
 *   res.json({ user: req.tessera!.sub });
 * });
 * ```
 */
export function tesseraAuth(
  verifier: Verifier | VerifierOptions,
  options?: MiddlewareOptions,
): RequestHandler {
  const resolved = toVerifier(verifier);
  const { realm, onError } = resolveMiddlewareOptions(options);
  return (req: Request, res: Response, next: NextFunction) => {
    resolved
      .verifyAuthorization(req.headers.authorization)
      .then(
        (claims) => {
          req.tessera = claims;
          next();
        },
        (err: unknown) => {
          if (!(err instanceof TesseraVerifyError)) return next(err);
          onError(err);
          const { status, headers, body } = rejection(err, realm);
          res.status(status).set(headers).json(body);
        },
      )
      .catch(next);
  };
}
