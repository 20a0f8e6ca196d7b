/**
 * Redirect URIs: what may be registered, and whether a presented one matches (RFC 9700 §4.1.3:
 * exact string comparison), with the one exception of RFC 8252 §7.3: a loopback IP redirect of a
 * native app matches on any port. Nothing is normalised before comparing: `HTTPS://`, a trailing
 * slash, `/a/../cb`, a fragment or user-info are different strings and do not match.
 */

const LOOPBACK_HOSTS = ['127.0.0.1', '[::1]'];
const MAX_URI = 2000;

/** Why a URI cannot be registered, or undefined when it can. `kind` names it in the message. */
export function redirectUriProblem(uri: string, kind = 'redirect URI'): string | undefined {
  if (uri.length > MAX_URI) return `a ${kind} is at most ${MAX_URI} characters`;
  if (/\s/.test(uri) || [...uri].some((c) => c < ' ' || c === '\u007f'))
    return `a ${kind} has no spaces or control characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `a ${kind} must be an absolute URI`;
  }
  if (uri.includes('#')) return `a ${kind} has no fragment (RFC 6749 §3.1.2)`;
  if (url.username || url.password) return `a ${kind} has no user-info`;
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return url.hostname ? undefined : `a ${kind} names a host`;
  if (scheme === 'http') {
    if (LOOPBACK_HOSTS.includes(url.hostname) || url.hostname === 'localhost') return undefined;
    return `an http ${kind} must be on loopback (http://127.0.0.1, http://[::1] or http://localhost); use https`;
  }
  // RFC 8252 §7.1: private-use schemes are reverse domain names (com.example.app:/callback).
  if (/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme)) return undefined;
  return `a ${kind} uses https, http on loopback, or a private-use scheme with a period (com.example.app:/callback)`;
}

/** The part of a loopback redirect URI after its host and port, when `uri` is one. */
function loopbackRest(uri: string): { host: string; rest: string } | undefined {
  for (const host of LOOPBACK_HOSTS) {
    const prefix = `http://${host}`;
    if (!uri.startsWith(prefix)) continue;
    const match = /^(?::(\d{1,5}))?([/?].*)?$/.exec(uri.slice(prefix.length));
    if (!match) return undefined;
    return { host, rest: match[2] ?? '' };
  }
  return undefined;
}

/** Whether `presented` is one of `registered` (exact, or a loopback IP redirect on another port). */
export function matchRedirectUri(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const asked = loopbackRest(presented);
  if (!asked || presented.includes('#') || presented.includes('@')) return false;
  return registered.some((uri) => {
    const known = loopbackRest(uri);
    return known !== undefined && known.host === asked.host && known.rest === asked.rest;
  });
}
