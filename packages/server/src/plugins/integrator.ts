import type { FastifyRequest } from 'fastify';
import type { ConsoleService } from '../modules/console/console.service.js';
import { permissionOf } from '../modules/console/permissions.js';
import type { ProjectsService } from '../modules/projects/projects.service.js';

/** The `Tessera-Project` header: the project a console call acts on (its API key id). */
export function consoleProjectOf(request: FastifyRequest): string | undefined {
  const value = request.headers['tessera-project'];
  return typeof value === 'string' ? value : undefined;
}

/** Whether the request carries a Bearer token (a console call) rather than Basic credentials. */
export const isBearer = (request: FastifyRequest): boolean =>
  /^Bearer\s/i.test(request.headers.authorization ?? '');

/**
 * preHandler for the integrator API: `Authorization: Basic base64(api_key_id:api_key_secret)`, or
 * (console on) `Authorization: Bearer <console access token>` with `Tessera-Project: <api_key_id>`,
 * allowed by the member's role there (issue 33). Sets `request.project`; everything the handler
 * reads is then scoped to that project.
 */
export function requireIntegrator(projects: ProjectsService, consoleService?: ConsoleService) {
  return async (request: FastifyRequest): Promise<void> => {
    if (consoleService && isBearer(request)) {
      const session = await consoleService.authenticate(request.headers.authorization);
      const permission = permissionOf(request.method, request.routeOptions.url ?? request.url);
      const { project, actor } = await consoleService.access(session, consoleProjectOf(request), permission);
      request.project = project;
      request.consoleActor = actor;
      return;
    }
    request.project = await projects.authenticateBasic(request.headers.authorization);
  };
}
