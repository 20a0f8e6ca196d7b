import { type ErrorCode, ErrorCodes, type ProblemDocument } from '@tessera/core';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  423: 'Locked',
  429: 'Too Many Requests',
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

  constructor(
    statusCode: number,
    code: ErrorCode,
    detail: string,
    options: {
      cause?: unknown;
      retryAfter?: number;
      headers?: Record<string, string>;
      extensions?: Record<string, string | number | boolean>;
    } = {},
  ) {
    super(detail, { cause: options.cause });
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
