import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RateLimit } from '../../config/index.js';
import { OAuthError } from '../../errors.js';
import type { Project } from '../projects/project.js';
import { type ClientMetadataInput, isMetadataObject } from './client-metadata.js';
import { ClientInformationSchema, ClientMetadataBody } from './clients.schemas.js';
import { type ClientsService, registrationClosed } from './clients.service.js';

/** Open registrations one project accepts per hour, whoever sends them. */
export const REGISTRATIONS_PER_PROJECT: RateLimit = { limit: 100, window: 3600 };
/** Open registrations one network (IPv4 address, IPv6 /64) may send per hour. */
export const REGISTRATIONS_PER_IP: RateLimit = { limit: 10, window: 3600 };

/** The path of a project's registration endpoint (advertised by its metadata when open). */
export const registrationPath = (apiKeyId: string) => `/oauth/register/${encodeURIComponent(apiKeyId)}`;

/**
 * Open Dynamic Client Registration (RFC 7591 §3) at `POST /oauth/register/{api_key_id}`, when the
 * project has turned it on (`open_registration`): no credentials; rate-limited per network and per
 * project; the client is third-party and expires when unused. A closed or unknown project gets the
 * same 403, so the endpoint does not tell which projects exist.
 */
export function registrationRoutes(deps: {
  clients: ClientsService;
  project: (apiKeyId: string) => Promise<Project | undefined>;
  ipLimit: (request: FastifyRequest) => Promise<void>;
  projectLimit: (project: Project) => Promise<{ allowed: boolean; retryAfter: number }>;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/oauth/register/:api_key_id',
      {
        schema: {
          operationId: 'registerClientOpenly',
          summary:
            'Dynamic Client Registration (RFC 7591), when the project allows it: a third-party client that expires when unused',
          tags: ['clients'],
          params: Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 100 }) }),
          body: ClientMetadataBody,
          response: { 201: ClientInformationSchema },
        },
        attachValidation: true,
        preHandler: deps.ipLimit,
      },
      async (request, reply) => {
        const project = await deps.project(request.params.api_key_id);
        if (project?.oauth_dcr !== 1) throw registrationClosed();
        const limit = await deps.projectLimit(project);
        if (!limit.allowed)
          throw new OAuthError(
            429,
            'temporarily_unavailable',
            'this project receives too many registrations; try again later',
            { 'retry-after': String(limit.retryAfter) },
          );
        const body = request.body as ClientMetadataInput;
        if (!isMetadataObject(body))
          throw new OAuthError(
            400,
            'invalid_client_metadata',
            'body: a JSON object of client metadata is required',
          );
        return reply
          .code(201)
          .header('cache-control', 'no-store')
          .send(await deps.clients.registerOpen(project, body));
      },
    );
  };
}
