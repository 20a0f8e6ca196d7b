import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { KeyStore } from '../../keys/key-store.js';

/** JWKS and OpenID Provider metadata, so any JWT library can verify Tessera's tokens. */
export function wellKnownRoutes({
  issuer,
  keys,
}: {
  issuer: string;
  keys: KeyStore;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    const discovery = JSON.stringify({
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      introspection_endpoint: `${issuer}/oauth/introspect`,
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      verify_endpoint: `${issuer}/verify`,
      grant_types_supported: ['refresh_token'],
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
      claims_supported: [
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
      ],
    });

    app.get('/.well-known/jwks.json', async (_request, reply) =>
      reply
        .type('application/json')
        .header('cache-control', 'public, max-age=300, stale-while-revalidate=60')
        .send(keys.jwksJson()),
    );
    app.get('/.well-known/openid-configuration', async (_request, reply) =>
      reply.type('application/json').header('cache-control', 'public, max-age=3600').send(discovery),
    );
  };
}
