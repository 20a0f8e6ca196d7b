/**
 * `@tessera/ssr/express` — Express middleware. Runtime: Node.js (it uses `Buffer` and Node's
 * request stream).
 *
 * @packageDocumentation
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { nodeCookies, webRequest } from './node-request.js';
import type { TesseraSession } from './session.js';
import type { TesseraSsr } from './tessera-ssr.js';

declare global {
  namespace Express {
    interface Request {
      /** The verified Tessera session (renewed if it was due), or null; set by `tesseraSsr`. */
      tesseraSession?: TesseraSession | null;
      /** The CSRF token to put in forms (`csrf_token`) or the `x-csrf-token` header; set by `tesseraSsr`. */
      tesseraCsrfToken?: string;
    }
  }
}

export type { TesseraSession } from './session.js';

/**
 * Express middleware: answers the auth routes under `basePath` (sign-in proxy, refresh, logout,
 * session) and, on every other request, puts the session in `req.tesseraSession` (renewing the
 * access token through the refresh cookie when due) and the CSRF token in `req.tesseraCsrfToken`.
 * Mount it before your routes and before any body parser of the auth paths — it reads the raw body
 * itself (a body already parsed by `express.json()` or `express.urlencoded()` is used as is).
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createTesseraSsr } from '@tessera/ssr';
 * import { requireSession, tesseraSsr } from '@tessera/ssr/express';
 *
 * const tessera = createTesseraSsr({ issuer, apiKeyId, appOrigin: 'https://shop.example' });
 * const app = express();
 * app.use(tesseraSsr(tessera));
 * app.get('/account', requireSession('/signin'), (req, res) => res.send(`Hello ${req.tesseraSession!.user.identifier}`));
 * ```
 */
export function tesseraSsr(tessera: TesseraSsr): RequestHandler {
  const base = tessera.paths.basePath;
  return (req: Request, res: Response, next: NextFunction) => {
    const run = async () => {
      if (req.path === base || req.path.startsWith(`${base}/`)) {
        const body = await rawBody(req);
        const answer = await tessera.handle(webRequest(req.method, req.originalUrl, req.headers, body), {
          clientAddress: req.ip,
        });
        if (answer) return send(res, answer);
      }
      const cookies = nodeCookies(req.headers.cookie, (value) => res.append('Set-Cookie', value));
      req.tesseraSession = await tessera.getSession(cookies);
      req.tesseraCsrfToken = tessera.csrfToken(cookies);
      next();
    };
    run().catch(next);
  };
}

/**
 * Lets only signed-in users through: others are redirected (`303`) to `signInPath` for page
 * requests, or get `401 {"error":"not_signed_in"}` when they ask for JSON. Use after `tesseraSsr`.
 *
 * @example
 * ```ts
 * app.get('/account', requireSession('/signin'), (req, res) => res.render('account', req.tesseraSession));
 * ```
 */
export function requireSession(signInPath = '/signin'): RequestHandler {
  return (req, res, next) => {
    if (req.tesseraSession) return next();
    if (req.accepts(['html', 'json']) === 'json') {
      res
        .status(401)
        .set('Cache-Control', 'no-store')
        .json({ error: 'not_signed_in', message: 'Sign in first' });
      return;
    }
    res.redirect(303, `${signInPath}?redirect_to=${encodeURIComponent(req.originalUrl)}`);
  };
}

async function send(res: Response, answer: globalThis.Response): Promise<void> {
  res.status(answer.status);
  answer.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.set(name, value);
  });
  for (const cookie of answer.headers.getSetCookie()) res.append('Set-Cookie', cookie);
  res.end(Buffer.from(await answer.arrayBuffer()));
}

async function rawBody(req: Request): Promise<string | undefined> {
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  const parsed: unknown = req.body;
  if (parsed !== undefined && typeof parsed === 'object' && parsed !== null) {
    // A body parser ran first: serialise what it parsed in the request's own format.
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('application/x-www-form-urlencoded')) {
      return new URLSearchParams(parsed as Record<string, string>).toString();
    }
    return JSON.stringify(parsed);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    // The handler refuses large bodies with 413; stop reading well before memory matters.
    if (size > 128 * 1024) break;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
