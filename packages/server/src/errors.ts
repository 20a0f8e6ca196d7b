import { type ErrorCode, ErrorCodes, type ProblemDocument } from '@tessera/core';
import { isDatabaseUnavailable, type OutageKind, outageKind } from './db/unavailable.js';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  423: 'Locked',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * The one error class of the service. `detail` is public text (never a secret); `cause` is for
 * the log only. Anything thrown that is not a TesseraError becomes a generic 500.
 */
export class TesseraError extends Error {
  override name = 'TesseraError';
  readonly statusCode: number;
  readonly code: ErrorCode;
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string>;
  /** Extra members of the problem document (RFC 9457 §3.2), e.g. `attempts_left`. */
  readonly extensions: Record<string, string | number | boolean>;
  /**
   * A 5xx the server means to give (a refusal while shutting down): logged by the access line
   * only, not once more at `error`, so a drain does not write one error line per request.
   */
  readonly deliberate: boolean;

  constructor(
    statusCode: number,
    code: ErrorCode,
    detail: string,
    options: {
      cause?: unknown;
      retryAfter?: number;
      headers?: Record<string, string>;
      extensions?: Record<string, string | number | boolean>;
      deliberate?: boolean;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.deliberate = options.deliberate ?? false;
    this.statusCode = statusCode;
    this.code = code;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
    this.extensions = options.extensions ?? {};
  }

  toProblem(): ProblemDocument {
    return {
      type: `https://tessera.dev/problems/${this.code}`,
      title: TITLES[this.statusCode] ?? 'Error',
      status: this.statusCode,
      code: this.code,
      detail: this.message,
      ...(this.retryAfter !== undefined ? { retry_after: this.retryAfter } : {}),
      ...this.extensions,
    };
  }
}

export const badRequest = (detail: string, code: ErrorCode = ErrorCodes.invalidRequest) =>
  new TesseraError(400, code, detail);
export const unauthorized = (detail: string, code: ErrorCode = ErrorCodes.unauthorized) =>
  new TesseraError(401, code, detail);
export const forbidden = (detail: string, code: ErrorCode = ErrorCodes.forbidden) =>
  new TesseraError(403, code, detail);
export const notFound = (detail: string, code: ErrorCode = ErrorCodes.notFound) =>
  new TesseraError(404, code, detail);
export const tooManyRequests = (
  detail: string,
  retryAfter: number,
  code: ErrorCode = ErrorCodes.rateLimited,
) => new TesseraError(429, code, detail, { retryAfter, headers: { 'retry-after': String(retryAfter) } });
export const serviceUnavailable = (detail: string, retryAfter: number, deliberate = false) =>
  new TesseraError(503, ErrorCodes.serviceUnavailable, detail, {
    retryAfter,
    headers: { 'retry-after': String(retryAfter) },
    deliberate,
  });

/** Seconds a client is asked to wait when the database is away (failovers take seconds). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The public detail of each kind of database outage (never the driver's message). */
const OUTAGE_DETAILS: Record<OutageKind, string> = {
  unreachable: 'the service cannot reach its database; try again shortly',
  'storage-full':
    'the service cannot write to its database (its storage is full or failing); try again shortly',
  'read-only':
    "the service's database is read-only (a standby, or read-only transactions); try again shortly",
};

/**
 * The database did not answer within its bounds (connection lost, restarting, failing over,
 * timed out, pool exhausted), refused a write as read-only, or could not write (SQLite's disk
 * full or failing): `503` with `Retry-After`, a detail saying which. The driver's error is the
 * cause, for the log only.
 */
export class DatabaseUnavailableError extends TesseraError {
  override name = 'DatabaseUnavailableError';
  readonly kind: OutageKind;
  constructor(cause?: unknown) {
    const kind = outageKind(cause);
    super(503, ErrorCodes.serviceUnavailable, OUTAGE_DETAILS[kind], {
      cause,
      retryAfter: DATABASE_RETRY_AFTER_SECONDS,
      headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
    });
    this.kind = kind;
  }
}

/**
 * Maps an error that is not a TesseraError but has a known public meaning to one: today a
 * database that is unavailable becomes DatabaseUnavailableError. Undefined for anything else
 * (which stays a generic 500). Error handlers call it before deciding on a 500.
 */
export function toKnownError(error: unknown): TesseraError | undefined {
  if (error instanceof TesseraError) return error;
  if (isDatabaseUnavailable(error)) return new DatabaseUnavailableError(error);
  // PostgreSQL text cannot hold U+0000 (22021) or a character its encoding lacks (22P05): the
  // input reached a query, so it was the client's text, and nothing was written.
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '22021' || code === '22P05')
    return new TesseraError(
      400,
      ErrorCodes.invalidRequest,
      'text must not contain the NUL character (U+0000)',
    );
  // PostgreSQL broke a deadlock (40P01) or refused a serialisable transaction (40001) against a
  // concurrent one, e.g. a user's deletion against a grant rotating one of its tokens: this
  // statement was rolled back whole, and the same request sent again runs against the new state.
  if (code === '40P01' || code === '40001')
    return new TesseraError(
      503,
      ErrorCodes.serviceUnavailable,
      'the request collided with a concurrent change and was undone; retry it',
      { cause: error, retryAfter: 1, headers: { 'retry-after': '1' } },
    );
  // A foreign key refused the write: what the request refers to (its project, user, device or
  // session) was deleted while it ran, e.g. a project an operator deleted that another instance
  // had still cached. Nothing was written.
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
    return new TesseraError(
      409,
      ErrorCodes.conflict,
      'what this request refers to (its project, user, device or session) was deleted while it ran',
    );
  return undefined;
}

/**
 * An RFC 6749 error of the `/oauth/*` endpoints: `{ error, error_description }`.
 */
export class OAuthError extends Error {
  override name = 'OAuthError';
  constructor(
    readonly statusCode: number,
    readonly error: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}
