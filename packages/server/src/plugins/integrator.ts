import type { FastifyRequest } from 'fastify';
import type { ProjectsService } from '../modules/projects/projects.service.js';

/**
 * preHandler for the integrator API: `Authorization: Basic base64(api_key_id:api_key_secret)`.
 * Sets `request.project`; everything the handler reads is then scoped to that project.
 */
export function requireIntegrator(projects: ProjectsService) {
  return async (request: FastifyRequest): Promise<void> => {
    request.project = await projects.authenticateBasic(request.headers.authorization);
  };
}
