import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { NoContent } from '../../http/openapi.js';
import type { AuditLog } from '../audit/audit.service.js';
import { MAX_TEMPLATES_BYTES } from '../otp/delivery/templates/validate.js';
import { Branding, BrandingBody } from '../projects/branding.routes.js';
import type { ProjectsService } from '../projects/projects.service.js';

const Origins = Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 100 });
const SmsCountries = Type.Array(
  Type.String({ pattern: '^(\\*|[A-Za-z]{2})$', description: 'ISO 3166-1 alpha-2 code, or * for all' }),
  { maxItems: 300 },
);
/** A lifetime in seconds; the service checks it against the server's, the longest allowed. */
const lifetime = (description: string) =>
  Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 365 * 86_400 }), Type.Null()], {
      description: `${description} in seconds, at most the server's (\`server\` in the project); null: the server's`,
    }),
  );
const Settings = {
  rp_id: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  numeric_auth_time: Type.Optional(Type.Boolean()),
  device_requires_pin: Type.Optional(Type.Boolean()),
  sms_countries: Type.Optional(
    Type.Union([SmsCountries, Type.Null()], {
      description: 'Countries SMS codes may go to ([]: none); null: the server’s TESSERA_SMS_COUNTRIES',
    }),
  ),
  access_token_ttl: lifetime('The access token lifetime'),
  id_token_ttl: lifetime('The ID token lifetime'),
  refresh_token_ttl: lifetime('The refresh token lifetime of new sessions'),
};
const CreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }), origins: Type.Optional(Origins), ...Settings },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    origins: Type.Optional(Origins),
    add_origins: Type.Optional(Origins),
    remove_origins: Type.Optional(Origins),
    /** Checked by the service (unknown placeholders, sizes), which names what is wrong. */
    message_templates: Type.Optional(
      Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
    ),
    /** Replaces the whole branding; null removes it. */
    branding: Type.Optional(Type.Union([BrandingBody, Type.Null()])),
    /** Open Dynamic Client Registration (RFC 7591); off by default. */
    open_registration: Type.Optional(Type.Boolean()),
    /** Client ID Metadata Documents (a client id that is an HTTPS URL); off by default. */
    client_id_metadata_documents: Type.Optional(Type.Boolean()),
    ...Settings,
  },
  { additionalProperties: false },
);
const Params = Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 100 }) });

const LocaleTemplates = Type.Object({
  email_subject: Type.Optional(Type.String()),
  email_text: Type.Optional(Type.String()),
  email_html: Type.Optional(Type.String()),
  sms_text: Type.Optional(Type.String()),
});
const MessageTemplates = Type.Object(
  {
    brand: Type.Optional(Type.String()),
    default_locale: Type.Optional(Type.String()),
    locales: Type.Record(Type.String(), LocaleTemplates),
  },
  { description: 'The project’s own OTP message texts (docs/OPERATIONS.md#message-templates)' },
);

const ProjectView = Type.Object({
  project_id: Type.String(),
  name: Type.String(),
  api_key_id: Type.String(),
  origins: Type.Array(Type.String()),
  rp_id: Type.Union([Type.String(), Type.Null()]),
  numeric_auth_time: Type.Boolean(),
  device_requires_pin: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  secret_rotated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  message_templates: Type.Union([MessageTemplates, Type.Null()]),
  branding: Type.Union([Branding, Type.Null()]),
  open_registration: Type.Boolean(),
  client_id_metadata_documents: Type.Boolean(),
  sms_countries: Type.Union([Type.Array(Type.String()), Type.Null()]),
  access_token_ttl: Type.Union([Type.Integer(), Type.Null()]),
  id_token_ttl: Type.Union([Type.Integer(), Type.Null()]),
  refresh_token_ttl: Type.Union([Type.Integer(), Type.Null()]),
  server: Type.Object(
    {
      sms_enabled: Type.Boolean(),
      sms_countries: Type.Array(Type.String()),
      access_token_ttl: Type.Integer(),
      id_token_ttl: Type.Integer(),
      refresh_token_ttl: Type.Integer(),
    },
    {
      description:
        'What the project follows where it sets nothing (its null members), and the longest token lifetimes it may set',
    },
  ),
});
const Credentials = Type.Object({ api_key_id: Type.String(), api_key_secret: Type.String() });
const tags = ['operator'];

/**
 * The operator API: projects managed over HTTP as with `tessera projects …`. The family
 * (src/http/operator.ts) authenticates every route with the operator token.
 */
export function operatorRoutes(deps: {
  projects: ProjectsService;
  audit: AuditLog;
}): FastifyPluginAsyncTypebox {
  const { projects, audit } = deps;
  return async (app) => {
    app.get(
      '/v1/operator/projects',
      {
        schema: {
          tags,
          operationId: 'listProjects',
          summary: 'List projects',
          response: { 200: Type.Object({ projects: Type.Array(ProjectView) }) },
        },
      },
      // A console member who is not an operator sees the projects they have a role in.
      async (request) => {
        const session = request.consoleSession;
        const all = await projects.list();
        return {
          projects: (session ? all.filter((project) => session.roles.has(project.id)) : all).map((project) =>
            projects.view(project),
          ),
        };
      },
    );

    app.post(
      '/v1/operator/projects',
      {
        schema: {
          tags,
          operationId: 'createProject',
          summary: 'Create a project (its API key secret is shown once)',
          body: CreateBody,
          response: { 201: Type.Composite([ProjectView, Type.Object({ api_key_secret: Type.String() })]) },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const created = await projects.create({
          name: body.name,
          origins: body.origins ?? [],
          rpId: body.rp_id,
          numericAuthTime: body.numeric_auth_time,
          deviceRequiresPin: body.device_requires_pin,
          smsCountries: body.sms_countries ?? undefined,
          accessTokenTtl: body.access_token_ttl ?? undefined,
          idTokenTtl: body.id_token_ttl ?? undefined,
          refreshTokenTtl: body.refresh_token_ttl ?? undefined,
        });
        const project = await projects.get(created.api_key_id);
        request.log.info(
          { api_key_id: project.api_key_id, name: project.name },
          'project created by operator',
        );
        return reply.code(201).send({ ...projects.view(project), api_key_secret: created.api_key_secret });
      },
    );

    app.get(
      '/v1/operator/projects/:api_key_id',
      {
        schema: {
          tags,
          operationId: 'getProject',
          summary: 'Show a project',
          params: Params,
          response: { 200: ProjectView },
        },
      },
      async (request) => projects.view(await projects.get(request.params.api_key_id)),
    );

    app.patch(
      '/v1/operator/projects/:api_key_id',
      {
        // Message templates (HTML e-mails) are larger than other bodies; parseMessageTemplates caps them.
        bodyLimit: MAX_TEMPLATES_BYTES + 64 * 1024,
        schema: {
          tags,
          operationId: 'updateProject',
          summary:
            'Change a project’s name, origins, relying-party id, policies, SMS countries, token lifetimes, message templates or branding',
          params: Params,
          body: UpdateBody,
          response: { 200: ProjectView },
        },
      },
      async (request) => {
        const body = request.body;
        const updated = await projects.update(request.params.api_key_id, {
          name: body.name,
          origins: body.origins,
          addOrigins: body.add_origins,
          removeOrigins: body.remove_origins,
          rpId: body.rp_id,
          numericAuthTime: body.numeric_auth_time,
          deviceRequiresPin: body.device_requires_pin,
          messageTemplates: body.message_templates,
          branding: body.branding,
          openRegistration: body.open_registration,
          clientIdMetadataDocuments: body.client_id_metadata_documents,
          smsCountries: body.sms_countries,
          accessTokenTtl: body.access_token_ttl,
          idTokenTtl: body.id_token_ttl,
          refreshTokenTtl: body.refresh_token_ttl,
        });
        request.log.info(
          { api_key_id: updated.api_key_id, fields: Object.keys(body) },
          'project updated by operator',
        );
        return projects.view(updated);
      },
    );

    app.delete(
      '/v1/operator/projects/:api_key_id',
      {
        schema: {
          tags,
          operationId: 'deleteProject',
          summary: 'Delete a project with its users, sessions, credentials, webhooks and audit events',
          params: Params,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        const { project, users } = await projects.delete(request.params.api_key_id);
        request.log.info(
          { api_key_id: project.api_key_id, name: project.name, users },
          'project deleted by operator',
        );
        return reply.code(204).send();
      },
    );

    app.post(
      '/v1/operator/projects/:api_key_id/rotate-secret',
      {
        schema: {
          tags,
          operationId: 'rotateProjectSecret',
          summary: 'Replace a project’s API key secret; the old one stops working at once',
          params: Params,
          response: { 200: Credentials },
        },
      },
      async (request) => {
        const rotated = await projects.rotateSecret(request.params.api_key_id);
        await audit.record({
          projectId: rotated.project_id,
          type: 'project.secret_rotated',
          data: { by: request.consoleActor ? 'console' : 'operator' },
        });
        request.log.info({ api_key_id: rotated.api_key_id }, 'project secret rotated by operator');
        return { api_key_id: rotated.api_key_id, api_key_secret: rotated.api_key_secret };
      },
    );
  };
}
