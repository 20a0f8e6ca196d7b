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
  /**
   * With a checked `origin`: the refusal of a request from an origin the check rejects. Its
   * preflight is then answered too (with the allow-origin header, as is the refusal), so that the
   * browser sends the request and lets the page read why it failed, instead of a network error.
   * The request itself goes no further than this hook. Without it, such preflights go to the route
   * (404) and the request is not marked readable.
   */
  refuse?: (request: FastifyRequest, origin: string) => Promise<Error>;
}

const HEADERS = 'API_KEY_ID, Api-Key-Id, Content-Type, Authorization';

/** Endpoints any origin may call: no cookies, no credentials beyond what the body carries. */
export const ANY_ORIGIN: CorsPolicy = { origin: '*', methods: 'GET, POST, OPTIONS', maxAge: 86400 };

/**
 * The OAuth endpoints browsers call (token, revocation, userinfo, registration), from SPAs and
 * browser-based MCP clients of any origin: CORS without credentials (`*`, never
 * Allow-Credentials), so no cookie ever counts. Whether the request's client may call from its
 * Origin is the route's decision (its project's origins, or the origins of its redirect URIs).
 */
export const OAUTH_CLIENTS: CorsPolicy = { origin: '*', methods: 'GET, POST, OPTIONS', maxAge: 600 };

/**
 * Endpoints apps call from browsers. A preflight carries no API key: it is answered for every
 * origin. A request from an origin no project allows is refused here by `refuse` (readable by the
 * page, so the SDK reports `origin_not_allowed`); one from an origin some project allows is then
 * checked against its own project's origins by the authentication hook (`originAllowed`).
 */
export function projectOrigins(
  isKnownOrigin: (origin: string) => Promise<boolean>,
  refuse: (request: FastifyRequest, origin: string) => Promise<Error>,
): CorsPolicy {
  return { origin: isKnownOrigin, methods: 'GET, POST, PUT, PATCH, DELETE, OPTIONS', maxAge: 600, refuse };
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
 * stays synchronous. An origin the check rejects: see `CorsPolicy.refuse`.
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
        if (known) {
          if (!allow(request, reply, origin, policy)) done();
        } else if (!policy.refuse) {
          done();
        } else if (!allow(request, reply, origin, policy)) {
          policy.refuse(request, origin).then(done, done);
        }
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
