/** Authentication methods as named in the token bundle (`auth_method`). */
export type AuthMethod = 'OTP' | 'TRUSTED DEVICE' | 'PIN' | 'BIOMETRIC';

/** Authentication methods as named in the access token claim (`authentication_method`). */
export type AuthMethodClaim = 'OTP' | 'TRUSTED_DEVICE' | 'PIN' | 'BIOMETRIC';

/** The bundle's method name → the claim's method name (space becomes underscore). */
export function authMethodClaim(method: AuthMethod): AuthMethodClaim {
  return method.replace(' ', '_') as AuthMethodClaim;
}

/** The token bundle returned after authentication (`oauth_token`) and by every refresh. */
export interface OAuthTokenBundle {
  access_token: string;
  id_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: 'Bearer';
  auth_method: AuthMethod;
}

/** Claims every Tessera access token carries, before the integrator's custom claims. */
export interface AccessTokenClaims {
  sub: string;
  client_user_id: string;
  authentication_method: AuthMethodClaim;
  type: 'access_token';
  identifier: string;
  scope: 'access';
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  iss: string;
  sid: string;
  [custom: string]: unknown;
}

/** Claims of a Tessera ID token. `auth_time` is a string of digits unless the project asks for a number. */
export interface IdTokenClaims {
  sub: string;
  client_user_id: string;
  auth_time: string | number;
  identifier: string;
  type: 'id_token';
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  iss: string;
}

/** Header `typ` of access tokens (RFC 9068) and of ID tokens. */
export const ACCESS_TOKEN_TYP = 'at+jwt';
export const ID_TOKEN_TYP = 'JWT';

/**
 * Claim names custom claims may not use: only those whose meaning a custom value would break —
 * the specification's claims, the JWT registered claims, the members of an RFC 9068 access
 * token and of the RFC 7662 introspection answer, the OpenID Connect claims Tessera emits or that
 * bind an ID token, and claims a resource server acts on (proof of possession, delegation,
 * security events). Authorization data such as `roles`, `groups`, `permissions` or
 * `entitlements` (RFC 9068 §2.2.3.1) is the integrator's to set.
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  // the specification's claims (access and ID token)
  'sub',
  'client_user_id',
  'authentication_method',
  'type',
  'identifier',
  'scope',
  'aud',
  'exp',
  'iat',
  'jti',
  'iss',
  'sid',
  'auth_time',
  // RFC 7519 registered claims not listed above
  'nbf',
  // RFC 9068 access tokens: client and authentication information
  'client_id',
  // the project of a resource-bound access token (RFC 8707 `aud` is the resource): a resource
  // server checks it, so no project may set it to another's
  'api_key_id',
  'acr',
  'amr',
  // RFC 7662 introspection answer members not listed above
  'active',
  'token_type',
  'username',
  // OpenID Connect: ID token binding, and the identity userinfo asserts (verified by Tessera)
  'nonce',
  'azp',
  'at_hash',
  'c_hash',
  's_hash',
  'sub_jwk',
  'email',
  'email_verified',
  'phone_number',
  'phone_number_verified',
  // acted on by resource servers: RFC 7800 proof of possession, RFC 8693 delegation, RFC 8417 events
  'cnf',
  'act',
  'may_act',
  'events',
]);
