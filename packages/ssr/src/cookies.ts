import { parseCookie, stringifySetCookie } from 'cookie';
import type { ResolvedOptions } from './options.js';

/**
 * The attributes `@tessera/ssr` gives a cookie. Every cookie is `Path=/` and `SameSite=Lax`;
 * the session cookies are `HttpOnly`; all are `Secure` unless `insecureLocalhostCookies` is on.
 *
 * @example
 * ```ts
 * const options: CookieOptions = { path: '/', httpOnly: true, secure: true, sameSite: 'lax', maxAge: 3600 };
 * ```
 */
export interface CookieOptions {
  path: '/';
  httpOnly: boolean;
  secure: boolean;
  sameSite: 'lax';
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
}

/**
 * How `@tessera/ssr` reads and writes cookies in your framework: `get` reads a request cookie,
 * `set` adds a `Set-Cookie` to the response. Leave `set` out where the response cannot carry
 * cookies (a React Server Component): the session is then only read, never renewed, because a
 * renewal whose new refresh token cannot be stored would end the session.
 *
 * @example
 * ```ts
 * const adapter: CookieAdapter = {
 *   get: (name) => req.cookies[name],
 *   set: (name, value, options) => res.cookie(name, value, { ...options, maxAge: options.maxAge * 1000 }),
 * };
 * ```
 */
export interface CookieAdapter {
  get(name: string): string | undefined;
  set?(name: string, value: string, options: CookieOptions): void;
}

/**
 * A {@link CookieAdapter} over a `Cookie` header that collects what is set as `Set-Cookie` header
 * values; a cookie it sets is what `get` answers afterwards.
 *
 * @example
 * ```ts
 * const jar = cookieJar(request.headers.get('cookie'));
 * const session = await tessera.getSession(jar);
 * for (const value of jar.setCookies()) response.headers.append('set-cookie', value);
 * ```
 */
export interface CookieJar extends CookieAdapter {
  set(name: string, value: string, options: CookieOptions): void;
  /** The `Set-Cookie` header values to send, in order. */
  setCookies(): string[];
  /** The `Cookie` header a request would now carry (for Next.js middleware to pass on). */
  cookieHeader(): string;
}

/**
 * Creates a {@link CookieJar} from a `Cookie` header value.
 *
 * @example
 * ```ts
 * const jar = cookieJar(request.headers.get('cookie'));
 * ```
 */
export function cookieJar(header: string | null | undefined): CookieJar {
  const current = new Map<string, string>();
  for (const [name, value] of Object.entries(parseCookie(header ?? ''))) {
    if (value !== undefined) current.set(name, value);
  }
  const out = new Map<string, string>();
  return {
    get: (name) => current.get(name),
    set(name, value, options) {
      if (options.maxAge === 0) current.delete(name);
      else current.set(name, value);
      // One Set-Cookie per name: the last write wins, as the browser would keep it.
      out.delete(name);
      out.set(name, stringifySetCookie(name, value, options));
    },
    setCookies: () => [...out.values()],
    cookieHeader: () =>
      [...current].map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('; '),
  };
}

export interface SessionCookies {
  readonly names: ResolvedOptions['cookies'];
  options(maxAge: number, httpOnly?: boolean): CookieOptions;
}

export function sessionCookies(config: ResolvedOptions): SessionCookies {
  return {
    names: config.cookies,
    options: (maxAge, httpOnly = true) => ({
      path: '/',
      httpOnly,
      secure: config.secure,
      sameSite: 'lax',
      maxAge: Math.max(0, Math.floor(maxAge)),
    }),
  };
}
