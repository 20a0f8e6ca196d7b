/**
 * `@tessera/ssr/fastify` — Fastify plugin and hook. Runtime: Node.js (it uses `Buffer`).
 *
 * @packageDocumentation
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { nodeCookies, webRequest } from './node-request.js';
import type { TesseraSession } from './session.js';
import type { TesseraSsr } from './tessera-ssr.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified Tessera session (renewed if it was due), or null; set by the `tesseraSession` hook. */
    tesseraSession?: TesseraSession | null;
    /** The CSRF token to put in forms or the `x-csrf-token` header; set by the `tesseraSession` hook. */
    tesseraCsrfToken?: string;
  }
}

export type { TesseraSession } from './session.js';

/**
 * A Fastify plugin with the auth routes under `basePath` (sign-in proxy, refresh, logout,
 * session). It keeps its own body parsing inside its scope, so your app's parsers are untouched.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { tesseraRoutes, tesseraSession } from '@tessera/ssr/fastify';
 *
 * const app = Fastify();
 * await app.register(tesseraRoutes(tessera));
 * app.register(async (pages) => {
 *   pages.addHook('onRequest', tesseraSession(tessera));
 *   pages.get('/account', async (request) => request.tesseraSession?.user ?? null);
 * });
 * ```
 */
export function tesseraRoutes(tessera: TesseraSsr): (scope: FastifyInstance) => Promise<void> {
  return async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, body, done) =>
      done(null, body),
    );
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const body = typeof request.body === 'string' ? request.body : undefined;
      const answer = await tessera.handle(webRequest(request.method, request.url, request.headers, body), {
        clientAddress: request.ip,
      });
      if (!answer) return reply.code(404).send({ error: 'not_found', message: 'No such auth route' });
      reply.code(answer.status);
      answer.headers.forEach((value, name) => {
        if (name !== 'set-cookie') reply.header(name, value);
      });
      for (const cookie of answer.headers.getSetCookie()) reply.header('set-cookie', cookie);
      return reply.send(Buffer.from(await answer.arrayBuffer()));
    };
    scope.route({ method: ['GET', 'POST'], url: `${tessera.paths.basePath}/*`, handler });
  };
}

/**
 * The hook that puts the session in `request.tesseraSession` (renewing the access token through the
 * refresh cookie when due, the new cookies added to the reply) and the CSRF token in
 * `request.tesseraCsrfToken`. Use it as `onRequest` or `preHandler` of your pages' scope.
 *
 * @example
 * ```ts
 * app.addHook('onRequest', tesseraSession(tessera));
 * ```
 */
export function tesseraSession(
  tessera: TesseraSsr,
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    // Fastify appends repeated set-cookie headers instead of replacing them.
    const cookies = nodeCookies(request.headers.cookie, (value) => reply.header('set-cookie', value));
    request.tesseraSession = await tessera.getSession(cookies);
    request.tesseraCsrfToken = tessera.csrfToken(cookies);
  };
}
