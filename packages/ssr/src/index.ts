/**
 * `@tessera/ssr` — Tessera sessions for server-rendered apps. The refresh token lives in an
 * `HttpOnly; Secure; SameSite=Lax` cookie and is used only by your server; sign-in calls are proxied
 * so the browser never holds it. Framework helpers: `@tessera/ssr/express`, `@tessera/ssr/fastify`,
 * `@tessera/ssr/next`.
 *
 * Runtimes: Web `Request`/`Response` and Web Crypto only (no `node:` module), so this entry runs on
 * Node.js ≥ 20.19, Next.js middleware and `proxy.ts` (Edge and Node.js runtimes), Cloudflare
 * Workers, Deno and Bun.
 *
 * @packageDocumentation
 */
export { type CookieAdapter, type CookieJar, type CookieOptions, cookieJar } from './cookies.js';
export { type SsrErrorCode, TesseraSsrError } from './errors.js';
export type { SsrOptions } from './options.js';
export type { SessionUser, TesseraSession } from './session.js';
export type { CallContext } from './tessera-api.js';
export { createTesseraSsr, type TesseraSsr } from './tessera-ssr.js';
