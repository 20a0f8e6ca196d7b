import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { badRequest } from '../../errors.js';

/**
 * The checks on a project's settings, shared by the service (HTTP and CLI) and the CLI's argument
 * parsers, which refuse a bad value before opening the database. Each throws a 400 TesseraError
 * whose detail names the value and what is expected.
 */

/**
 * The origin a native Android app reports in WebAuthn client data: the base64url SHA-256 of the
 * app's signing certificate. Passkeys made in the app are checked against it.
 */
export const ANDROID_ORIGIN = /^android:apk-key-hash:[A-Za-z0-9_-]{43}$/;

/**
 * A value an operator sent, as a refusal names it (the CLI's one-line errors, the operator API's
 * details): in double quotes, cut at 80 characters, with invisible, control and separator
 * characters other than the space escaped (`\u200b`), so that they show.
 */
export function shown(value: string): string {
  const cut = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  const escaped = cut.replace(/[\p{C}\p{Z}"\\]/gu, (c) => {
    if (c === ' ') return c;
    if (c === '"' || c === '\\') return `\\${c}`;
    return `\\u{${c.codePointAt(0)!.toString(16)}}`;
  });
  return `"${escaped}"`;
}

/** Longest project name, in characters. */
export const MAX_NAME_LENGTH = 100;

/** A project name: trimmed, 1 to 100 characters, no control characters. */
export function normaliseName(raw: string): string {
  const name = raw.trim();
  if (!name || name.length > MAX_NAME_LENGTH)
    throw badRequest(`a project name of 1 to ${MAX_NAME_LENGTH} characters is required`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(name))
    throw badRequest('a project name may not contain control characters');
  // A lone surrogate is no character: SQLite stored its bytes as invalid UTF-8.
  if (/\p{Cs}/u.test(name)) throw badRequest('a project name must be well-formed Unicode text');
  return name;
}

/**
 * Normalises an allowed origin: a web origin (`scheme://host[:port]`; paths and wildcards are
 * refused, and so are hosts no browser could be on) or an Android app origin
 * (`android:apk-key-hash:<base64url sha256>`, kept as given).
 */
export function normaliseOrigin(raw: string): string {
  // The URL parser trims white space and drops what IDNA ignores (a zero-width space in a host):
  // the origin stored would not be the one given.
  if (/[\p{C}\p{Z}]/u.test(raw))
    throw badRequest(`${shown(raw)} is not an origin: it contains a space, control or invisible character`);
  if (ANDROID_ORIGIN.test(raw)) return raw;
  const url = webOrigin(raw);
  // A browser's Origin never carries a user name or port 0: the URL parser would drop the one and
  // keep the other, storing an origin that was not the one given.
  if (url.username || url.password || url.port === '0')
    throw badRequest(`${shown(raw)} is not an origin like https://app.example.com (no user name, no port 0)`);
  if (!isOriginHost(url.hostname))
    throw badRequest(
      `${shown(raw)} does not name a host: each dot-separated label 1 to 63 letters, digits, hyphens or underscores, not starting or ending with a hyphen`,
    );
  return url.origin;
}

/**
 * An origin spelled as it is stored (`normaliseOrigin` without its checks of the host and of what
 * the URL parser drops): how an origin to remove is matched, so that one an earlier version
 * accepted can still be removed.
 */
export function originOf(raw: string): string {
  return ANDROID_ORIGIN.test(raw) ? raw : webOrigin(raw).origin;
}

/** `raw` parsed as an http(s) URL of a scheme, host and port only, or a 400. */
function webOrigin(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest(`${shown(raw)} is not an origin like https://app.example.com`);
  }
  if (
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.pathname.length > 1 ||
    url.search ||
    url.hash
  ) {
    throw badRequest(
      `${shown(raw)} is not an origin like https://app.example.com (scheme, host and port only)`,
    );
  }
  return url;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** An origin's host label: as LABEL, and the underscore some real host names carry. */
const ORIGIN_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/**
 * Whether a parsed URL's host (lower-cased and in punycode by the URL parser) is an IP address or
 * a host name a browser could be on. The URL parser takes `a..b`, `-x.example` or a trailing dot,
 * which no page's Origin header will ever carry.
 */
function isOriginHost(hostname: string): boolean {
  if (hostname.startsWith('[') || isIP(hostname) !== 0) return true;
  return hostname.length <= 253 && hostname.split('.').every((label) => ORIGIN_LABEL.test(label));
}

/**
 * A WebAuthn relying-party id: a domain name (WebAuthn §5.1.3 requires a valid domain string,
 * which browsers compare with the origin's host), lower-cased and in its ASCII (punycode) form.
 * IP addresses, ports, schemes, paths and trailing dots are refused.
 */
export function normaliseRpId(raw: string): string {
  const refuse = () =>
    badRequest(
      'the relying-party id is not a host name: give one such as app.example.com (no scheme, port or IP address)',
    );
  const trimmed = raw.trim();
  if (!trimmed || isIP(trimmed.replace(/^\[|\]$/g, '')) !== 0) throw refuse();
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (!ascii || ascii.length > 253) throw refuse();
  const labels = ascii.split('.');
  if (!labels.every((label) => LABEL.test(label)) || /^\d+$/.test(labels.at(-1)!)) throw refuse();
  return ascii;
}

/** Whether `rpId` may serve a page of `origin`: the origin's host is the RP id or under it. */
function servesOrigin(rpId: string, origin: string): boolean {
  const host = new URL(origin).hostname;
  return host === rpId || host.endsWith(`.${rpId}`);
}

/**
 * Refuses a relying-party id being set on a project with no origins at all: nothing could check it,
 * and any later origin would have to fit it. (Removing every origin of a project that has one is
 * allowed; passkeys then refuse until origins are given again.)
 */
export function checkRpIdHasOrigins(rpId: string | null, origins: readonly string[]): void {
  if (rpId !== null && origins.length === 0)
    throw badRequest('a relying-party id needs the origins it serves: give the project its origins too');
}

/**
 * Refuses a relying-party id that none of the project's web origins could use (a passkey made
 * for it could never be asserted from them). Projects with only app origins are not checked.
 */
export function checkRpIdServesOrigins(rpId: string | null, origins: readonly string[]): void {
  const web = origins.filter((o) => !ANDROID_ORIGIN.test(o));
  if (rpId === null || web.length === 0) return;
  if (!web.some((origin) => servesOrigin(rpId, origin))) {
    throw badRequest(
      `the relying-party id ${shown(rpId)} is not the host (or a parent domain) of any of the project's origins; give a relying-party id that matches them`,
    );
  }
}

/**
 * The first host of the web origins that can be a relying-party id (`normaliseRpId`: not an IP
 * address, every label well formed): the default relying-party id of a new project. Null when
 * none can (passkeys then need an explicit one): an origin such as `http://127.0.0.1:3000` is a
 * fine origin, but a browser refuses an IP address as a relying-party id.
 */
export function defaultRpId(origins: readonly string[]): string | null {
  for (const origin of origins) {
    if (ANDROID_ORIGIN.test(origin)) continue;
    try {
      return normaliseRpId(new URL(origin).hostname);
    } catch {
      // Not a host name: the next origin may be one.
    }
  }
  return null;
}

/**
 * The domain of the WebOTP line (`@<domain> #<code>`) of a project's SMS: the relying-party id
 * when it is the host of one of the project's web origins, else the first web origin's host;
 * undefined for a project without web origins. The browser offers the code only on a page whose
 * origin's host is exactly this domain (https://wicg.github.io/web-otp/#origin-bound-one-time-codes).
 */
export function webOtpDomain(project: {
  rp_id: string | null;
  origins: readonly string[];
}): string | undefined {
  const hosts = project.origins.filter((o) => !ANDROID_ORIGIN.test(o)).map((o) => new URL(o).hostname);
  if (project.rp_id !== null && hosts.includes(project.rp_id)) return project.rp_id;
  return hosts[0];
}
