/**
 * Stable codes of {@link TesseraSsrError}, sent as `error` in the JSON answers of the auth routes
 * and as `?error=` when a form post is redirected back. Switch on these, never on messages.
 *
 * - `csrf_failed` — the Origin, `Sec-Fetch-Site` or CSRF token check refused the request (403)
 * - `bad_request` — the body is not JSON or a form, or a field is missing or of the wrong type (400)
 * - `not_signed_in` — the call needs a session and the cookies hold none (401)
 * - `not_found` — no auth route at this path and method (404)
 * - `upstream_unavailable` — Tessera could not be reached or failed (502)
 * - any code Tessera itself answered with (e.g. `invalid_code`, `rate_limited`), with its status
 *
 * @example
 * ```ts
 * import type { SsrErrorCode } from '@tessera/ssr';
 *
 * const retryable = (code: SsrErrorCode) => code === 'upstream_unavailable';
 * ```
 */
export type SsrErrorCode =
  | 'csrf_failed'
  | 'bad_request'
  | 'not_signed_in'
  | 'not_found'
  | 'upstream_unavailable'
  | (string & {});

/**
 * The one error class of `@tessera/ssr`. `message` is safe to show (never a token, code or PIN);
 * `cause` keeps the underlying error for your logs.
 *
 * @example
 * ```ts
 * import { TesseraSsrError } from '@tessera/ssr';
 *
 * try {
 *   session = await tessera.getSession(cookies);
 * } catch (err) {
 *   if (err instanceof TesseraSsrError && err.status === 502) return renderMaintenancePage();
 *   throw err;
 * }
 * ```
 */
export class TesseraSsrError extends Error {
  /** Stable code of the failure. */
  readonly code: SsrErrorCode;
  /** HTTP status the auth routes answer with. */
  readonly status: number;

  /**
   * @param status HTTP status to answer with.
   * @param code Stable code.
   * @param message Public description; never contains a secret.
   */
  constructor(status: number, code: SsrErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TesseraSsrError';
    this.status = status;
    this.code = code;
  }
}
