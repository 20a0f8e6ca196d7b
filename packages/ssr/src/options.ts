import { createVerifier, type Verifier, type VerifierOptions } from '@tessera/verify';

/**
 * Options of {@link createTesseraSsr}. `issuer`, `apiKeyId` and `appOrigin` are required.
 *
 * @example
 * ```ts
 * const options: SsrOptions = {
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: process.env.TESSERA_API_KEY_ID!,
 *   appOrigin: 'https://shop.example',
 * };
 * ```
 */
export interface SsrOptions {
  /** The Tessera service's base URL, exactly as in the tokens' `iss`, e.g. `https://auth.example.com`. */
  issuer: string;
  /** Your project's API key id. */
  apiKeyId: string;
  /**
   * Your app's public origin as browsers see it, e.g. `https://shop.example`. State-changing calls
   * must come from it (Origin check). An `http:` origin is accepted only for `localhost`,
   * `127.0.0.1` or `[::1]`.
   */
  appOrigin: string;
  /** Other origins allowed to post to the auth routes (e.g. a second domain of the same app). */
  trustedOrigins?: string[];
  /** Where the auth routes are mounted. Default `/auth`. */
  basePath?: string;
  /**
   * Development only: drop `Secure` (and the `__Host-` prefix) from the cookies so that a browser
   * on `http://localhost` keeps them. Refused unless `appOrigin` is an `http://localhost` origin.
   * Default false: every cookie is `Secure`.
   */
  insecureLocalhostCookies?: boolean;
  /** Base of the cookie names. Default `tessera` (`__Host-tessera-refresh`, …). */
  cookieName?: string;
  /**
   * Seconds the refresh cookie is kept by the browser. Default 30 days (the refresh token's
   * absolute lifetime at the service, which still decides).
   */
  refreshCookieMaxAge?: number;
  /** Renew when the access token has less than this many seconds left. Default 60. */
  renewMarginSeconds?: number;
  /**
   * Seconds a renewal's result is kept in this process to answer requests that still carry the
   * rotated refresh token (the browser had not yet received the new cookie). Keep it at or below
   * the service's `TESSERA_REFRESH_GRACE`. Default 10.
   */
  renewalMemoSeconds?: number;
  /** Where a form sign-in redirects when it gives no `redirect_to`. Default `/`. */
  afterSignIn?: string;
  /** Where a form logout redirects when it gives no `redirect_to`. Default `/`. */
  afterSignOut?: string;
  /** Where a failed form post redirects (with `?error=code`) when it gives no `error_to`. Default `/`. */
  errorPage?: string;
  /** A verifier from `@tessera/verify`, or extra options for the one created here. */
  verifier?: Verifier | Omit<VerifierOptions, 'issuer' | 'apiKeyId'>;
  /**
   * Send the browser's address to Tessera as `X-Forwarded-For`, so its per-IP limits count each
   * user apart. Only useful when the service trusts your app servers (`TESSERA_TRUST_PROXY`).
   * Default false.
   */
  forwardClientAddress?: boolean;
  /** The `fetch` used to call Tessera. Default the global `fetch`. */
  fetch?: typeof globalThis.fetch;
  /**
   * Milliseconds before a call to Tessera is abandoned: a whole number from 1 to 120 000 (two
   * minutes). Default 10 000. Anything else is refused at construction with a `TypeError`.
   */
  timeout?: number;
  /** The clock in milliseconds. Default `Date.now`. */
  now?: () => number;
}

export interface CookieNames {
  access: string;
  refresh: string;
  csrf: string;
}

export interface ResolvedOptions {
  issuer: string;
  apiKeyId: string;
  appOrigin: string;
  trustedOrigins: ReadonlySet<string>;
  /** `appOrigin` is a loopback origin: errors may say more (which origin was expected). */
  development: boolean;
  basePath: string;
  secure: boolean;
  cookies: CookieNames;
  refreshCookieMaxAge: number;
  renewMarginMs: number;
  renewalMemoMs: number;
  afterSignIn: string;
  afterSignOut: string;
  errorPage: string;
  verifier: Verifier;
  forwardClientAddress: boolean;
  fetch: typeof globalThis.fetch;
  timeout: number;
  now: () => number;
}

const LOCALHOST = new Set(['localhost', '127.0.0.1', '[::1]']);
const COOKIE_NAME = /^[A-Za-z0-9_-]{1,40}$/;

// Fails fast, once, with a message that says what to fix.
export function resolveOptions(options: SsrOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('createTesseraSsr needs an options object');
  const { issuer, apiKeyId } = options;
  if (typeof issuer !== 'string' || !URL.canParse(issuer) || issuer.endsWith('/')) {
    throw new TypeError(
      '"issuer" must be the Tessera URL without a trailing "/", e.g. https://auth.example.com',
    );
  }
  if (typeof apiKeyId !== 'string' || apiKeyId === '') {
    throw new TypeError('"apiKeyId" must be your project\'s API key id');
  }
  const appOrigin = origin(options.appOrigin, 'appOrigin');
  const appUrl = new URL(appOrigin);
  const insecure = options.insecureLocalhostCookies === true;
  if (appUrl.protocol === 'http:' && !LOCALHOST.has(appUrl.hostname)) {
    throw new TypeError('"appOrigin" must be https (http is accepted for localhost only)');
  }
  if (insecure && (appUrl.protocol !== 'http:' || !LOCALHOST.has(appUrl.hostname))) {
    throw new TypeError('"insecureLocalhostCookies" is for an http://localhost appOrigin only');
  }
  const basePath = options.basePath ?? '/auth';
  if (!/^\/[A-Za-z0-9._~\-/]*[^/]$/.test(basePath)) {
    throw new TypeError('"basePath" must be a path such as /auth (no trailing "/")');
  }
  const base = options.cookieName ?? 'tessera';
  if (!COOKIE_NAME.test(base)) throw new TypeError('"cookieName" must be 1-40 letters, digits, "-" or "_"');
  // __Host-: only the exact host, Path=/, Secure — a sibling subdomain cannot plant or shadow them.
  const prefix = insecure ? '' : '__Host-';
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw new TypeError('"fetch" must be a function');
  return {
    issuer,
    apiKeyId,
    appOrigin,
    trustedOrigins: new Set([
      appOrigin,
      ...(options.trustedOrigins ?? []).map((o) => origin(o, 'trustedOrigins')),
    ]),
    development: LOCALHOST.has(appUrl.hostname),
    basePath,
    secure: !insecure,
    cookies: {
      access: `${prefix}${base}-access`,
      refresh: `${prefix}${base}-refresh`,
      csrf: `${prefix}${base}-csrf`,
    },
    refreshCookieMaxAge: seconds(options.refreshCookieMaxAge, 30 * 86400, 'refreshCookieMaxAge'),
    renewMarginMs: seconds(options.renewMarginSeconds, 60, 'renewMarginSeconds') * 1000,
    renewalMemoMs: seconds(options.renewalMemoSeconds, 10, 'renewalMemoSeconds') * 1000,
    afterSignIn: localPath(options.afterSignIn ?? '/', 'afterSignIn'),
    afterSignOut: localPath(options.afterSignOut ?? '/', 'afterSignOut'),
    errorPage: localPath(options.errorPage ?? '/', 'errorPage'),
    verifier: toVerifier(options.verifier, issuer, apiKeyId, fetchImpl, options.now),
    forwardClientAddress: options.forwardClientAddress === true,
    fetch: fetchImpl,
    timeout: timeoutMs(options.timeout),
    now: options.now ?? Date.now,
  };
}

function toVerifier(
  given: SsrOptions['verifier'],
  issuer: string,
  apiKeyId: string,
  fetchImpl: typeof globalThis.fetch,
  now: (() => number) | undefined,
): Verifier {
  if (given && typeof (given as Verifier).verify === 'function') return given as Verifier;
  return createVerifier({
    fetch: fetchImpl,
    ...(now ? { now } : {}),
    ...(given as Omit<VerifierOptions, 'issuer' | 'apiKeyId'> | undefined),
    issuer,
    apiKeyId,
  });
}

function origin(value: unknown, name: string): string {
  if (typeof value !== 'string' || !URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
    throw new TypeError(`"${name}" must be an http(s) origin such as https://shop.example`);
  }
  const url = new URL(value);
  if (url.origin !== value.replace(/\/$/, '')) {
    throw new TypeError(`"${name}" must be an origin only (scheme, host, port), got a path or query`);
  }
  return url.origin;
}

function seconds(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`"${name}" must be a non-negative number`);
  }
  return value;
}

/** The longest `timeout` accepted: a call held longer than this is a misconfiguration (e.g. seconds read as minutes). */
export const MAX_TIMEOUT_MS = 120_000;

// 0 or a negative number would abandon every call at once; a fraction, NaN or Infinity is a mistake.
function timeoutMs(value: unknown): number {
  if (value === undefined) return 10_000;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw new TypeError(
      `"timeout" must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS} (default 10000), got ${typeof value === 'number' ? String(value) : typeof value}`,
    );
  }
  return value;
}

/**
 * A path on this site: starts with one "/", never "//" or "/\" (which browsers read as another host),
 * and still so once dot segments are resolved: `/a/..//evil.test` and `/%2e//evil.test` become
 * `//evil.test` when parsed as a URL, which is what the form redirects do.
 */
export function isLocalPath(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048 || !/^\/(?![/\\])[^\s\\]*$/.test(value)) return false;
  const resolved = new URL(value, 'http://x');
  return resolved.origin === 'http://x' && !resolved.pathname.startsWith('//');
}

function localPath(value: string, name: string): string {
  if (!isLocalPath(value)) throw new TypeError(`"${name}" must be a path on this site, such as /account`);
  return value;
}
