import { TesseraVerifyError } from './errors.js';

/**
 * How the user signed in, as named in the access token claim `authentication_method` (note the
 * underscore in `TRUSTED_DEVICE`; the token bundle's `auth_method` spells it with a space).
 *
 * @example
 * ```ts
 * import type { AuthenticationMethod } from '@tessera/verify';
 *
 * const strong: AuthenticationMethod[] = ['PIN', 'BIOMETRIC'];
 * if (!strong.includes(claims.authentication_method)) throw new Error('step-up required');
 * ```
 */
export type AuthenticationMethod = 'OTP' | 'TRUSTED_DEVICE' | 'PIN' | 'BIOMETRIC';

/**
 * The claims of a verified Tessera access token, followed by the custom claims your project adds.
 *
 * @example
 * ```ts
 * import type { AccessTokenClaims } from '@tessera/verify';
 *
 * function userIdOf(claims: AccessTokenClaims): string {
 *   return claims.client_user_id;
 * }
 * ```
 */
export interface AccessTokenClaims {
  /** Tessera's id of the user. */
  sub: string;
  /** Your id of the user; equals `sub` unless you set your own. */
  client_user_id: string;
  authentication_method: AuthenticationMethod;
  type: 'access_token';
  /** E-mail address or E.164 phone number the user signed in with. */
  identifier: string;
  scope: string;
  /** Your API key id; or, for a token asked for a resource (RFC 8707), that resource's URL. */
  aud: string;
  /** The OAuth client the token was issued to (authorization code flow). */
  client_id?: string;
  /** Your API key id, in a token bound to a resource (whose `aud` is the resource). */
  api_key_id?: string;
  /** Expiry, Unix seconds. */
  exp: number;
  /** Issued at, Unix seconds. */
  iat: number;
  /** Unique id of this token. */
  jti: string;
  /** The Tessera issuer URL. */
  iss: string;
  /** The session; revoking it revokes every token of it. */
  sid: string;
  /** Custom claims set by your project. */
  [custom: string]: unknown;
}

/**
 * Checks what jose's claim-set validation does not: the Tessera-specific `type` claim and the
 * types of the identifiers we promise as strings.
 */
// The payload is typed here, not as jose's JWTPayload: a CommonJS declaration file cannot import
// types from jose (ESM only) without resolution-mode, which TypeScript before 5.3 refuses.
export function assertAccessTokenClaims(payload: {
  readonly [claim: string]: unknown;
}): asserts payload is AccessTokenClaims {
  if (payload['type'] !== 'access_token') {
    throw new TesseraVerifyError('invalid_token', 'The token is not an access token');
  }
  for (const claim of ['sub', 'sid', 'jti', 'aud'] as const) {
    const value = payload[claim];
    if (typeof value !== 'string' || value === '') {
      throw new TesseraVerifyError(
        'invalid_token',
        `The token's "${claim}" claim must be a non-empty string`,
      );
    }
  }
}
