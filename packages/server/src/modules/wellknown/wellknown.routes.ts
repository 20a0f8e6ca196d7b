import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from '@sinclair/typebox';
import { ErrorCodes } from '@tessera/core';
import { TesseraError } from '../../errors.js';
import type { KeyStore } from '../../keys/key-store.js';

const CLAIMS_SUPPORTED = [
  'sub',
  'client_user_id',
  'identifier',
  'authentication_method',
  'auth_time',
  'type',
  'scope',
  'sid',
  'aud',
  'exp',
  'iat',
  'jti',
  'iss',
  'nonce',
  'azp',
  'amr',
  'client_id',
  'email',
  'email_verified',
  'phone_number',
  'phone_number_verified',
];

/**
 * RFC 8414 authorization server metadata: exactly what works. The authorization code grant with
 * PKCE S256 for registered OAuth clients (issue 31), the refresh grant for them and for apps on
 * the API key; RFC 9207's `iss` on every authorization response.
 */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    end_session_endpoint: `${issuer}/oauth/logout`,
    verify_endpoint: `${issuer}/verify`,
    scopes_supported: ['openid', 'profile', 'email', 'phone', 'offline_access'],
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
    authorization_response_iss_parameter_supported: true,
    prompt_values_supported: ['none', 'login', 'consent'],
    ui_locales_supported: ['en', 'fr', 'de'],
    service_documentation: `${issuer}/docs`,
  };
}

/**
 * What a project adds to the metadata: its open registration endpoint, and its Client ID Metadata
 * Document support with its own endpoints, when it has turned them on.
 */
export interface ProjectMetadata {
  readonly api_key_id: string;
  readonly oauth_dcr: number;
  readonly oauth_cimd: number;
}

/**
 * A project's authorization server URL, `{issuer}/projects/{api_key_id}`: what a resource server
 * of the project names in its Protected Resource Metadata (RFC 9728) so that a client with no
 * prior configuration (an MCP client) finds the project's registration endpoint in the metadata
 * at the path-inserted URL (RFC 8414 §3.1). The documents there name the service's issuer — the
 * `iss` of its tokens and of its authorization responses (RFC 9207) — not this URL.
 */
export const projectServerUrl = (issuer: string, apiKeyId: string) =>
  `${issuer}/projects/${encodeURIComponent(apiKeyId)}`;

function projectMembers(issuer: string, project: ProjectMetadata) {
  const id = encodeURIComponent(project.api_key_id);
  return {
    ...(project.oauth_dcr === 1 ? { registration_endpoint: `${issuer}/oauth/register/${id}` } : {}),
    // A client id that is a URL names no project: the project's own endpoints say which it is.
    ...(project.oauth_cimd === 1
      ? {
          authorization_endpoint: `${issuer}/oauth/authorize/${id}`,
          token_endpoint: `${issuer}/oauth/token/${id}`,
          revocation_endpoint: `${issuer}/oauth/revoke/${id}`,
          client_id_metadata_document_supported: true,
        }
      : {}),
  };
}

/** OpenID Provider metadata (OpenID Connect Discovery 1.0 §3). */
export function openIdConfiguration(issuer: string) {
  return {
    ...authorizationServerMetadata(issuer),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  };
}

const Metadata = Type.Object(
  {
    issuer: Type.String(),
    token_endpoint: Type.String(),
    jwks_uri: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
  },
  { additionalProperties: true },
);
const Jwks = Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true })) });
/** The routes send prepared JSON strings (not serialised by the schema): typed as such. */
const prepared = <T extends TSchema>(schema: T) => Type.Unsafe<string>(schema);
const tags = ['discovery'];

/** JWKS and server metadata, so any JWT or OAuth library can verify Tessera's tokens. */
export function wellKnownRoutes({
  issuer,
  keys,
  project,
}: {
  issuer: string;
  keys: KeyStore;
  /** The project of an API key id, for the per-project documents. */
  project: (apiKeyId: string) => Promise<ProjectMetadata | undefined>;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Sent as prepared strings: the documents never change while the process runs.
    const oidc = JSON.stringify(openIdConfiguration(issuer));
    const oauth = JSON.stringify(authorizationServerMetadata(issuer));

    app.get(
      '/.well-known/jwks.json',
      {
        schema: {
          operationId: 'getJwks',
          summary: 'The public keys that sign Tessera’s tokens (JWKS)',
          tags,
          response: { 200: prepared(Jwks) },
        },
      },
      async (_request, reply) =>
        reply
          .type('application/json')
          .header('cache-control', 'public, max-age=300, stale-while-revalidate=60')
          .send(keys.jwksJson()),
    );
    // The two metadata documents: the same shape, prepared once above.
    for (const [url, operationId, summary, body] of [
      [
        '/.well-known/openid-configuration',
        'getOpenIdConfiguration',
        'OpenID Provider metadata (OpenID Connect Discovery 1.0)',
        oidc,
      ],
      [
        '/.well-known/oauth-authorization-server',
        'getAuthorizationServerMetadata',
        'OAuth 2.0 authorization server metadata (RFC 8414)',
        oauth,
      ],
    ] as const) {
      // RFC 8414 §3.1: an issuer with a path has its metadata at the path-inserted URL as well.
      const issuerPath = new URL(issuer).pathname.replace(/\/$/, '');
      for (const at of issuerPath ? [url, `${url}${issuerPath}`] : [url])
        app.get(
          at,
          {
            schema: {
              operationId: at === url ? operationId : `${operationId}PathInserted`,
              summary,
              tags,
              response: { 200: prepared(Metadata) },
            },
          },
          async (_request, reply) =>
            reply.type('application/json').header('cache-control', 'public, max-age=3600').send(body),
        );
      // A project's own documents (projectServerUrl): the same, with its registration endpoint.
      const document = url.endsWith('openid-configuration')
        ? openIdConfiguration
        : authorizationServerMetadata;
      app.get(
        `${url}${issuerPath}/projects/:api_key_id`,
        {
          schema: {
            operationId: `${operationId}OfProject`,
            summary: `${summary}, of a project (its registration endpoint when open; its own endpoints and client_id_metadata_document_supported when it accepts Client ID Metadata Documents)`,
            tags,
            params: Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 100 }) }),
            response: { 200: Metadata },
          },
        },
        async (request, reply) => {
          const found = await project(request.params.api_key_id);
          if (!found) throw new TesseraError(404, ErrorCodes.unknownApiKey, 'no project has this API key id');
          return reply
            .header('cache-control', 'public, max-age=60')
            .send({ ...document(issuer), ...projectMembers(issuer, found) });
        },
      );
    }
  };
}
