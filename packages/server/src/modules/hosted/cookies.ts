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

/**
 * The hosted pages' cookie names. On https they carry the `__Host-` prefix: Secure, no Domain,
 * Path=/, so a sibling subdomain cannot plant one (cookie injection of an attacker's session).
 */
export function cookieNames(secure: boolean) {
  const prefix = secure ? '__Host-' : '';
  return {
    /** Binds pending authorization requests to this browser (login CSRF: see SECURITY.md). */
    binding: `${prefix}tessera_authz`,
    /** The hosted session of one project (a browser may be signed in to several). */
    hosted: (projectId: string) => `${prefix}tessera_sso_${sha256(projectId).slice(0, 12)}`,
  };
}

/** A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, Secure when the issuer is https. */
export function setCookie(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${name}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}
