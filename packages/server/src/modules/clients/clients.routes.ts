import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TProperties, Type } from '@sinclair/typebox';
import { ListOf, NoContent } from '../../http/openapi.js';
import type { Project } from '../projects/project.js';
import type { ClientMetadataInput } from './client-metadata.js';
import { ClientInformationSchema, ClientMetadataBody, ClientParams } from './clients.schemas.js';
import type { ClientsService } from './clients.service.js';

const tags = ['clients'];
const doc = (operationId: string, summary: string) => ({ operationId, summary, tags });

/**
 * A project's OAuth clients, in RFC 7591/7592 terms (`POST /v1/clients` answers 201 with the client
 * information, `client_secret` once). `base` is `/v1/clients` for the integrator API (the project from
 * HTTP Basic) and `/v1/operator/projects/:api_key_id/clients` for the operator API.
 */
export function clientsRoutes({
  clients,
  base = '/v1/clients',
  project,
}: {
  clients: ClientsService;
  base?: string;
  project: (request: { project?: Project; params: unknown }) => Promise<Project>;
}): FastifyPluginAsyncTypebox {
  const op = base.startsWith('/v1/operator') ? 'operator' : '';
  const by = op ? 'operator' : 'integrator';
  const projectParam: TProperties = op ? { api_key_id: Type.String({ minLength: 1, maxLength: 100 }) } : {};
  const Params = Type.Object({ ...projectParam, client_id: ClientParams.properties.client_id });
  const ListParams = op ? { params: Type.Object(projectParam) } : {};
  const clientId = (request: { params: unknown }) => (request.params as { client_id: string }).client_id;
  const id = (name: string) => (op ? `${op}${name[0]!.toUpperCase()}${name.slice(1)}` : name);
  return async (app) => {
    app.post(
      base,
      {
        schema: {
          ...doc(
            id('registerClient'),
            'Register an OAuth client (RFC 7591); a confidential client’s secret is shown once',
          ),
          ...ListParams,
          body: ClientMetadataBody,
          response: { 201: ClientInformationSchema },
        },
        // The service checks every member and names the field (RFC 7591 §3.2.2).
        attachValidation: true,
      },
      async (request, reply) =>
        reply
          .code(201)
          .header('cache-control', 'no-store')
          .send(await clients.register(await project(request), request.body as ClientMetadataInput, by)),
    );
    app.get(
      base,
      {
        schema: {
          ...doc(id('listClients'), 'List the project’s OAuth clients'),
          ...ListParams,
          response: { 200: ListOf('clients', ClientInformationSchema) },
        },
      },
      async (request) => ({ clients: await clients.list(await project(request)) }),
    );
    app.get(
      `${base}/:client_id`,
      {
        schema: {
          ...doc(id('getClient'), 'Read an OAuth client (RFC 7592)'),
          params: Params,
          response: { 200: ClientInformationSchema },
        },
      },
      async (request) => clients.get(await project(request), clientId(request)),
    );
    app.put(
      `${base}/:client_id`,
      {
        schema: {
          ...doc(id('replaceClient'), 'Replace an OAuth client’s metadata (RFC 7592)'),
          params: Params,
          body: ClientMetadataBody,
          response: { 200: ClientInformationSchema },
        },
        attachValidation: true,
      },
      async (request, reply) =>
        reply
          .header('cache-control', 'no-store')
          .send(
            await clients.replace(
              await project(request),
              clientId(request),
              request.body as ClientMetadataInput,
              by,
            ),
          ),
    );
    app.post(
      `${base}/:client_id/secret`,
      {
        schema: {
          ...doc(
            id('rotateClientSecret'),
            'Replace a confidential client’s secret (shown once); the old one stops working at once',
          ),
          params: Params,
          response: { 200: ClientInformationSchema },
        },
      },
      async (request, reply) =>
        reply
          .header('cache-control', 'no-store')
          .send(await clients.rotateSecret(await project(request), clientId(request), by)),
    );
    app.delete(
      `${base}/:client_id`,
      {
        schema: {
          ...doc(id('deleteClient'), 'Delete an OAuth client: its consents go and its sessions end'),
          params: Params,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        await clients.delete(await project(request), clientId(request), by);
        return reply.code(204).send();
      },
    );
  };
}
