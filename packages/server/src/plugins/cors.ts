import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProjectsService } from '../modules/projects/projects.service.js';

/** Endpoints any origin may call: no cookies, no credentials beyond what the body carries. */
const PUBLIC = [/^\/verify(\?|$)/, /^\/\.well-known\//];
/** Endpoints apps call from browsers: allowed for origins some project lists. */
const APP = [
  /^\/v1\/auth\//,
  /^\/v1\/devices(\/|\?|$)/,
  /^\/v1\/pin(\?|$)/,
  /^\/v1\/biometrics(\/|\?|$)/,
  /^\/v1\/me(\/|\?|$)/,
  /^\/oauth\/(token|revoke|userinfo)(\?|$)/,
];

const HEADERS = 'API_KEY_ID, Api-Key-Id, Content-Type, Authorization';
const PUBLIC_METHODS = 'GET, POST, OPTIONS';
const APP_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';

function allow(
  request: FastifyRequest,
  reply: FastifyReply,
  origin: string,
  methods: string,
  maxAge: number,
): boolean {
  reply.header('access-control-allow-origin', origin);
  if (origin !== '*') reply.header('vary', 'Origin');
  if (request.method !== 'OPTIONS' || !request.headers['access-control-request-method']) return false;
  reply
    .code(204)
    .headers({
      'access-control-allow-methods': methods,
      'access-control-allow-headers': HEADERS,
      'access-control-max-age': String(maxAge),
    })
    .send();
  return true;
}

/**
 * CORS by endpoint family, in one synchronous hook (the @fastify/cors delegator re-normalised
 * its options on every request: 18 µs of /verify's cost, measured). A preflight carries no API
 * key, so app endpoints accept origins that any project allows; the request itself is then
 * checked against its own project's origins. Other endpoints get no CORS headers, and a refused
 * preflight falls through to the router (404).
 */
export async function registerCors(app: FastifyInstance, projects: ProjectsService): Promise<void> {
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (!origin) return done();
    const url = request.url;
    if (PUBLIC.some((r) => r.test(url))) {
      if (!allow(request, reply, '*', PUBLIC_METHODS, 86400)) done();
      return;
    }
    if (!APP.some((r) => r.test(url))) return done();
    projects.isKnownOrigin(origin).then(
      (known) => {
        if (!known || !allow(request, reply, origin, APP_METHODS, 600)) done();
      },
      () => done(),
    );
  });
}
