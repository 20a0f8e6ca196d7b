import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
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

/**
 * CORS by endpoint family. A preflight carries no API key, so app endpoints accept origins that
 * any project allows; the request itself is then checked against its own project's origins.
 */
export async function registerCors(app: FastifyInstance, projects: ProjectsService): Promise<void> {
  await app.register(cors, {
    delegator: (request: FastifyRequest, callback) => {
      const url = request.url;
      if (PUBLIC.some((r) => r.test(url))) {
        callback(null, {
          origin: '*',
          methods: ['GET', 'POST', 'OPTIONS'],
          allowedHeaders: HEADERS,
          maxAge: 86400,
        });
        return;
      }
      const origin = request.headers.origin;
      if (!origin || !APP.some((r) => r.test(url))) {
        callback(null, { origin: false });
        return;
      }
      projects.isKnownOrigin(origin).then(
        (known) =>
          callback(null, {
            origin: known ? origin : false,
            methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
            allowedHeaders: HEADERS,
            maxAge: 600,
          }),
        () => callback(null, { origin: false }),
      );
    },
  });
}
