/**
 * Stable codes of {@link TesseraVerifyError}. Switch on these, never on messages; a code, once
 * published, keeps its meaning.
 *
 * - `missing_token` — no `Authorization: Bearer` header (HTTP 401)
 * - `invalid_token` — malformed, bad signature, unknown key, wrong algorithm, not an access token,
 *   missing claims, not yet valid (HTTP 401)
 * - `token_expired` — `exp` is in the past, beyond the clock tolerance (HTTP 401)
 * - `wrong_audience` — `aud` is not your API key id (HTTP 401)
 * - `wrong_issuer` — `iss` is not the configured issuer (HTTP 401)
 * - `token_revoked` — the session was revoked (online revocation check only, HTTP 401)
 * - `jwks_unavailable` — the issuer's signing keys could not be fetched (HTTP 503)
 * - `verification_unavailable` — the online revocation check could not be completed (HTTP 503)
 * - `insufficient_scope` — a valid token without a scope the route requires (`requiredScopes`, HTTP 403)
 * - `insufficient_claims` — a valid token whose claims fail a route's check (`claimEquals`,
 *   `claimIncludes`, `requireClaims`, `claimCheck`; HTTP 403)
 *
 * @example
 * ```ts
 * import type { VerifyErrorCode } from '@tessera/verify';
 *
 * const mustRefresh = (code: VerifyErrorCode) => code === 'token_expired';
 * ```
 */
export type VerifyErrorCode =
  | 'missing_token'
  | 'invalid_token'
  | 'token_expired'
  | 'wrong_audience'
  | 'wrong_issuer'
  | 'token_revoked'
  | 'jwks_unavailable'
  | 'verification_unavailable'
  | 'insufficient_scope'
  | 'insufficient_claims';

const STATUS: Readonly<Record<VerifyErrorCode, 401 | 403 | 503>> = {
  missing_token: 401,
  invalid_token: 401,
  token_expired: 401,
  wrong_audience: 401,
  wrong_issuer: 401,
  token_revoked: 401,
  jwks_unavailable: 503,
  verification_unavailable: 503,
  insufficient_scope: 403,
  insufficient_claims: 403,
};

/**
 * The one error class of `@tessera/verify`. Every failure of {@link Verifier.verify} is an instance
 * of it. `message` is safe to show to the caller of your API (it never contains the token); the
 * underlying error, if any, is kept in `cause` for your logs.
 *
 * @example
 * ```ts
 * import { TesseraVerifyError } from '@tessera/verify';
 *
 * try {
 *   const claims = await verifier.verify(token);
 * } catch (err) {
 *   if (err instanceof TesseraVerifyError && err.code === 'token_expired') {
 *     // ask the client to refresh its token
 *   }
 *   throw err;
 * }
 * ```
 */
export class TesseraVerifyError extends Error {
  /** Stable code identifying the failure. */
  readonly code: VerifyErrorCode;
  /**
   * HTTP status an API should answer with: 401 for token problems, 403 for a valid token that lacks
   * what the route requires, 503 when the issuer is unreachable.
   */
  readonly status: 401 | 403 | 503;
  /** For `insufficient_scope`: the space-separated scopes the route requires (RFC 6750 §3). */
  readonly scope: string | undefined;

  /**
   * @param code Stable code of the failure.
   * @param message Public description; must never contain the token.
   * @param options `cause` — the underlying error, for logs only; `scope` — the scopes required,
   *   for `insufficient_scope`.
   */
  constructor(code: VerifyErrorCode, message: string, options?: { cause?: unknown; scope?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TesseraVerifyError';
    this.code = code;
    this.status = STATUS[code];
    this.scope = options?.scope;
  }
}
