import { sha256 } from '../../crypto/hash.js';

/** The cookies of a request, by name (the first of a repeated name wins). */
export function readCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

/** The browser-binding cookie of pending authorization requests (login CSRF: see SECURITY.md). */
export const BINDING_COOKIE = 'tessera_authz';

/** The hosted session cookie of one project (a browser may be signed in to several projects). */
export const hostedCookieName = (projectId: string): string =>
  `tessera_sso_${sha256(projectId).slice(0, 12)}`;

/** A `Set-Cookie` value: HttpOnly, SameSite=Lax, Secure when the issuer is https, path /oauth. */
export function setCookie(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${name}=${value}`,
    'Path=/oauth',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}
