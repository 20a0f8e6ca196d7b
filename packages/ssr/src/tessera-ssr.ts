import { type CookieAdapter, type CookieJar, cookieJar, sessionCookies } from './cookies.js';
import { CSRF_FIELD, CSRF_HEADER, ensureCsrfToken } from './csrf.js';
import { handleAuthRequest } from './handler.js';
import { resolveOptions, type SsrOptions } from './options.js';
import { Renewer } from './renewal.js';
import { SessionStore, type TesseraSession } from './session.js';
import { type CallContext, TesseraApi } from './tessera-api.js';

/**
 * Server-side Tessera for one app, returned by {@link createTesseraSsr}. Framework-neutral: Web
 * `Request`/`Response` and a {@link CookieAdapter}. The Express, Fastify and Next.js helpers
 * (`@tessera/ssr/express`, `/fastify`, `/next`) are thin layers over it.
 *
 * @example
 * ```ts
 * const response = await tessera.handle(request); // the auth routes, or null
 * const jar = cookieJar(request.headers.get('cookie'));
 * const session = await tessera.getSession(jar);
 * ```
 */
export interface TesseraSsr {
  /**
   * Answers a request to the auth routes under `basePath` (`POST …/otp/start`, `…/otp/complete`,
   * `…/passkey/*`, `…/device/*`, `…/pin/*`, `…/refresh`, `…/logout`, `GET …/session`), or null
   * when the path is not one of them.
   *
   * @example
   * ```ts
   * export default { fetch: async (request: Request) => (await tessera.handle(request)) ?? render(request) };
   * ```
   */
  handle(request: Request, context?: CallContext): Promise<Response | null>;
  /**
   * The verified session of the cookies, or null. When the access token is missing or about to
   * expire and `cookies.set` exists, renews it first (one renewal per refresh token at a time in
   * this process) and sets the new cookies. Without `set`, only reads.
   *
   * @example
   * ```ts
   * const session = await tessera.getSession({ get: (n) => req.cookies[n], set: (n, v, o) => … });
   * ```
   */
  getSession(cookies: CookieAdapter): Promise<TesseraSession | null>;
  /**
   * The CSRF token to embed in forms (`<input type="hidden" name="csrf_token">`) or send as the
   * `x-csrf-token` header; set as a cookie first when the browser has none.
   *
   * @example
   * ```ts
   * const csrf = tessera.csrfToken(jar);
   * html`<input type="hidden" name="csrf_token" value="${csrf}">`;
   * ```
   */
  csrfToken(cookies: CookieAdapter): string;
  /**
   * Web-standard shortcut: the session of a `Request` and the jar that collected any renewed
   * cookies; append `jar.setCookies()` to your response.
   *
   * @example
   * ```ts
   * const { session, cookies } = await tessera.sessionOf(request);
   * const response = new Response(render(session));
   * for (const c of cookies.setCookies()) response.headers.append('set-cookie', c);
   * ```
   */
  sessionOf(request: Request): Promise<{ session: TesseraSession | null; cookies: CookieJar }>;
  /** Where the auth routes live and the names the CSRF token travels under. */
  readonly paths: { basePath: string; csrfHeader: string; csrfField: string };
  /** The cookie names in use (`__Host-tessera-access`, … or without the prefix in insecure dev mode). */
  readonly cookieNames: { access: string; refresh: string; csrf: string };
}

/**
 * Creates the server-side session layer for one app. Throws `TypeError` at once on bad options.
 *
 * @example
 * ```ts
 * import { createTesseraSsr } from '@tessera/ssr';
 *
 * export const tessera = createTesseraSsr({
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: process.env.TESSERA_API_KEY_ID!,
 *   appOrigin: 'https://shop.example',
 * });
 * ```
 */
export function createTesseraSsr(options: SsrOptions): TesseraSsr {
  const config = resolveOptions(options);
  const cookies = sessionCookies(config);
  const api = new TesseraApi(config);
  const renewer = new Renewer((token) => api.refresh(token), config.renewalMemoMs, config.now);
  const sessions = new SessionStore(config, cookies, renewer);
  const deps = { config, cookies, sessions, api };
  return {
    handle: (request, context) => handleAuthRequest(deps, request, context),
    getSession: (adapter) => sessions.get(adapter),
    csrfToken: (adapter) => ensureCsrfToken(adapter, cookies, config.refreshCookieMaxAge),
    async sessionOf(request) {
      const jar = cookieJar(request.headers.get('cookie'));
      return { session: await sessions.get(jar), cookies: jar };
    },
    paths: { basePath: config.basePath, csrfHeader: CSRF_HEADER, csrfField: CSRF_FIELD },
    cookieNames: { ...config.cookies },
  };
}
