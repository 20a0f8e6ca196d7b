import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from '@sinclair/typebox';
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
];

/**
 * RFC 8414 authorization server metadata. Tessera has no redirect flows: its only grant is the
 * refresh grant, so there is no authorization endpoint (RFC 8414 §2 makes it optional then) and
 * no response type is supported (an empty list, which is true).
 */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    token_endpoint: `${issuer}/oauth/token`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    verify_endpoint: `${issuer}/verify`,
    grant_types_supported: ['refresh_token'],
    response_types_supported: [] as string[],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
    service_documentation: `${issuer}/docs`,
  };
}

/**
 * OpenID Provider metadata. OpenID Connect Discovery §3 requires authorization_endpoint and
 * response_types_supported, and strict clients check for them: the endpoint named is real
 * (`GET /oauth/authorize`) and refuses every request with `unsupported_response_type`, and the
 * list of response types is empty: what Tessera does, in the shape the specification asks for.
 */
export function openIdConfiguration(issuer: string) {
  return {
    ...authorizationServerMetadata(issuer),
    authorization_endpoint: `${issuer}/oauth/authorize`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
    claims_supported: CLAIMS_SUPPORTED,
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
}: {
  issuer: string;
  keys: KeyStore;
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
      app.get(
        url,
        { schema: { operationId, summary, tags, response: { 200: prepared(Metadata) } } },
        async (_request, reply) =>
          reply.type('application/json').header('cache-control', 'public, max-age=3600').send(body),
      );
    }
  };
}
