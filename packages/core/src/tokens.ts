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
 * Every claim name the service sets itself, plus registered JWT and OpenID Connect names.
 * Custom claims may not use any of them.
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  // the specification's claims
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
  // RFC 7519 and RFC 9068
  'nbf',
  'client_id',
  'cnf',
  'act',
  'may_act',
  'roles',
  'groups',
  'entitlements',
  // OpenID Connect core
  'nonce',
  'acr',
  'amr',
  'azp',
  'at_hash',
  'c_hash',
  's_hash',
  'sub_jwk',
  'auth_method',
  'typ',
  'alg',
  'kid',
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'email',
  'email_verified',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'phone_number',
  'phone_number_verified',
  'address',
  'updated_at',
  'events',
  'txn',
]);
