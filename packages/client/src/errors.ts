import { type ErrorCode, ErrorCodes } from '@tessera/core';

/**
 * Codes the SDK adds to the service's own ({@link ErrorCodes} of `@tessera/core`):
 *
 * - `network_error` — the service could not be reached, or did not answer in time
 * - `not_signed_in` — the call needs a signed-in user and there is none
 * - `no_device_key` — device or PIN sign-in, but this device holds no registered key
 * - `webauthn_unavailable` — no WebAuthn here (no `navigator.credentials`, none injected)
 * - `webauthn_cancelled` — the user dismissed the passkey prompt, it timed out, or it was cancelled
 *   (an `AbortSignal`, or a newer passkey ceremony replacing a pending autofill one)
 * - `passkey_not_available` — the passkey prompt ended without a passkey on a device that has
 *   never used one for this project here: most likely there is none yet (browsers do not say
 *   whether the user dismissed the prompt or had nothing to offer)
 * - `webauthn_origin_mismatch` — the page's host is not the relying-party id nor under it (the
 *   browser's SecurityError), e.g. a page opened at 127.0.0.1: the detail says what to open instead
 * - `lock_timeout` — another tab held the token-renewal lock for too long
 *
 * @example
 * ```ts
 * import { ClientErrorCodes } from '@tessera/client';
 *
 * if (error.code === ClientErrorCodes.networkError) showOfflineBanner();
 * ```
 */
export const ClientErrorCodes = {
  networkError: 'network_error',
  notSignedIn: 'not_signed_in',
  noDeviceKey: 'no_device_key',
  webauthnUnavailable: 'webauthn_unavailable',
  webauthnCancelled: 'webauthn_cancelled',
  passkeyNotAvailable: 'passkey_not_available',
  webauthnOriginMismatch: 'webauthn_origin_mismatch',
  lockTimeout: 'lock_timeout',
} as const;

/**
 * Every code a {@link TesseraClientError} can carry: the service's codes plus the SDK's own.
 *
 * @example
 * ```ts
 * import type { ClientErrorCode } from '@tessera/client';
 *
 * const retryable = (code: ClientErrorCode) => code === 'network_error' || code === 'rate_limited';
 * ```
 */
export type ClientErrorCode = ErrorCode | (typeof ClientErrorCodes)[keyof typeof ClientErrorCodes];

/**
 * The one error class of the SDK. Switch on `code` (stable), never on the message. `detail` is
 * the service's public text or the SDK's; it never contains a token, code, PIN or key.
 *
 * @example
 * ```ts
 * import { TesseraClientError } from '@tessera/client';
 *
 * try {
 *   await tessera.otp.complete(challengeId, code);
 * } catch (error) {
 *   if (error instanceof TesseraClientError && error.code === 'invalid_code') askAgain();
 *   else throw error;
 * }
 * ```
 */
export class TesseraClientError extends Error {
  override name = 'TesseraClientError';
  /** Stable code: one of `@tessera/core`'s ErrorCodes or {@link ClientErrorCodes}. */
  readonly code: ClientErrorCode;
  /** HTTP status of the service's answer, when there was one. */
  readonly status: number | undefined;
  /** Public description (also the `message`). */
  readonly detail: string;
  /** Seconds to wait before trying again (rate limits, resend throttling), when the service said. */
  readonly retryAfter: number | undefined;
  /** The RFC 6749 `error` of an `/oauth/*` answer, e.g. `invalid_grant`. */
  readonly oauthError: string | undefined;
  /** Wrong PINs (or codes) left before the lock, when the service said (`invalid_pin`). */
  readonly attemptsLeft: number | undefined;

  constructor(
    code: ClientErrorCode,
    detail: string,
    options: {
      status?: number;
      retryAfter?: number;
      oauthError?: string;
      attemptsLeft?: number;
      cause?: unknown;
    } = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.detail = detail;
    this.status = options.status;
    this.retryAfter = options.retryAfter;
    this.oauthError = options.oauthError;
    this.attemptsLeft = options.attemptsLeft;
  }
}

/**
 * True when `error` is a {@link TesseraClientError}, optionally with the given code.
 *
 * @example
 * ```ts
 * import { isTesseraClientError } from '@tessera/client';
 *
 * if (isTesseraClientError(error, 'pin_locked')) offerOtpSignIn();
 * ```
 */
export function isTesseraClientError(error: unknown, code?: ClientErrorCode): error is TesseraClientError {
  return error instanceof TesseraClientError && (code === undefined || error.code === code);
}

const KNOWN_CODES: ReadonlySet<string> = new Set<string>([
  ...Object.values(ErrorCodes),
  ...Object.values(ClientErrorCodes),
]);

/** An RFC 6749 error → the closest stable code. */
const OAUTH_CODES: Readonly<Record<string, ErrorCode>> = {
  invalid_grant: ErrorCodes.invalidToken,
  invalid_token: ErrorCodes.invalidToken,
  invalid_client: ErrorCodes.invalidClient,
  unauthorized_client: ErrorCodes.invalidClient,
  slow_down: ErrorCodes.rateLimited,
  server_error: ErrorCodes.internalError,
  temporarily_unavailable: ErrorCodes.serviceUnavailable,
};

/**
 * The typed error for a non-2xx answer: a problem document, an OAuth error, or neither. `origin`
 * is the page's own, named in the detail of `origin_not_allowed` (the service never quotes it).
 */
export function errorFromAnswer(status: number, body: unknown, origin?: string): TesseraClientError {
  const doc = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  if (typeof doc.code === 'string') {
    const code = KNOWN_CODES.has(doc.code) ? (doc.code as ClientErrorCode) : fallbackCode(status);
    const given = typeof doc.detail === 'string' ? doc.detail : `the service answered ${status}`;
    const detail =
      code === ErrorCodes.originNotAllowed && origin ? `${given} (this page's origin: ${origin})` : given;
    const retryAfter = typeof doc.retry_after === 'number' ? doc.retry_after : undefined;
    const attemptsLeft = typeof doc.attempts_left === 'number' ? doc.attempts_left : undefined;
    return new TesseraClientError(code, detail, {
      status,
      ...(retryAfter !== undefined && { retryAfter }),
      ...(attemptsLeft !== undefined && { attemptsLeft }),
    });
  }
  if (typeof doc.error === 'string') {
    const detail = typeof doc.error_description === 'string' ? doc.error_description : doc.error;
    return new TesseraClientError(OAUTH_CODES[doc.error] ?? fallbackCode(status), detail, {
      status,
      oauthError: doc.error,
    });
  }
  return new TesseraClientError(fallbackCode(status), `the service answered ${status}`, { status });
}

function fallbackCode(status: number): ErrorCode {
  if (status === 401) return ErrorCodes.unauthorized;
  if (status === 403) return ErrorCodes.forbidden;
  if (status === 404) return ErrorCodes.notFound;
  if (status === 429) return ErrorCodes.rateLimited;
  if (status === 502 || status === 503 || status === 504) return ErrorCodes.serviceUnavailable;
  if (status >= 500) return ErrorCodes.internalError;
  return ErrorCodes.invalidRequest;
}
