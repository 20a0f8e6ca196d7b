import { createVerifier } from '@tessera/verify';
import { tesseraAuth } from '@tessera/verify/express';
import express, { type Express } from 'express';

export interface ApiOptions {
  /** Tessera's issuer URL, e.g. http://localhost:8080. */
  issuer: string;
  /** The project's API key id: the `aud` of its tokens. */
  apiKeyId: string;
  /** Browser origin allowed to call this API (the demo page). */
  allowedOrigin?: string;
  /** Ask Tessera whether the session was revoked, on every call (POST /verify). */
  online?: boolean;
}

/**
 * A sample backend: every /api route needs `Authorization: Bearer <access token>`; the
 * middleware verifies it against Tessera's JWKS and puts the claims on `req.tessera`.
 */
export function createApi(options: ApiOptions): Express {
  const verifier = createVerifier({
    issuer: options.issuer,
    apiKeyId: options.apiKeyId,
    ...(options.online ? { revocation: 'online' as const } : {}),
  });
  const app = express();
  app.disable('x-powered-by');

  app.use((req, res, next) => {
    if (options.allowedOrigin && req.headers.origin === options.allowedOrigin) {
      res.setHeader('access-control-allow-origin', options.allowedOrigin);
      res.setHeader('access-control-allow-headers', 'authorization, content-type');
      res.setHeader('vary', 'origin');
    }
    if (req.method === 'OPTIONS') {
      res.status(204).end();
      return;
    }
    next();
  });

  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.use('/api', tesseraAuth(verifier));

  app.get('/api/me', (req, res) => {
    const claims = req.tessera!;
    res.json({
      user: claims.sub,
      client_user_id: claims.client_user_id,
      identifier: claims.identifier,
      method: claims.authentication_method,
      session: claims.sid,
      expires_at: new Date(claims.exp * 1000).toISOString(),
    });
  });

  app.get('/api/greeting', (req, res) => {
    res.json({
      message: `Hello, ${req.tessera!.identifier}. This answer came from a backend that checked your token.`,
    });
  });

  return app;
}
