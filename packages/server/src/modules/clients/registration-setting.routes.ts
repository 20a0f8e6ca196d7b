import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { badRequest } from '../../errors.js';
import type { ProjectView } from '../projects/project.js';
import type { ProjectsService } from '../projects/projects.service.js';

const OPEN = 'Anyone may register an OAuth client (RFC 7591) at the project’s registration endpoint';
const CIMD =
  'A client may name itself by the HTTPS URL of its Client ID Metadata Document (the MCP authorization specification’s way), at the project’s own endpoints';
const Setting = Type.Object(
  {
    open_registration: Type.Boolean({ description: OPEN }),
    client_id_metadata_documents: Type.Boolean({ description: CIMD }),
  },
  { additionalProperties: false },
);
const SettingChange = Type.Object(
  {
    open_registration: Type.Optional(Type.Boolean({ description: OPEN })),
    client_id_metadata_documents: Type.Optional(Type.Boolean({ description: CIMD })),
  },
  { additionalProperties: false, minProperties: 1 },
);
const tags = ['clients'];

/** The two switches, as the operator's view of the project shows them (`ProjectsService.view`). */
const settingOf = ({ open_registration, client_id_metadata_documents }: ProjectView) => ({
  open_registration,
  client_id_metadata_documents,
});

/**
 * The integrator's switches of how unknown clients may come: open Dynamic Client Registration and
 * Client ID Metadata Documents (both off by default).
 */
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
          summary: 'Whether the project accepts Dynamic Client Registration and Client ID Metadata Documents',
          tags,
          response: { 200: Setting },
        },
      },
      async (request) => settingOf(projects.view(request.project)),
    );
    app.put(
      '/v1/project/client-registration',
      {
        schema: {
          operationId: 'setClientRegistration',
          summary:
            'Turn Dynamic Client Registration (RFC 7591) and Client ID Metadata Documents on or off for the project (the members sent change; the others stay)',
          tags,
          body: SettingChange,
          response: { 200: Setting },
        },
      },
      async (request) => {
        const { open_registration, client_id_metadata_documents } = request.body;
        if (open_registration === undefined && client_id_metadata_documents === undefined)
          throw badRequest('give open_registration, client_id_metadata_documents or both');
        const updated = await projects.update(request.project.api_key_id, {
          openRegistration: open_registration,
          clientIdMetadataDocuments: client_id_metadata_documents,
        });
        const setting = settingOf(projects.view(updated));
        request.log.info(
          { api_key_id: updated.api_key_id, ...setting },
          'client registration set by integrator',
        );
        return setting;
      },
    );
  };
}
