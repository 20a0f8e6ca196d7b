import { ErrorCodes, VerifyReasons } from '@tessera/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError, TesseraError } from '../errors.js';

type Format = 'problem' | 'oauth' | 'verify';

function formatOf(url: string): Format {
  if (url === '/verify' || url.startsWith('/verify?')) return 'verify';
  if (url.startsWith('/oauth/')) return 'oauth';
  return 'problem';
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

const OAUTH_ERRORS: Partial<Record<string, string>> = {
  [ErrorCodes.invalidClient]: 'invalid_client',
  [ErrorCodes.unknownApiKey]: 'invalid_client',
  [ErrorCodes.missingApiKey]: 'invalid_client',
  [ErrorCodes.rateLimited]: 'slow_down',
  [ErrorCodes.invalidToken]: 'invalid_token',
  [ErrorCodes.unauthorized]: 'invalid_token',
};

/**
 * One error handler: known errors keep their status and code; everything else is a 500 whose
 * detail only the log sees. The body format follows the endpoint family.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const format = formatOf(request.url);
    if (error instanceof OAuthError) {
      return reply
        .code(error.statusCode)
        .headers({ 'cache-control': 'no-store', ...error.headers })
        .send({ error: error.error, error_description: error.message });
    }
    let known = error instanceof TesseraError ? error : fromFastify(error);
    if (!known) {
      request.log.error({ err: error }, 'unexpected error');
      known = new TesseraError(
        500,
        ErrorCodes.internalError,
        'an unexpected error occurred; it has been logged',
      );
    } else if (known.statusCode >= 500) {
      request.log.error({ code: known.code, cause: known.cause }, known.message);
    }
    reply.headers(known.headers);
    if (format === 'verify') {
      const reason = known.statusCode === 413 ? VerifyReasons.tooLarge : VerifyReasons.malformedRequest;
      return reply.code(known.statusCode).send({ success: false, reason });
    }
    if (format === 'oauth') {
      const oauthError =
        OAUTH_ERRORS[known.code] ?? (known.statusCode >= 500 ? 'server_error' : 'invalid_request');
      return reply
        .code(known.statusCode)
        .header('cache-control', 'no-store')
        .send({ error: oauthError, error_description: known.message });
    }
    return reply.code(known.statusCode).type('application/problem+json').send(known.toProblem());
  });

  app.setNotFoundHandler((request, reply) => {
    const error = new TesseraError(
      404,
      ErrorCodes.notFound,
      `no route ${request.method} ${request.url.split('?')[0]}`,
    );
    if (formatOf(request.url) === 'oauth')
      return reply.code(404).send({ error: 'invalid_request', error_description: error.message });
    return reply.code(404).type('application/problem+json').send(error.toProblem());
  });
}
