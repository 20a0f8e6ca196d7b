import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ProjectsService } from '../projects/projects.service.js';

const Setting = Type.Object(
  {
    open_registration: Type.Boolean({
      description: 'Anyone may register an OAuth client (RFC 7591) at the project’s registration endpoint',
    }),
  },
  { additionalProperties: false },
);
const tags = ['clients'];

/** The integrator's switch of open Dynamic Client Registration (off by default). */
export function registrationSettingRoutes({
  projects,
}: {
  projects: ProjectsService;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/project/client-registration',
      {
        schema: {
          operationId: 'getClientRegistration',
          summary: 'Whether the project accepts Dynamic Client Registration',
          tags,
          response: { 200: Setting },
        },
      },
      async (request) => ({ open_registration: request.project.oauth_dcr === 1 }),
    );
    app.put(
      '/v1/project/client-registration',
      {
        schema: {
          operationId: 'setClientRegistration',
          summary: 'Open or close Dynamic Client Registration (RFC 7591) for the project',
          tags,
          body: Setting,
          response: { 200: Setting },
        },
      },
      async (request) => {
        const updated = await projects.update(request.project.api_key_id, {
          openRegistration: request.body.open_registration,
        });
        request.log.info(
          { api_key_id: updated.api_key_id, open_registration: updated.oauth_dcr === 1 },
          'client registration set by integrator',
        );
        return { open_registration: updated.oauth_dcr === 1 };
      },
    );
  };
}
