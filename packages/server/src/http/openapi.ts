import type { SwaggerOptions } from '@fastify/swagger';
import type { TArray, TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { OAuthErrorBody, Problem, SHARED_SCHEMAS, VerifyAnswer } from './schemas.js';

/**
 * How the OpenAPI 3.1 document (`GET /openapi.json`) is put together. @fastify/swagger builds it
 * from the route schemas: each route declares its operationId, summary, tags, security, body and
 * success responses; each family adds the error responses of its format (`documentErrors`) and,
 * where one credential covers the whole family, its security requirement (`documentSecurity`).
 */

/** Security schemes, by the names route schemas use in `security`. */
export const SecuritySchemes = {
  /** The project's public API key id, in the `API_KEY_ID` header (sign-in routes, /verify). */
  apiKey: { type: 'apiKey', in: 'header', name: 'API_KEY_ID' },
  /** `Authorization: Basic base64(api_key_id:api_key_secret)`: integrator API and OAuth clients. */
  basic: { type: 'http', scheme: 'basic' },
  /** The end user's access token (`Authorization: Bearer <JWT>`). */
  accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
  /** The operator token (TESSERA_OPERATOR_TOKEN). */
  operatorToken: { type: 'http', scheme: 'bearer', description: 'TESSERA_OPERATOR_TOKEN' },
  /** A console member's access token (issue 33): an access token of the console project. */
  consoleToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'An access token of the console project (docs/CONSOLE.md)',
  },
  /** The project a console call acts on (its API key id), with `consoleToken`. */
  consoleProject: { type: 'apiKey', in: 'header', name: 'Tessera-Project' },
  /** The metrics token (TESSERA_METRICS_TOKEN), when one is set. */
  metricsToken: { type: 'http', scheme: 'bearer', description: 'TESSERA_METRICS_TOKEN' },
} as const;

type SchemeName = keyof typeof SecuritySchemes;
/** A security requirement: any one of the listed alternatives. */
export const security = (...names: SchemeName[]) => names.map((name) => ({ [name]: [] }));

/** Tags, one per group of routes, in the order the docs page shows them. */
const TAGS = [
  { name: 'sign-in', description: 'Sign-in by OTP, trusted device, PIN or passkey (API_KEY_ID)' },
  { name: 'devices', description: 'The signed-in user’s trusted devices' },
  { name: 'pin', description: 'The signed-in user’s PIN' },
  { name: 'passkeys', description: 'The signed-in user’s passkeys' },
  { name: 'account', description: 'The signed-in user’s sessions' },
  { name: 'oauth', description: 'Refresh, revocation (RFC 7009), introspection (RFC 7662), userinfo' },
  { name: 'verify', description: 'Access token verification for apps without a backend' },
  { name: 'discovery', description: 'JWKS and server metadata' },
  { name: 'users', description: 'Integrator API: users, claims, sessions, credentials (HTTP Basic)' },
  { name: 'audit', description: 'Integrator API: security events (HTTP Basic)' },
  { name: 'webhooks', description: 'Integrator API: webhook endpoints (HTTP Basic)' },
  {
    name: 'branding',
    description: 'The sign-in UI’s branding: read by any page (public), set by the integrator (HTTP Basic)',
  },
  {
    name: 'clients',
    description:
      'Integrator API: OAuth clients in RFC 7591/7592 terms (HTTP Basic); the operator API has the same under a project',
  },
  { name: 'operator', description: 'Project management by the service operator' },
  { name: 'console', description: 'The console’s signed-in member (TESSERA_CONSOLE, docs/CONSOLE.md)' },
  { name: 'stats', description: 'Integrator API: sign-in, failure, OTP and reuse counts over time' },
  { name: 'operations', description: 'Health probes, metrics, this document' },
  { name: 'development', description: 'Development only (TESSERA_DELIVERY=dev): never in production' },
];

export function swaggerOptions(issuer: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tessera',
        version: '0.1.0',
        description:
          'Authentication token service: passwordless sign-in (OTP, trusted device, PIN, passkeys), ' +
          'ES256 access and ID tokens, refresh-token rotation. No redirect flows. ' +
          'Errors are RFC 9457 problem documents with a stable `code`, or RFC 6749 errors on /oauth/*.',
      },
      servers: [{ url: issuer }],
      tags: TAGS,
      components: { securitySchemes: SecuritySchemes },
    },
    // Shared schemas keep their $id as their component name.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  };
}

/** Adds the shared schemas once, on the root, before any route refers to them. */
export function registerSchemas(app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
}

const problem = {
  description: 'A problem document (RFC 9457) with a stable `code`',
  content: { 'application/problem+json': { schema: Type.Ref(Problem) } },
};
const oauthError = {
  description: 'An RFC 6749 error (`Cache-Control: no-store`)',
  content: { 'application/json': { schema: Type.Ref(OAuthErrorBody) } },
};
const verifyError = {
  description: 'A malformed request: `{success: false, reason}`',
  content: { 'application/json': { schema: Type.Ref(VerifyAnswer) } },
};

/** The error responses of each format, as response schema entries. */
const ERRORS: Record<ErrorFormat, Record<string, unknown>> = {
  problem: { '4xx': problem, '5xx': problem },
  oauth: { '4xx': oauthError, '5xx': oauthError },
  verify: { '4xx': verifyError, '5xx': verifyError },
};
export type ErrorFormat = 'problem' | 'oauth' | 'verify';

/** The schema of a route, filled in by `patch` (for the family-level onRoute hooks). */
function amend(route: RouteOptions, patch: (schema: Record<string, unknown>) => void): void {
  if (route.method === 'OPTIONS' || route.method === 'HEAD' || route.schema?.hide) return;
  const schema = { ...(route.schema ?? {}) } as Record<string, unknown>;
  patch(schema);
  route.schema = schema;
}

/**
 * An onRoute hook for a family: its routes document (and serialise) their 4xx and 5xx answers in
 * the family's error format, unless a route declares its own.
 */
export function documentErrors(format: ErrorFormat) {
  return (route: RouteOptions): void =>
    amend(route, (schema) => {
      schema.response = { ...ERRORS[format], ...(schema.response as object | undefined) };
    });
}

/** An onRoute hook for a family whose every route takes the same credential. */
export function documentSecurity(...names: SchemeName[]) {
  return (route: RouteOptions): void =>
    amend(route, (schema) => {
      schema.security ??= security(...names);
    });
}

/**
 * `documentSecurity` for a family that also takes a console access token (issue 33): `name`, or
 * the console token (with the `Tessera-Project` header when `withProject`).
 */
export function documentSecurityOrConsole(name: SchemeName, withProject: boolean) {
  return (route: RouteOptions): void =>
    amend(route, (schema) => {
      schema.security ??= [
        { [name]: [] },
        withProject ? { consoleToken: [], consoleProject: [] } : { consoleToken: [] },
      ];
    });
}

/**
 * An onRoute hook that documents routes of a module from its family's file, by URL: for the
 * health probes, whose module others own. The route's own schema, if any, wins.
 */
export function describeRoutes(docs: Record<string, Record<string, unknown>>) {
  return (route: RouteOptions): void => {
    const doc = docs[route.url];
    if (!doc) return;
    amend(route, (schema) =>
      Object.assign(schema, {
        ...doc,
        ...schema,
        response: { ...(doc.response as object), ...(schema.response as object | undefined) },
      }),
    );
  };
}

/** Request bodies /oauth/* accept: forms (RFC 6749) and JSON. */
export const OAUTH_CONSUMES = ['application/x-www-form-urlencoded', 'application/json'];

/** A response with no body. */
export const NoContent = Type.Unsafe<undefined>({ type: 'null', description: 'No content' });

/** A `{ <name>: T[] }` list answer. */
export const ListOf = <K extends string, T extends TSchema>(name: K, item: T) =>
  Type.Object({ [name]: Type.Array(item) } as { [key in K]: TArray<T> });
