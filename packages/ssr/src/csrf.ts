import type { CookieAdapter, SessionCookies } from './cookies.js';
import { TesseraSsrError } from './errors.js';
import type { ResolvedOptions } from './options.js';
import { constantTimeEqual, randomToken } from './web-crypto.js';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** The header a script sends the CSRF token in; forms send the field `csrf_token`. */
export const CSRF_HEADER = 'x-csrf-token';
export const CSRF_FIELD = 'csrf_token';

/** The CSRF token of this browser: the one in its cookie, else a new one set through `cookies.set`. */
export function ensureCsrfToken(cookies: CookieAdapter, names: SessionCookies, maxAge: number): string {
  const current = cookies.get(names.names.csrf);
  if (current !== undefined && TOKEN.test(current)) return current;
  return rotateCsrfToken(cookies, names, maxAge);
}

/** A new CSRF token (after sign-in and logout, so a token learnt before does not outlive them). */
export function rotateCsrfToken(cookies: CookieAdapter, names: SessionCookies, maxAge: number): string {
  const token = randomToken(32);
  // Readable by the page's scripts on purpose (double submit): it is not a credential by itself.
  cookies.set?.(names.names.csrf, token, names.options(maxAge, false));
  return token;
}

/**
 * Refuses a state-changing request that may come from another site. Two independent checks:
 *
 * 1. **Where from.** A browser names the page's origin in `Origin` and the relation in
 *    `Sec-Fetch-Site`; a request whose `Origin` is not trusted, or that `Sec-Fetch-Site` marks as
 *    not same-origin without a trusted `Origin`, is refused. Clients that send neither (old browsers,
 *    scripts) rely on check 2 alone.
 * 2. **Double submit.** The request must repeat the token of the CSRF cookie in the `x-csrf-token`
 *    header or the `csrf_token` form field. Another site can make the browser send the cookie but
 *    cannot read it, so it cannot repeat it; the `__Host-` prefix stops a sibling subdomain from
 *    planting a cookie of its own choosing.
 *
 * In development (a loopback `appOrigin`) a refused origin is named together with the ones
 * expected — `127.0.0.1` against `localhost` is the usual slip — and also written to the console;
 * in production the answer only says the origin is not trusted.
 */
export function checkCsrf(
  request: Request,
  cookies: CookieAdapter,
  names: SessionCookies,
  config: Pick<ResolvedOptions, 'trustedOrigins' | 'development'>,
  submitted: string | undefined,
): void {
  const origin = request.headers.get('origin');
  const site = request.headers.get('sec-fetch-site');
  const originTrusted = origin !== null && config.trustedOrigins.has(origin);
  if (origin !== null && !originTrusted) {
    if (!config.development) throw refused('the request comes from another origin');
    const expected = [...config.trustedOrigins].join(', ');
    const why = `the request comes from ${origin}, but the app's origin is ${expected} (appOrigin, trustedOrigins): open the app at that address, or add ${origin} to trustedOrigins`;
    console.warn(`@tessera/ssr: refused a POST to ${new URL(request.url).pathname}: ${why}`);
    throw refused(why);
  }
  if (site !== null && site !== 'same-origin' && !originTrusted) {
    throw refused('the request comes from another site');
  }
  const expected = cookies.get(names.names.csrf);
  if (expected === undefined || !TOKEN.test(expected)) throw refused('the CSRF cookie is missing');
  if (typeof submitted !== 'string' || !constantTimeEqual(submitted, expected)) {
    throw refused('the CSRF token is missing or does not match');
  }
}

const refused = (why: string) => new TesseraSsrError(403, 'csrf_failed', `Refused: ${why}`);
