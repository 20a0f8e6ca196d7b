import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteHandlerMethod,
} from 'fastify';

/** Which browser origins a route family answers, and what its preflights allow. */
export interface CorsPolicy {
  /** `'*'` for any origin; otherwise a check of the request's Origin, which is then echoed. */
  origin: '*' | ((origin: string) => Promise<boolean>);
  methods: string;
  /** How long a browser may cache a preflight answer, in seconds. */
  maxAge: number;
}

const HEADERS = 'API_KEY_ID, Api-Key-Id, Content-Type, Authorization';

/** Endpoints any origin may call: no cookies, no credentials beyond what the body carries. */
export const ANY_ORIGIN: CorsPolicy = { origin: '*', methods: 'GET, POST, OPTIONS', maxAge: 86400 };

/**
 * Endpoints apps call from browsers. A preflight carries no API key, so it is answered for
 * origins that some project allows; the request itself is then checked against its own
 * project's origins by the authentication hook (`originAllowed`).
 */
export function projectOrigins(isKnownOrigin: (origin: string) => Promise<boolean>): CorsPolicy {
  return { origin: isKnownOrigin, methods: 'GET, POST, PUT, PATCH, DELETE, OPTIONS', maxAge: 600 };
}

/** Sets the allow-origin header; answers a preflight (204) and returns true when it is one. */
function allow(request: FastifyRequest, reply: FastifyReply, origin: string, policy: CorsPolicy): boolean {
  reply.header('access-control-allow-origin', origin);
  if (origin !== '*') reply.header('vary', 'Origin');
  if (request.method !== 'OPTIONS' || !request.headers['access-control-request-method']) return false;
  reply
    .code(204)
    .headers({
      'access-control-allow-methods': policy.methods,
      'access-control-allow-headers': HEADERS,
      'access-control-max-age': String(policy.maxAge),
    })
    .send();
  return true;
}

/**
 * The CORS `onRequest` hook of a route family, callback-style (the @fastify/cors delegator
 * re-normalised its options on every request; docs/BENCHMARKS.md, "Design measurements"). With `'*'` it
 * stays synchronous. A refused preflight goes on to its route, which answers 404.
 */
export function corsHook(policy: CorsPolicy): onRequestHookHandler {
  const check = policy.origin;
  if (check === '*') {
    return (request, reply, done) => {
      if (!request.headers.origin || !allow(request, reply, '*', policy)) done();
    };
  }
  return (request, reply, done) => {
    const origin = request.headers.origin;
    if (!origin) return done();
    check(origin).then(
      (known) => {
        if (!known || !allow(request, reply, origin, policy)) done();
      },
      () => done(),
    );
  };
}

/**
 * Routes `OPTIONS` on the family's paths into its scope, so that its CORS hook answers the
 * preflights; any other OPTIONS request (or a refused preflight) gets `notFound`. Hidden from
 * the OpenAPI document.
 */
export function preflightRoutes(
  scope: FastifyInstance,
  paths: readonly string[],
  notFound: RouteHandlerMethod,
) {
  for (const url of paths) scope.options(url, { schema: { hide: true } }, notFound);
}
