import type { OAuthClientTable } from '../../db/schema.js';

/** How a client authenticates at the token endpoint (RFC 7591 §2). */
export type TokenEndpointAuthMethod = OAuthClientTable['token_endpoint_auth_method'];

/** The scopes a client may be allowed (OpenID Connect Core §5.4, and offline_access §11). */
export const SUPPORTED_SCOPES = ['openid', 'profile', 'email', 'phone', 'offline_access'] as const;
export const SUPPORTED_GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

/** An OAuth client of a project as the services see it: its JSON columns parsed, by the repository. */
export interface OAuthClient {
  readonly id: string;
  readonly project_id: string;
  readonly client_id: string;
  /** SHA-256 of a confidential client's secret; null for a public client. */
  readonly secret_hash: string | null;
  readonly token_endpoint_auth_method: TokenEndpointAuthMethod;
  readonly name: string;
  readonly logo_uri: string | null;
  readonly redirect_uris: readonly string[];
  readonly post_logout_redirect_uris: readonly string[];
  readonly grant_types: readonly string[];
  /** The scopes the client may ask for. */
  readonly scopes: readonly string[];
  /** First-party clients skip the consent screen. */
  readonly first_party: boolean;
  /** Registered through the project's open registration endpoint: third-party, expires when unused. */
  readonly dynamic: boolean;
  /** When it was last used (authorization or token request; kept to the day); null: never. */
  readonly last_used_at: number | null;
  readonly created_at: number;
  readonly updated_at: number;
}

/** A public client (SPA, native, CLI): no secret, PKCE its only proof. */
export const isPublic = (client: OAuthClient): boolean => client.token_endpoint_auth_method === 'none';

/** RFC 7591 §3.2.1 client information (RFC 7592 read): never the secret or its hash. */
export interface ClientInformation {
  client_id: string;
  client_name: string;
  logo_uri?: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: string[];
  response_types: string[];
  scope: string;
  first_party: boolean;
  client_id_issued_at: number;
  /** Only in the answer that created the client or reset its secret. */
  client_secret?: string;
  client_secret_expires_at?: number;
}

export function clientInformation(client: OAuthClient, secret?: string): ClientInformation {
  return {
    client_id: client.client_id,
    client_name: client.name,
    ...(client.logo_uri ? { logo_uri: client.logo_uri } : {}),
    redirect_uris: [...client.redirect_uris],
    post_logout_redirect_uris: [...client.post_logout_redirect_uris],
    token_endpoint_auth_method: client.token_endpoint_auth_method,
    grant_types: [...client.grant_types],
    response_types: ['code'],
    scope: client.scopes.join(' '),
    first_party: client.first_party,
    client_id_issued_at: Math.floor(client.created_at / 1000),
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
  };
}
