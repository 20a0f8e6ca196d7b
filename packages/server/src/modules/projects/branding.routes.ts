import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from '@sinclair/typebox';
import { ErrorCodes } from '@tessera/core';
import type { onRequestAsyncHookHandler } from 'fastify';
import { TesseraError } from '../../errors.js';
import { EVERY_COUNTRY, phoneNumbers } from '../otp/sms-countries.js';
import type { ProjectBranding } from './branding.js';
import type { Project } from './project.js';
import type { ProjectsService } from './projects.service.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Color = Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: '#rrggbb' });
/**
 * The branding an integrator or operator sets. Other members pass the schema so that the service's
 * refusal can name them (the schema's own says only "additional properties").
 */
export const BrandingBody = Type.Object(
  {
    display_name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
    logo_url: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048 }))),
    primary_color: Type.Optional(Nullable(Color)),
    primary_color_dark: Type.Optional(Nullable(Color)),
  },
  { additionalProperties: true, maxProperties: 20 },
);
/** A project's branding as stored (parseBranding keeps only these members). */
export const Branding = Type.Object({
  display_name: Type.Optional(Type.String()),
  logo_url: Type.Optional(Type.String()),
  primary_color: Type.Optional(Type.String()),
  primary_color_dark: Type.Optional(Type.String()),
});
const SignInBranding = Type.Object({
  name: Type.String({ description: 'The display name, else the project’s name' }),
  logo_url: Nullable(Type.String()),
  primary_color: Nullable(Type.String()),
  primary_color_dark: Nullable(Type.String()),
  device_requires_pin: Type.Boolean(),
  passkeys: Type.Boolean({ description: 'Whether the project has a relying-party id (passkeys can work)' }),
  sms_countries: Type.Array(Type.Object({ country: Type.String(), calling_code: Type.String() }), {
    description: 'Where SMS codes may go, with calling codes; empty: e-mail only',
  }),
});
const tags = ['branding'];

/** Where a project's SMS codes may go, as the UI offers them. */
export interface SmsReach {
  /** Whether this server can send SMS at all (a provider, or development delivery). */
  enabled: boolean;
  /** TESSERA_SMS_COUNTRIES: the countries of projects that set none. */
  defaults: readonly string[];
}

let everyCountry: ReadonlyArray<{ country: string; calling_code: string }> | undefined;
/** Every country with its calling code, computed once (about 245 entries). */
const allCountries = () => {
  everyCountry ??= phoneNumbers().getCountries().map(withCallingCode);
  return everyCountry;
};
const withCallingCode = (country: string) => ({
  country,
  calling_code: phoneNumbers().getCountryCallingCode(country as never) as string,
});

/** What the sign-in UI reads about a project: public by design (it shows on any sign-in page). */
export function signInBranding(project: Project, sms: SmsReach) {
  const branding: ProjectBranding = project.branding ?? {};
  const allowed = sms.enabled ? (project.sms_countries ?? sms.defaults) : [];
  const countries = allowed.includes(EVERY_COUNTRY) ? allCountries() : allowed.map(withCallingCode);
  return {
    name: branding.display_name ?? project.name,
    logo_url: branding.logo_url ?? null,
    primary_color: branding.primary_color ?? null,
    primary_color_dark: branding.primary_color_dark ?? null,
    device_requires_pin: project.device_requires_pin === 1,
    passkeys: project.rp_id !== null,
    sms_countries: [...countries],
  };
}

/**
 * `GET /v1/projects/{api_key_id}/branding`: the sign-in UI's branding and options, for any origin
 * (the element calls it with the API key id, which is public). Cached by browsers and proxies for
 * five minutes, counted per client address like the other unauthenticated routes.
 */
export function brandingPublicRoutes(deps: {
  projects: ProjectsService;
  sms: SmsReach;
  ipLimit: onRequestAsyncHookHandler;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/projects/:api_key_id/branding',
      {
        onRequest: deps.ipLimit,
        schema: {
          operationId: 'getSignInBranding',
          summary: 'A project’s sign-in branding and options (public, cacheable)',
          tags,
          params: Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 100 }) }),
          response: { 200: SignInBranding },
        },
      },
      async (request, reply) => {
        const project = await deps.projects.byApiKeyId(request.params.api_key_id);
        if (!project) throw new TesseraError(404, ErrorCodes.unknownApiKey, 'no project has this API key id');
        return reply
          .header('cache-control', 'public, max-age=300, stale-while-revalidate=60')
          .send(signInBranding(project, deps.sms));
      },
    );
  };
}

/** `GET|PUT /v1/project/branding`: the integrator reads and sets its project's branding (HTTP Basic). */
export function brandingIntegratorRoutes({
  projects,
}: {
  projects: ProjectsService;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/project/branding',
      {
        schema: {
          operationId: 'getProjectBranding',
          summary: 'The project’s sign-in branding',
          tags,
          response: { 200: Branding },
        },
      },
      async (request) => request.project.branding ?? {},
    );
    app.put(
      '/v1/project/branding',
      {
        schema: {
          operationId: 'setProjectBranding',
          summary: 'Replace the project’s sign-in branding ({} removes it)',
          tags,
          body: BrandingBody,
          response: { 200: Branding },
        },
      },
      async (request) => {
        const updated = await projects.update(request.project.api_key_id, { branding: request.body });
        request.log.info({ api_key_id: updated.api_key_id }, 'project branding set by integrator');
        return updated.branding ?? {};
      },
    );
  };
}
