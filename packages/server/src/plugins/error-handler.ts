import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ErrorCodes, type VerifyReason, VerifyReasons } from '@tessera/core';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabaseOutage } from '../db/outage.js';
import { DatabaseUnavailableError, OAuthError, TesseraError, toKnownError } from '../errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The instance's database outage log (db/outage.ts), decorated by buildApp. */
    databaseOutage?: DatabaseOutage;
  }
}

/**
 * The error handlers and not-found handlers of the route families (src/http/). A family sets
 * one of each with `setErrorHandler` / `setNotFoundHandler`; nothing here looks at the URL.
 */

const problemCodes = new WeakMap<FastifyRequest, string>();

/** Remembers the error code a request was answered with, for its access-log line. */
export function rememberProblem(request: FastifyRequest, code: string): void {
  problemCodes.set(request, code);
}

/** The error code (`invalid_code`, `rate_limited`, `invalid_grant`, …) a request was answered with. */
export function problemCodeOf(request: FastifyRequest): string | undefined {
  return problemCodes.get(request);
}

/** Fastify's own 4xx errors, with fixed public text: a JSON parser message can quote the body. */
function fromFastify(error: FastifyError): TesseraError | undefined {
  if (error.validation) {
    // "body/code must be string" → "body code must be string": name the field, never its value.
    const first = error.validation[0];
    const where = `${error.validationContext ?? 'request'}${first?.instancePath ?? ''}`.replace(
      /^body\//,
      'body ',
    );
    return new TesseraError(400, ErrorCodes.invalidRequest, `${where} ${first?.message ?? 'is invalid'}`);
  }
  const status = error.statusCode ?? 500;
  if (status === 413) return new TesseraError(413, ErrorCodes.payloadTooLarge, 'request body is too large');
  if (status === 415)
    return new TesseraError(415, ErrorCodes.unsupportedMediaType, 'send the body as application/json');
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return new TesseraError(400, ErrorCodes.invalidRequest, 'request body is empty');
  if (status === 400 && (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError)) {
    return new TesseraError(400, ErrorCodes.invalidRequest, 'request body is not valid JSON');
  }
  if (status >= 400 && status < 500)
    return new TesseraError(status, ErrorCodes.invalidRequest, 'the request is not valid');
  return undefined;
}

/** An error Fastify raised for the request itself (its body, its content type): a 4xx status of its own. */
function isFrameworkClientError(error: FastifyError | Error): error is FastifyError {
  if (error instanceof TesseraError) return false;
  const status = (error as FastifyError).statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/**
 * Known errors keep their status and code; everything else becomes a 500 whose detail only the
 * log sees. Every 5xx is logged on `log`, except a database outage given `outage`: that is counted
 * there and logged once per outage (db/outage.ts), not once per request.
 */
export function knownErrorOf(
  error: FastifyError | Error,
  log: Pick<FastifyBaseLogger, 'error'>,
  outage?: Pick<DatabaseOutage, 'refused'>,
): TesseraError {
  // Fastify's own 4xx first: a body the client stopped sending fails with Node's `aborted`, code
  // ECONNRESET like a database socket's, and must not be told (or logged) as a database outage.
  // Then a database that is away becomes a 503 with Retry-After (toKnownError), never a 500.
  const known =
    (isFrameworkClientError(error) ? fromFastify(error) : undefined) ??
    toKnownError(error) ??
    fromFastify(error as FastifyError);
  if (!known) {
    log.error({ err: error }, 'unexpected error');
    return new TesseraError(
      500,
      ErrorCodes.internalError,
      'an unexpected error occurred; it has been logged',
    );
  }
  if (outage && known instanceof DatabaseUnavailableError) outage.refused(known.cause ?? known);
  else if (known.statusCode >= 500 && !known.deliberate)
    log.error({ code: known.code, err: known.cause }, known.message);
  return known;
}

/** `knownErrorOf` for a request, remembering its code for the access-log line. */
function knownError(error: FastifyError | Error, request: FastifyRequest): TesseraError {
  const known = knownErrorOf(error, request.log, request.server.databaseOutage);
  rememberProblem(request, known.code);
  return known;
}

/** RFC 9457 `application/problem+json` with a stable `code`: the API's default format. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = knownError(error, request);
  return reply
    .code(known.statusCode)
    .headers(known.headers)
    .type('application/problem+json')
    .send(known.toProblem());
}

const OAUTH_ERRORS: Partial<Record<string, string>> = {
  [ErrorCodes.invalidClient]: 'invalid_client',
  [ErrorCodes.unknownApiKey]: 'invalid_client',
  [ErrorCodes.missingApiKey]: 'invalid_client',
  [ErrorCodes.rateLimited]: 'slow_down',
  [ErrorCodes.invalidToken]: 'invalid_token',
  [ErrorCodes.unauthorized]: 'invalid_token',
  [ErrorCodes.serviceUnavailable]: 'temporarily_unavailable',
};

/** A body whose grant_type is not in the schema's enum (RFC 6749 §5.2: unsupported_grant_type). */
function isUnsupportedGrant(error: FastifyError): boolean {
  const first = error.validation?.[0];
  return (
    error.validationContext === 'body' && first?.instancePath === '/grant_type' && first.keyword === 'enum'
  );
}

/** RFC 6749 §5.2 `{ error, error_description }`, never cached: the `/oauth/*` format. */
export function oauthErrorHandler(raised: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const error = isUnsupportedGrant(raised)
    ? new OAuthError(400, 'unsupported_grant_type', 'only grant_type=refresh_token is supported here')
    : raised;
  if (error instanceof OAuthError) {
    rememberProblem(request, error.error);
    return reply
      .code(error.statusCode)
      .headers({ 'cache-control': 'no-store', ...error.headers })
      .send({ error: error.error, error_description: error.message });
  }
  const known = knownError(error, request);
  const oauthError =
    OAUTH_ERRORS[known.code] ?? (known.statusCode >= 500 ? 'server_error' : 'invalid_request');
  return reply
    .code(known.statusCode)
    .headers(known.headers)
    .header('cache-control', 'no-store')
    .send({ error: oauthError, error_description: known.message });
}

/**
 * `POST /verify`'s `{ success: false, reason }` with one of the fixed reasons: a malformed
 * request, a body over the limit, or — for a 5xx — the service unavailable (503: the database
 * does not answer, or shutdown) or an internal error; either way the token was not checked.
 */
export function verifyRefusal(known: TesseraError): { success: false; reason: VerifyReason } {
  return { success: false, reason: refusalReason(known.statusCode) };
}

function refusalReason(status: number): VerifyReason {
  if (status === 503) return VerifyReasons.unavailable;
  if (status >= 500) return VerifyReasons.internalError;
  if (status === 413) return VerifyReasons.tooLarge;
  return VerifyReasons.malformedRequest;
}

/** The error handler of `POST /verify`: `verifyRefusal`, with the error's status and headers. */
export function verifyErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = knownError(error, request);
  return reply.code(known.statusCode).headers(known.headers).send(verifyRefusal(known));
}

const noRoute = (request: FastifyRequest) => {
  rememberProblem(request, ErrorCodes.notFound);
  return new TesseraError(
    404,
    ErrorCodes.notFound,
    `no route ${request.method} ${request.url.split('?')[0]}`,
  );
};

/** A 404 problem document naming the method and path (never the query, which may hold a secret). */
export function problemNotFound(request: FastifyRequest, reply: FastifyReply) {
  return reply.code(404).type('application/problem+json').send(noRoute(request).toProblem());
}

/** The 404 of `/oauth/*`, in the RFC 6749 shape. */
export function oauthNotFound(request: FastifyRequest, reply: FastifyReply) {
  return reply.code(404).send({ error: 'invalid_request', error_description: noRoute(request).message });
}

/** Node's refusals of a connection's bytes, by its error code: status and fixed detail. */
function clientErrorAnswer(code: string | undefined): [number, string] {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'the request did not arrive in time'];
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'the request headers are too large'];
  return [400, 'the request is not valid HTTP/1.1'];
}

/**
 * Fastify's `clientErrorHandler`: what Node refuses before there is a request (a malformed request
 * line or header, headers over the size limit, a request that did not arrive within
 * TESSERA_HTTP_REQUEST_TIMEOUT) is answered with a problem document like every other error (the
 * route, and so its family's format, is not known yet), then the connection is closed. A
 * connection the client reset has nobody to answer.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] = clientErrorAnswer(error.code);
  if (socket.writable) {
    const body = JSON.stringify(new TesseraError(status, ErrorCodes.invalidRequest, detail).toProblem());
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
