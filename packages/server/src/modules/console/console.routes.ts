import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ProjectsService } from '../projects/projects.service.js';
import type { ConsoleService } from './console.service.js';

const Role = Type.Union([
  Type.Literal('operator'),
  Type.Literal('admin'),
  Type.Literal('support'),
  Type.Literal('viewer'),
]);
const Me = Type.Object({
  user_id: Type.String({ description: 'The console project’s user' }),
  identifier: Type.String(),
  operator: Type.Boolean({ description: 'Every project and the signing keys' }),
  projects: Type.Array(Type.Object({ api_key_id: Type.String(), name: Type.String(), role: Role }), {
    description: 'Each project the member may open, with their role there',
  }),
});

/** `GET /v1/console/me`: the signed-in console member, their roles and projects (issue 33). */
export function consoleRoutes(deps: {
  console: ConsoleService;
  projects: ProjectsService;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/console/me',
      {
        schema: {
          tags: ['console'],
          operationId: 'consoleMe',
          summary: 'The signed-in console member, their roles and projects',
          response: { 200: Me },
        },
      },
      async (request) => {
        const session = await deps.console.authenticate(request.headers.authorization);
        const all = await deps.projects.list();
        const projects = all.flatMap((project) => {
          const role = session.operator ? 'operator' : session.roles.get(project.id);
          return role ? [{ api_key_id: project.api_key_id, name: project.name, role }] : [];
        });
        return {
          user_id: session.user.id,
          identifier: session.user.identifier,
          operator: session.operator,
          projects,
        };
      },
    );
  };
}
