import { type ErrorCode, ErrorCodes } from '@tessera/core';

/**
 * The RFC 6749 / RFC 7591 `error` values that `/v1/clients` (OAuth client registration and
 * management, RFC 7591/7592) answers with instead of a problem document; the error's `code` is the
 * value itself.
 *
 * @example
 * ```ts
 * import { RegistrationErrorCodes } from '@tessera/admin';
 *
 * if (error.code === RegistrationErrorCodes.invalidRedirectUri) showField('redirect_uris');
 * ```
 */
export const RegistrationErrorCodes = {
  invalidRedirectUri: 'invalid_redirect_uri',
  invalidClientMetadata: 'invalid_client_metadata',
  invalidRequest: 'invalid_request',
  invalidClient: 'invalid_client',
  invalidToken: 'invalid_token',
  slowDown: 'slow_down',
  temporarilyUnavailable: 'temporarily_unavailable',
  serverError: 'server_error',
} as const;

/**
 * Codes the client adds to the service's own:
 *
 * - `network_error` — the service could not be reached (after the retries the call allows)
 * - `timeout` — no answer within the `timeout` option (after the retries the call allows)
 * - `invalid_response` — a success answer that is not what the API documents (not JSON)
 *
 * @example
 * ```ts
 * import { AdminErrorCodes } from '@tessera/admin';
 *
 * if (error.code === AdminErrorCodes.networkError) retryLater();
 * ```
 */
export const AdminErrorCodes = {
  networkError: 'network_error',
  timeout: 'timeout',
  invalidResponse: 'invalid_response',
} as const;

/**
 * Every code a {@link TesseraAdminError} can carry: the service's problem codes (`ErrorCodes` of
 * `@tessera/core`), the OAuth errors of `/v1/clients` ({@link RegistrationErrorCodes}) and the
 * client's own ({@link AdminErrorCodes}).
 *
 * @example
 * ```ts
 * import type { AdminErrorCode } from '@tessera/admin';
 *
 * const missing = (code: AdminErrorCode) => code === 'not_found' || code === 'user_not_found';
 * ```
 */
export type AdminErrorCode =
  | ErrorCode
  | (typeof RegistrationErrorCodes)[keyof typeof RegistrationErrorCodes]
  | (typeof AdminErrorCodes)[keyof typeof AdminErrorCodes];

/**
 * The one error class of `@tessera/admin`. Switch on `code` (stable), never on the message; the
 * message is the service's public `detail` (it never holds a secret, and neither does anything the
 * client adds: no credential, no query string).
 *
 * @example
 * ```ts
 * import { TesseraAdminError } from '@tessera/admin';
 *
 * try {
 *   await admin.users.get(userId);
 * } catch (error) {
 *   if (error instanceof TesseraAdminError && error.code === 'user_not_found') return null;
 *   throw error;
 * }
 * ```
 */
export class TesseraAdminError extends Error {
  override name = 'TesseraAdminError';
  /** Stable code; see {@link AdminErrorCode}. A code this version does not know maps to the closest one by status. */
  readonly code: AdminErrorCode;
  /** The HTTP status of the answer, when there was one. */
  readonly status: number | undefined;
  /** The service's public description (also the `message`). */
  readonly detail: string;
  /** The operation called (its OpenAPI operationId, e.g. `getUser`). */
  readonly operation: string;
  /** Seconds the service asked to wait before trying again (`Retry-After`, or the problem's `retry_after`). */
  readonly retryAfter: number | undefined;
  /** The RFC 6749 / 7591 `error` of a `/v1/clients` answer, verbatim. */
  readonly oauthError: string | undefined;
  /** The answer's problem document (RFC 9457) or OAuth error body, as sent. */
  readonly body: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: AdminErrorCode,
    detail: string,
    options: {
      operation: string;
      status?: number;
      retryAfter?: number;
      oauthError?: string;
      body?: Record<string, unknown>;
      cause?: unknown;
    },
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.detail = detail;
    this.operation = options.operation;
    this.status = options.status;
    this.retryAfter = options.retryAfter;
    this.oauthError = options.oauthError;
    this.body = options.body;
  }
}

/**
 * True when `error` is a {@link TesseraAdminError}, optionally with the given code.
 *
 * @example
 * ```ts
 * import { isTesseraAdminError } from '@tessera/admin';
 *
 * if (isTesseraAdminError(error, 'forbidden')) showNoPermission(error.detail);
 * ```
 */
export function isTesseraAdminError(error: unknown, code?: AdminErrorCode): error is TesseraAdminError {
  return error instanceof TesseraAdminError && (code === undefined || error.code === code);
}

const PROBLEM_CODES: ReadonlySet<string> = new Set<string>(Object.values(ErrorCodes));
const OAUTH_CODES: ReadonlySet<string> = new Set<string>(Object.values(RegistrationErrorCodes));

/** The closest stable code of a status, for answers whose own code this version does not know. */
function codeOfStatus(status: number): ErrorCode {
  if (status === 401) return ErrorCodes.unauthorized;
  if (status === 403) return ErrorCodes.forbidden;
  if (status === 404) return ErrorCodes.notFound;
  if (status === 409) return ErrorCodes.conflict;
  if (status === 413) return ErrorCodes.payloadTooLarge;
  if (status === 415) return ErrorCodes.unsupportedMediaType;
  if (status === 429) return ErrorCodes.rateLimited;
  if (status === 502 || status === 503 || status === 504) return ErrorCodes.serviceUnavailable;
  if (status >= 500) return ErrorCodes.internalError;
  return ErrorCodes.invalidRequest;
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), when the answer has one. */
export function retryAfterOf(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The typed error of a non-2xx answer: a problem document, an OAuth error, or neither. */
export function errorOfAnswer(
  operation: string,
  status: number,
  headers: Headers,
  text: string,
): TesseraAdminError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  const body =
    typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  const headerRetry = retryAfterOf(headers);
  if (typeof body?.code === 'string') {
    const code = PROBLEM_CODES.has(body.code) ? (body.code as ErrorCode) : codeOfStatus(status);
    const detail =
      typeof body.detail === 'string'
        ? body.detail
        : typeof body.title === 'string'
          ? body.title
          : `the service answered ${status}`;
    const retryAfter = typeof body.retry_after === 'number' ? body.retry_after : headerRetry;
    return new TesseraAdminError(code, detail, {
      operation,
      status,
      body,
      ...(retryAfter !== undefined && { retryAfter }),
    });
  }
  if (typeof body?.error === 'string') {
    const detail = typeof body.error_description === 'string' ? body.error_description : body.error;
    const code = OAUTH_CODES.has(body.error) ? (body.error as AdminErrorCode) : codeOfStatus(status);
    return new TesseraAdminError(code, detail, {
      operation,
      status,
      body,
      oauthError: body.error,
      ...(headerRetry !== undefined && { retryAfter: headerRetry }),
    });
  }
  return new TesseraAdminError(codeOfStatus(status), `the service answered ${status}`, {
    operation,
    status,
    ...(headerRetry !== undefined && { retryAfter: headerRetry }),
  });
}
