import { Type } from '@sinclair/typebox';

/** RFC 7591 §2 client metadata; each member is checked by the service, which names the field. */
export const ClientMetadataBody = Type.Object(
  {
    client_name: Type.Optional(
      Type.String({ description: 'Shown on the consent screen (1–100 characters)' }),
    ),
    redirect_uris: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Required. Exact match (RFC 9700); http only on loopback; private-use schemes with a period',
      }),
    ),
    post_logout_redirect_uris: Type.Optional(Type.Array(Type.String())),
    token_endpoint_auth_method: Type.Optional(
      Type.String({
        description: 'none (public, PKCE only), client_secret_basic (default) or client_secret_post',
      }),
    ),
    grant_types: Type.Optional(
      Type.Array(Type.String(), { description: 'authorization_code, refresh_token' }),
    ),
    response_types: Type.Optional(Type.Array(Type.String(), { description: 'only code' })),
    scope: Type.Optional(
      Type.String({ description: 'Allowed scopes among openid profile email phone offline_access' }),
    ),
    logo_uri: Type.Optional(
      Type.String({ description: 'An https URL of the logo shown on the consent screen' }),
    ),
    first_party: Type.Optional(Type.Boolean({ description: 'First-party clients skip the consent screen' })),
  },
  { additionalProperties: true },
);

/** RFC 7591 §3.2.1 client information. */
export const ClientInformationSchema = Type.Object({
  client_id: Type.String(),
  client_name: Type.String(),
  logo_uri: Type.Optional(Type.String()),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  scope: Type.String(),
  first_party: Type.Boolean(),
  client_id_issued_at: Type.Integer(),
  client_secret: Type.Optional(Type.String({ description: 'Confidential clients: shown once' })),
  client_secret_expires_at: Type.Optional(Type.Integer({ description: '0: never' })),
});

export const ClientParams = Type.Object({ client_id: Type.String({ minLength: 1, maxLength: 100 }) });
