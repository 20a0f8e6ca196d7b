import swagger from '@fastify/swagger';
import { ErrorCodes } from '@tessera/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { TesseraError } from '../errors.js';
import type { Metrics } from '../modules/metrics/metrics.js';
import { problemCodeOf, problemErrorHandler, problemNotFound } from '../plugins/error-handler.js';
import { registerSchemas, swaggerOptions } from './openapi.js';
import { checkResponseContract } from './response-contract.js';

/** The request fields set by authentication hooks (request-context.ts, bearer.ts, client-auth.ts). */
const REQUEST_FIELDS = ['project', 'auth', 'client'] as const;

const NUL_REFUSED = () =>
  new TesseraError(400, ErrorCodes.invalidRequest, 'text must not contain the NUL character (U+0000)');

/**
 * Whether a parsed body, query or path holds U+0000 in any string, key or value, at any depth
 * (walked without recursion: bodies may nest thousands deep).
 */
export function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (item.includes('\0')) return true;
    } else if (typeof item === 'object' && item !== null) {
      for (const key of Object.keys(item)) {
        if (key.includes('\0')) return true;
        pending.push((item as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** The route label of a request no route matched: bounded, whatever the path. */
function unmatchedLabel(status: number): string {
  return status === 404 ? 'not_found' : 'no_route';
}

/**
 * The path of a request no route matched, for its log line: the query dropped, and every segment
 * that could be a token, a code or an id (not a short lower-case word) replaced by `:x`, e.g.
 * `/v1/auth/otp/:x`. The raw path may carry a secret pasted in the wrong place.
 */
export function maskedPath(url: string): string {
  const path = url.split('?')[0] ?? '';
  const segments = path.split('/').slice(1, 9);
  const masked = segments.map((segment) =>
    /^[a-z][a-z0-9_.-]{0,23}$/.test(segment) ? segment : segment === '' ? '' : ':x',
  );
  return `/${masked.join('/')}${path.split('/').length > 9 ? '/…' : ''}`;
}

/**
 * The access-log line of a finished request: failures at info (with the error code and the
 * project), successes at debug. `request` gives both for a Fastify request; the /verify fast path
 * (modules/verify/verify-fast-path.ts) passes its error code, and has no project.
 */
export function logCompletion(
  log: Logger,
  done: {
    method: string;
    /** The route's path, or undefined when none matched: `url` is then logged masked. */
    route: string | undefined;
    url: string;
    status: number;
    ms: number;
    request?: FastifyRequest;
    code?: string;
  },
): void {
  const level = done.status >= 400 ? 'info' : 'debug';
  if (!log.isLevelEnabled(level)) return;
  const line: Record<string, unknown> = {
    method: done.method,
    url: done.route ?? maskedPath(done.url),
    status: done.status,
    ms: Math.round(done.ms),
  };
  if (done.status >= 400) {
    line.code = done.request ? problemCodeOf(done.request) : done.code;
    line.project = (done.request as { project?: { id: string } } | undefined)?.project?.id;
  }
  log[level](line, 'request completed');
}

/**
 * What every family shares, set on the root before the families are registered (a child scope
 * copies its parent's hooks when it is created). The root's error and not-found handlers answer
 * paths that belong to no family. All hooks are callback-style: no promise per request.
 */
export async function registerCommon(
  app: FastifyInstance,
  deps: { config: Readonly<Config>; metrics: Metrics },
  options: { checkResponses?: boolean } = {},
): Promise<void> {
  const { config, metrics } = deps;
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler(problemNotFound);
  // The fields the authentication hooks set, on every request from its construction (null until
  // set): without them each hook added a property to its requests, giving requests of different
  // routes different V8 shapes and Fastify's own property loads on every request (the /verify
  // path included) several shapes to tell apart.
  for (const field of REQUEST_FIELDS) app.decorateRequest(field, null, []);

  // A request without a body validates as {}: endpoints whose fields are all optional work
  // without one, and the others say which field is missing. Text with U+0000 is refused before
  // any handler runs, on both databases: PostgreSQL cannot store it (SQLite could), and a refusal
  // from the database came after the handler had spent what it spends first (a passkey challenge).
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined) request.body = {};
    else if (containsNul(request.body)) return done(NUL_REFUSED());
    if (containsNul(request.query) || containsNul(request.params)) return done(NUL_REFUSED());
    done();
  });
  // One access-log line per request and the metrics.
  app.addHook('onResponse', (request, reply, done) => {
    done();
    const status = reply.statusCode;
    const route = request.routeOptions.url;
    metrics.observeRequest(request.method, route ?? unmatchedLabel(status), status, reply.elapsedTime / 1000);
    logCompletion(request.log as Logger, {
      method: request.method,
      route,
      url: request.url,
      status,
      ms: reply.elapsedTime,
      request,
    });
  });

  if (options.checkResponses) checkResponseContract(app);

  await app.register(swagger, swaggerOptions(config.issuer));
  registerSchemas(app);
}
