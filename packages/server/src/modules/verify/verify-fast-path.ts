import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { DatabaseOutage } from '../../db/outage.js';
import type { TesseraError } from '../../errors.js';
import { logCompletion } from '../../http/common.js';
import { knownErrorOf, verifyRefusal } from '../../plugins/error-handler.js';
import type { InFlight } from '../../plugins/in-flight.js';
import { apiKeyIdOf } from '../../plugins/request-context.js';
import type { Metrics } from '../metrics/metrics.js';
import { MAX_ACCESS_TOKEN_LENGTH, MAX_RESOURCE_LENGTH } from './verify.routes.js';
import type { VerifyResult, VerifyService } from './verify.service.js';

const ROUTE = '/verify';
/** Bodies above this many bytes go through Fastify: a well-formed /verify body is far smaller. */
const MAX_BODY_BYTES = 16 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';
const SUCCESS = '{"success":true}';

/** An answer of the Fastify application, as `inject` gives it. */
export interface Replayed {
  statusCode: number;
  headers: OutgoingHttpHeaders;
  rawPayload: Buffer;
}

/** Headers of one connection's hop, not of the answer: dropped from a replayed answer. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding'];

export interface VerifyFastPathDeps {
  verify: VerifyService;
  metrics: Metrics;
  logger: Logger;
  /** TESSERA_BODY_LIMIT: a body declared longer goes through Fastify, which refuses it. */
  bodyLimit: number;
  inFlight: InFlight;
  /** The answer of the Fastify application to the request, with its body already read (`inject`). */
  replay(request: IncomingMessage, body: Buffer): Promise<Replayed>;
  /** The refusal of a request that arrives while the server is closing (503 with Retry-After). */
  refuseWhenClosing(): TesseraError;
  /** Where a database outage's 503s are counted (logged once per outage, not per request). */
  outage?: Pick<DatabaseOutage, 'refused'>;
}

/** `application/json`, optionally with `charset=utf-8`: what Fastify parses as JSON without a doubt. */
function isJson(type: string | undefined): boolean {
  if (type === 'application/json') return true;
  return type !== undefined && /^application\/json\s*;\s*charset="?utf-8"?$/i.test(type);
}

/**
 * The access token (and `resource`, if sent) of a parsed body that Fastify's schema for `POST
 * /verify` accepts (an object whose `oauth_token` is an object whose `access_token` is a string of
 * at most MAX_ACCESS_TOKEN_LENGTH code units, and whose `resource`, if present, is a string of 1
 * to MAX_RESOURCE_LENGTH); undefined for anything else.
 */
function tokenOf(body: unknown): { token: string; resource: string | undefined } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const holder = (body as { oauth_token?: unknown }).oauth_token;
  if (typeof holder !== 'object' || holder === null || Array.isArray(holder)) return undefined;
  const token = (holder as { access_token?: unknown }).access_token;
  if (typeof token !== 'string' || token.length > MAX_ACCESS_TOKEN_LENGTH) return undefined;
  const resource = (body as { resource?: unknown }).resource;
  if (resource === undefined) return { token, resource };
  if (typeof resource !== 'string' || resource.length === 0 || resource.length > MAX_RESOURCE_LENGTH)
    return undefined;
  return { token, resource };
}

/**
 * `POST /verify` answered on the HTTP server ahead of Fastify's request pipeline, for requests
 * whose answer it can give exactly as the route would (docs/ARCHITECTURE.md, "`/verify` hot path").
 * /verify is the hot path of integrators without a backend; for a token seen before, Fastify's
 * routing, request and reply objects, hooks, schema validation and serialisation cost as much as
 * everything else the request does.
 *
 * Returns false, touching nothing, for a request it does not take: another method or path (a
 * query string included), a server closing, a log level that logs successful requests, a content
 * type other than JSON in UTF-8, a body without a Content-Length (chunked), empty, or over
 * MAX_BODY_BYTES or the body limit. Fastify then handles the request as before.
 *
 * A request it takes has its body read here. A body Fastify's JSON parser and the route's schema
 * might judge otherwise than a plain `JSON.parse` and `tokenOf` — one with a backslash (an escape:
 * a NUL, a disguised key), `__proto__` or `constructor`, or one that does not parse or fit the
 * schema — is replayed through the Fastify application (`replay`), which answers it as if it had
 * come in directly. What is answered here gets what the route gives: the same verification, the
 * same JSON and headers (CORS `*` when an Origin is sent), the same metrics, access-log line and
 * error format; a verification that waits (a key reload, a project read) is counted in flight, so
 * `app.close()` waits for it.
 */
export function verifyFastPath(
  deps: VerifyFastPathDeps,
): (request: IncomingMessage, response: ServerResponse) => boolean {
  const { verify, metrics, logger, inFlight } = deps;
  const maxBytes = Math.min(MAX_BODY_BYTES, deps.bodyLimit);

  const finish = (
    request: IncomingMessage,
    response: ServerResponse,
    started: number,
    status: number,
    payload: string,
    refusal?: TesseraError,
  ) => {
    const head: Record<string, string | number> = {
      'content-type': JSON_TYPE,
      'content-length': Buffer.byteLength(payload),
    };
    if (request.headers.origin) head['access-control-allow-origin'] = '*';
    // Closing began while it was read or verified: the client's next request goes elsewhere.
    if (inFlight.closing) head.connection = 'close';
    if (refusal) Object.assign(head, refusal.headers);
    response.writeHead(status, head);
    response.end(payload);
    const ms = performance.now() - started;
    metrics.observeRequest('POST', ROUTE, status, ms / 1000);
    // A success's line is at debug, which the fast path is not taken at.
    if (refusal)
      logCompletion(logger, { method: 'POST', route: ROUTE, url: ROUTE, status, ms, code: refusal.code });
  };

  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    started: number,
    result: VerifyResult,
  ) => {
    const payload = result.success ? SUCCESS : JSON.stringify({ success: false, reason: result.reason });
    finish(request, response, started, 200, payload);
  };

  const refuse = (
    request: IncomingMessage,
    response: ServerResponse,
    started: number,
    known: TesseraError,
  ) => {
    finish(request, response, started, known.statusCode, JSON.stringify(verifyRefusal(known)), known);
  };

  /** Answers through the Fastify application (`replay`); counted in flight until answered. */
  const replay = (request: IncomingMessage, response: ServerResponse, started: number, body: Buffer) => {
    inFlight.enter();
    // A replay that throws instead of rejecting is refused like one that rejects, never uncaught.
    Promise.resolve()
      .then(() => deps.replay(request, body))
      .then(
        (answer) => {
          const headers = { ...answer.headers };
          for (const name of HOP_BY_HOP) delete headers[name];
          if (inFlight.closing) headers.connection = 'close';
          response.writeHead(answer.statusCode, headers);
          response.end(answer.rawPayload);
        },
        // Fastify refuses to inject once closing has begun: refused as its pipeline would.
        (error: Error) =>
          refuse(
            request,
            response,
            started,
            inFlight.closing ? deps.refuseWhenClosing() : knownErrorOf(error, logger, deps.outage),
          ),
      )
      .finally(() => inFlight.leave());
  };

  const respond = (request: IncomingMessage, response: ServerResponse, started: number, body: Buffer) => {
    const text = body.toString('utf8');
    if (text.includes('\\') || text.includes('__proto__') || text.includes('constructor')) {
      replay(request, response, started, body);
      return;
    }
    let parsed: ReturnType<typeof tokenOf>;
    try {
      parsed = tokenOf(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined) {
      replay(request, response, started, body);
      return;
    }
    try {
      const result = verify.verify(parsed.token, apiKeyIdOf(request), parsed.resource);
      if (!('then' in result)) {
        answer(request, response, started, result);
        return;
      }
      inFlight.enter();
      result
        .then(
          (settled) => answer(request, response, started, settled),
          (error: Error) => refuse(request, response, started, knownErrorOf(error, logger, deps.outage)),
        )
        .finally(() => inFlight.leave());
    } catch (error) {
      refuse(request, response, started, knownErrorOf(error as Error, logger, deps.outage));
    }
  };

  return (request, response) => {
    if (request.url !== ROUTE || request.method !== 'POST') return false;
    if (inFlight.closing || logger.isLevelEnabled('debug')) return false;
    const headers = request.headers;
    if (!isJson(headers['content-type']) || headers['transfer-encoding'] !== undefined) return false;
    const length = Number(headers['content-length']);
    if (!(length > 0 && length <= maxBytes)) return false;

    // In flight from here, as from Fastify's onRequest: until the request closes, which it does
    // once its body is read (its answer is then written, or counted on its own until it is) or
    // when its client goes away first.
    inFlight.enter();
    request.on('close', inFlight.leave);
    const started = performance.now();
    // Node's parser delivers exactly Content-Length bytes before 'end', or closes the request.
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () =>
      respond(request, response, started, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)),
    );
    return true;
  };
}
